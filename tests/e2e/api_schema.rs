//! The API against its own OpenAPI document: schemathesis (from PyPI,
//! installed once into `target/lang/schemathesis-venv`, pinned) generates
//! requests from `/openapi.json` of a real `wload serve` on 127.0.0.1 and
//! checks that no answer is a 5xx and that every status, content type and
//! body is one the document lists. A hand-written test covers the cases
//! its author thought of; this covers the document itself, so a route, a
//! status or a field that drifts from it fails here.
//!
//! The tenant's quotas bound what the generated `POST /v1/runs` may start
//! (2 VUs, 2 runs at once, 50 requests per second) and its egress policy
//! allows only the loopback target server of this test. The admin pass
//! comes last: it changes tenants, and the runs' tenant must not change
//! under the tenant pass. Both passes are bounded in examples and time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::service::Service;
use crate::support::{guest, repo_root, run, scratch, server};

/// The schemathesis release this test is written against.
const SCHEMATHESIS: &str = "schemathesis==4.32.5";

/// The checks every answer must pass.
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
                      response_schema_conformance,unsupported_method";

/// `schemathesis` in its venv under `target/lang/`, installed when the
/// pinned version is not the one there already.
fn schemathesis() -> PathBuf {
    let venv = repo_root().join("target/lang/schemathesis-venv");
    let bin = venv.join("bin/schemathesis");
    let marker = venv.join(".wload-pin");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(SCHEMATHESIS) && bin.exists() {
        return bin;
    }
    let _ = std::fs::remove_dir_all(&venv);
    let mut mk = Command::new("python3");
    mk.args(["-m", "venv"]).arg(&venv);
    must(mk, "python3 -m venv");
    let mut pip = Command::new(venv.join("bin/python"));
    pip.args(["-m", "pip", "install", "--quiet", SCHEMATHESIS]);
    must(pip, &format!("pip install {SCHEMATHESIS}"));
    std::fs::write(&marker, SCHEMATHESIS).expect("mark the install");
    bin
}

/// Run `cmd` to completion; panic with its output when it fails.
fn must(mut cmd: Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e} (is python3 installed?)"));
    assert!(
        out.status.success(),
        "{what} failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One `schemathesis run` against the service with `token`, bounded in
/// examples per operation and in seconds (the fuzzing and stateful phases
/// go on until `max_secs` are spent); panics with its report when it
/// finds a failure.
fn schemathesis_run(
    service: &Service,
    dir: &Path,
    config: &str,
    token: &str,
    max_secs: u32,
    extra: &[&str],
) -> String {
    let config_file = dir.join("schemathesis.toml");
    std::fs::write(&config_file, config).expect("write the schemathesis config");
    let mut cmd = Command::new(schemathesis());
    cmd.current_dir(dir)
        .arg("--config-file")
        .arg(&config_file)
        .arg("run")
        .arg(format!("{}/openapi.json", service.url()))
        .args(["--header", &format!("Authorization: Bearer {token}")])
        .args(["--checks", CHECKS])
        .args(["--max-examples", "25", "--max-time", &max_secs.to_string()])
        .args(["--workers", "1", "--request-timeout", "5"])
        .args(["--generation-database", "none", "--no-color"])
        .args(extra);
    let out = run(cmd, Duration::from_secs(u64::from(max_secs) + 60));
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "schemathesis found failures (exit {:?}):\n{report}\nservice log:\n{}",
        out.status.code(),
        service.log()
    );
    report
}

#[test]
fn the_api_answers_as_its_openapi_document_says() {
    let target = server();
    let base = target.base_url();
    let service = Service::start("api-schema");
    let quotas = json!({
        "vusPerRun": 2, "concurrentRuns": 2, "durationPerRun": 40,
        "vuHoursPerPeriod": 0.5, "requestsPerSecond": 50
    });
    let allow = json!({ "allow": [base.trim_start_matches("http://")] });
    let (tenant, token) = service.tenant("schema", quotas, allow);
    let (other, _) = service.tenant("schema-admin", json!({}), json!({"allow": []}));
    // Ids that exist, so that generated requests reach the handlers, not
    // only their 404: a test to run and read, one to delete, a finished
    // run with its files, and a run waiting paused for a status change.
    let hello = service.upload(&token, &guest("hello"));
    let doomed = service.upload(&token, &guest("idle"));
    let (status, done) = service.start_run(
        &token,
        &hello,
        json!({"vus": 1, "duration": "1s"}),
        json!({"BASE_URL": base}),
    );
    assert_eq!(status, 201, "{done}");
    let done = done["id"].as_str().expect("run id").to_owned();
    let record = service.wait_run(&token, &done, Duration::from_secs(60));
    assert_eq!(record["status"], "finished", "{record}");
    let body = json!({"test": hello, "options": {"vus": 1, "duration": "1s"},
                      "env": {"BASE_URL": base}, "paused": true})
    .to_string();
    let (status, paused) = service.call("POST", "/v1/runs", Some(&token), Some(body.as_bytes()));
    assert_eq!(status, 201, "{paused}");
    let paused = paused["id"].as_str().expect("run id").to_owned();
    let seen_before = target.stats.requests();
    assert!(seen_before > 0, "the finished run sent nothing");

    let hooks = repo_root().join("tests/e2e/api_schema_hooks.py");
    let dir = scratch("api-schema-tenant");
    let config = format!(
        r#"hooks = "{hooks}"
max-stream-events = 4

[dictionaries.tests]
values = ["{hello}"]
[dictionaries.doomed]
values = ["{doomed}"]
[dictionaries.runs]
values = ["{done}", "{paused}"]

[[operations]]
include-path-regex = "^/v1/runs/"
parameters = {{ "path.id" = {{ dictionary = "runs", probability = 0.7 }} }}

[[operations]]
include-operation-id = "getTest"
parameters = {{ "path.id" = {{ dictionary = "tests", probability = 0.7 }} }}

[[operations]]
include-operation-id = "deleteTest"
parameters = {{ "path.id" = {{ dictionary = "doomed", probability = 0.7 }} }}

[[operations]]
include-operation-id = "startRun"
parameters = {{ "body.test" = {{ dictionary = "tests", probability = 0.7 }}, "body.env" = {{ BASE_URL = "{base}" }}, "body.options.duration" = "1s" }}
"#,
        hooks = hooks.display()
    );
    let report = schemathesis_run(&service, &dir, &config, &token, 60, &[]);
    eprintln!("{report}");

    let dir = scratch("api-schema-admin");
    let config = format!(
        r#"[dictionaries.tenants]
values = ["{other}", "{tenant}"]

[[operations]]
include-path-regex = "^/v1/tenants/"
parameters = {{ "path.id" = {{ dictionary = "tenants", probability = 0.7 }} }}
"#
    );
    let admin = service.admin.clone();
    let report = schemathesis_run(
        &service,
        &dir,
        &config,
        &admin,
        25,
        &["--include-path-regex", "^/v1/tenants"],
    );
    eprintln!("{report}");
}
