//! `wload k8s render` simulated here, with no cluster: the manifests are
//! validated against Kubernetes' schema (the official Python client's
//! models, from PyPI, in `target/lang/k8s-venv`, pinned), then each pod of
//! the rendered Job is run as a local process exactly as the manifests
//! say: the container's command, args and env, `JOB_COMPLETION_INDEX`
//! from the downward API, every volume a directory (the ConfigMap's keys
//! as files, the results claim one directory for every pod, an emptyDir
//! one per pod). The rendered collector runs too, started before the
//! shards as it is on a cluster, and `wload k8s collect` reads the pods'
//! logs: both merges must equal one process running the whole test
//! (tests/e2e/distributed.rs's comparison), N = 2 and 4, a closed-model
//! and an arrival-rate executor, against a target server on 127.0.0.1.
//!
//! The Dockerfile cannot be built here (no docker engine): what can be
//! checked is, that the binary needs no more than Debian bookworm-slim
//! has, and that the recipe's images and user agree with the manifests.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::distributed::{
    CLOSED_EXACT, LIMIT, Merge, assert_same_result, closed_one_process, merge_run, trend_stats,
};
use crate::support::*;

/// The Kubernetes Python client this test is written against.
const KUBERNETES: &str = "kubernetes==37.0.2";

/// `python` of the venv holding the Kubernetes client, installed when the
/// pinned version is not the one there already.
fn python() -> PathBuf {
    static VENV: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = VENV.lock().unwrap_or_else(|e| e.into_inner());
    let venv = repo_root().join("target/lang/k8s-venv");
    let bin = venv.join("bin/python");
    let marker = venv.join(".wload-pin");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(KUBERNETES) && bin.exists() {
        return bin;
    }
    let _ = std::fs::remove_dir_all(&venv);
    let mut mk = Command::new("python3");
    mk.args(["-m", "venv"]).arg(&venv);
    succeed(mk, "python3 -m venv");
    let mut pip = Command::new(&bin);
    pip.args(["-m", "pip", "install", "--quiet", KUBERNETES]);
    succeed(pip, &format!("pip install {KUBERNETES}"));
    std::fs::write(&marker, KUBERNETES).expect("mark the install");
    bin
}

/// Run `cmd` within the time limit; its stdout, or a panic with its output.
fn succeed(cmd: Command, what: &str) -> String {
    let out = run(cmd, LIMIT);
    assert!(
        out.status.success(),
        "{what} failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The schema check of a manifests file: `Ok(documents)` or the problems.
fn validate(file: &Path) -> Result<Vec<Value>, String> {
    // The documents go to a file: they hold the test, more than a pipe
    // holds while `run` waits for the process to end.
    let json = file.with_extension("json");
    let mut cmd = Command::new(python());
    cmd.arg(repo_root().join("tests/e2e/k8s_manifests.py"))
        .arg(file)
        .arg(&json);
    let out = run(cmd, LIMIT);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = std::fs::read_to_string(&json).expect("the validator's JSON");
    Ok(serde_json::from_str(&text).expect("the validator writes JSON"))
}

/// `wload k8s render` with `args`, into `dir/manifests.yaml`.
fn render(dir: &Path, args: &[String]) -> std::process::Output {
    let mut cmd = wload();
    cmd.args(["k8s", "render", "--output"])
        .arg(dir.join("manifests.yaml"))
        .args(args);
    run(cmd, LIMIT)
}

/// Render, check the output against the schema, return the documents.
fn render_valid(dir: &Path, args: &[String]) -> Vec<Value> {
    let out = render(dir, args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "render: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    validate(&dir.join("manifests.yaml"))
        .unwrap_or_else(|e| panic!("the manifests do not validate:\n{e}"))
}

fn doc<'a>(docs: &'a [Value], kind: &str, component: &str) -> &'a Value {
    docs.iter()
        .find(|d| {
            d["kind"] == kind && d["metadata"]["labels"]["app.kubernetes.io/component"] == component
        })
        .unwrap_or_else(|| panic!("no {kind} {component} in {docs:#?}"))
}

/// A pod of a rendered Job, run here: its volumes as directories.
struct Pod {
    child: Child,
    log: PathBuf,
}

/// Where a Job's pods see their volumes: `claims` (shared by every pod)
/// and emptyDirs (one per pod) under `dir`, a ConfigMap as its files.
fn volume_dirs(
    docs: &[Value],
    pod: &Value,
    dir: &Path,
    index: usize,
    claims: &Path,
) -> HashMap<String, PathBuf> {
    let mut out = HashMap::new();
    for v in pod["volumes"].as_array().expect("volumes") {
        let name = v["name"].as_str().expect("a volume's name").to_owned();
        let path = if let Some(claim) = v["persistentVolumeClaim"]["claimName"].as_str() {
            claims.join(claim)
        } else if v.get("emptyDir").is_some() {
            dir.join(format!("pod-{index}-{name}"))
        } else if let Some(cm) = v["configMap"]["name"].as_str() {
            let map = docs
                .iter()
                .find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == cm)
                .unwrap_or_else(|| panic!("the pods mount ConfigMap {cm}, not rendered"));
            // One copy for every pod, as every pod mounts the same
            // ConfigMap: the shards read the test at one path. Written
            // by the first pod's start, before any pod runs.
            let path = dir.join(format!("configmap-{cm}"));
            if !path.exists() {
                std::fs::create_dir_all(&path).unwrap();
                for (key, text) in map["data"].as_object().into_iter().flatten() {
                    std::fs::write(path.join(key), text.as_str().unwrap()).unwrap();
                }
                for (key, b64) in map["binaryData"].as_object().into_iter().flatten() {
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(b64.as_str().unwrap())
                        .unwrap();
                    std::fs::write(path.join(key), bytes).unwrap();
                }
            }
            path
        } else {
            panic!("a volume this simulation does not know: {v}")
        };
        std::fs::create_dir_all(&path).unwrap();
        out.insert(name, path);
    }
    out
}

/// Start pod `index` of `job` as a process: the container's command
/// (`wload`, the binary under test), args and env, its mount paths
/// replaced by the volumes' directories.
fn start_pod(docs: &[Value], job: &Value, dir: &Path, index: usize, claims: &Path) -> Pod {
    std::fs::create_dir_all(dir).unwrap();
    let pod = &job["spec"]["template"]["spec"];
    let volumes = volume_dirs(docs, pod, dir, index, claims);
    let container = &pod["containers"][0];
    let mounts: Vec<(String, PathBuf)> = container["volumeMounts"]
        .as_array()
        .expect("volumeMounts")
        .iter()
        .map(|m| {
            (
                m["mountPath"].as_str().unwrap().to_owned(),
                volumes[m["name"].as_str().unwrap()].clone(),
            )
        })
        .collect();
    let local = |s: &str| -> String {
        for (at, path) in &mounts {
            if let Some(rest) = s.strip_prefix(at.as_str())
                && (rest.is_empty() || rest.starts_with('/'))
            {
                return format!("{}{rest}", path.display());
            }
        }
        s.to_owned()
    };
    assert_eq!(container["command"], json!(["wload"]));
    let mut cmd = wload();
    for arg in container["args"].as_array().expect("args") {
        cmd.arg(local(arg.as_str().expect("args are strings")));
    }
    let annotation = "metadata.annotations['batch.kubernetes.io/job-completion-index']";
    for var in container["env"].as_array().into_iter().flatten() {
        let name = var["name"].as_str().unwrap();
        let value = match (&var["value"], &var["valueFrom"]["fieldRef"]["fieldPath"]) {
            (Value::String(v), _) => local(v),
            // The downward API: the Job controller's annotation.
            (_, Value::String(path)) if path == annotation => index.to_string(),
            other => panic!("an env var this simulation does not know: {other:?}"),
        };
        cmd.env(name, value);
    }
    let cwd = local(container["workingDir"].as_str().expect("workingDir"));
    std::fs::create_dir_all(&cwd).unwrap();
    let log = dir.join(format!("pod-{index}.log"));
    let err = dir.join(format!("pod-{index}.err"));
    cmd.current_dir(&cwd)
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    Pod {
        child: cmd.spawn().expect("start a pod's wload"),
        log,
    }
}

/// Wait for a pod's process; its exit code and stderr.
fn finish(mut pod: Pod) -> (Option<i32>, String, PathBuf) {
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = pod.child.try_wait().expect("wait for a pod") {
            let err = std::fs::read_to_string(pod.log.with_extension("err")).unwrap_or_default();
            return (status.code(), err, pod.log);
        }
        if started.elapsed() > LIMIT {
            let _ = pod.child.kill();
            let _ = pod.child.wait();
            panic!("a pod did not finish within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `wload k8s collect` of saved pod logs.
fn collect_logs(name: &str, logs: &[PathBuf]) -> Merge {
    let export = scratch(name).join("merged.json");
    let mut cmd = wload();
    cmd.args(["k8s", "collect"])
        .args(logs)
        .arg("--summary-export")
        .arg(&export);
    merge_run(cmd, &export)
}

/// A unix time `secs` ahead, for `--start-at`: far enough for every
/// process to compile the test (each pod has its own empty cache) and
/// start its VUs on two shared cores.
fn start_at(secs: u64) -> String {
    let at = SystemTime::now() + Duration::from_secs(secs);
    format!(
        "{:.3}",
        at.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
    )
}

/// Render `options` for `n` shards with a results claim, run the
/// collector and the pods, and check both merges against `one`.
fn simulate(
    name: &str,
    options: &Value,
    one: &Value,
    n: usize,
    base_url: &str,
    exact: &[(&str, &str)],
) {
    let dir = scratch(name);
    let config = dir.join("options.json");
    std::fs::write(&config, options.to_string()).unwrap();
    let args: Vec<String> = [
        "--parallelism",
        &n.to_string(),
        "--results-claim",
        "shared-results",
        "--name",
        name,
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([guest("hello").display().to_string()])
    .chain(
        [
            "--config",
            &config.display().to_string(),
            "-e",
            &format!("BASE_URL={base_url}"),
            "--start-at",
            &start_at(8),
            "--quiet",
        ]
        .iter()
        .map(|s| s.to_string()),
    )
    .collect();
    let docs = render_valid(&dir, &args);
    assert_eq!(docs.len(), 3, "ConfigMap, shards' Job, collector Job");
    let job = doc(&docs, "Job", "shards");
    assert_eq!(job["spec"]["completionMode"], "Indexed");
    assert_eq!(job["spec"]["completions"], json!(n));
    assert_eq!(job["spec"]["parallelism"], json!(n));
    let claims = dir.join("claims");
    // The collector first: on a cluster it starts with the shards and
    // waits for their summaries.
    let collector = start_pod(
        &docs,
        doc(&docs, "Job", "collect"),
        &dir.join("collector"),
        0,
        &claims,
    );
    let pods: Vec<Pod> = (0..n)
        .map(|i| start_pod(&docs, job, &dir, i, &claims))
        .collect();
    let mut logs = Vec::new();
    for (i, pod) in pods.into_iter().enumerate() {
        let (code, stderr, log) = finish(pod);
        // Every shard fails a total's threshold on its share: that is
        // recorded in its summary, and the pod still succeeds.
        assert_eq!(code, Some(0), "pod {i}: {stderr}");
        assert!(
            stderr.contains("exited 99 on its share"),
            "pod {i}: {stderr}"
        );
        logs.push(log);
    }
    let (code, stderr, log) = finish(collector);
    let stdout = std::fs::read_to_string(&log).unwrap();
    assert_eq!(code, Some(0), "collector: {stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("merged {n} shard summaries (the whole test)")),
        "{stdout}"
    );
    assert!(!stdout.contains("name different tests"), "{stdout}");
    let export_arg =
        doc(&docs, "Job", "collect")["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned();
    let export = claims
        .join("shared-results")
        .join(export_arg.trim_start_matches("/results/"));
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    assert_same_result(one, &merged, exact, &format!("{name} collector"));

    let from_logs = collect_logs(&format!("{name}-logs"), &logs);
    assert_eq!(
        from_logs.code,
        Some(0),
        "{}\n{}",
        from_logs.stdout,
        from_logs.stderr
    );
    assert_same_result(one, &from_logs.summary, exact, &format!("{name} logs"));
    assert!(
        from_logs.stdout.contains("from --start-at"),
        "{}",
        from_logs.stdout
    );
}

/// shared-iterations of 200 over 4 VUs, thresholds that pass on the whole
/// test and fail on each shard's share.
#[test]
fn rendered_pods_of_a_closed_model_test_merge_into_the_one_process_result() {
    let server = server();
    let (options, _, one) = closed_one_process("k8s-closed", &server);
    for n in [2, 4] {
        simulate(
            &format!("k8s-closed-{n}"),
            &options,
            &one.summary,
            n,
            &server.base_url(),
            &CLOSED_EXACT,
        );
    }
}

/// constant-arrival-rate, 100 iterations a second for 2 s: each shard's
/// exact share of the arrivals, started together by --start-at.
#[test]
fn rendered_pods_of_an_arrival_rate_test_merge_into_the_one_process_result() {
    let server = server();
    let options = json!({
        "scenarios": {"open": {
            "executor": "constant-arrival-rate", "rate": 100, "timeUnit": "1s",
            // VUs to spare: a stall of the shared cores must not drop
            // an arrival (dropped_iterations is a threshold here).
            "duration": "2s", "preAllocatedVUs": 20, "maxVUs": 20,
        }},
        "thresholds": {"iterations": ["count==200"], "dropped_iterations": ["count==0"], "checks": ["rate==1"]},
        "summaryTrendStats": trend_stats(),
    });
    let config = options_file("k8s-open", &options);
    let one = run_test("k8s-open-one", "hello", &server.base_url(), &config, LIMIT);
    assert_eq!(one.code(), Some(0), "{}\n{}", one.stdout(), one.stderr());
    assert_eq!(one.metric("iterations", "count"), 200.0);
    for n in [2, 4] {
        simulate(
            &format!("k8s-open-{n}"),
            &options,
            &one.summary,
            n,
            &server.base_url(),
            &[
                ("iterations", "count"),
                ("http_reqs", "count"),
                ("http_req_duration", "count"),
                ("data_sent", "count"),
                ("data_received", "count"),
                ("vus_max", "value"),
            ],
        );
    }
}

/// A test past a ConfigMap's 1 MiB is refused unless it is downloaded;
/// downloaded, the init container checks its SHA-256, and the manifests
/// still validate. The validator itself refuses a misspelt field and a
/// wrong type (it can fail). Flags each pod sets itself are refused.
#[test]
fn large_tests_are_fetched_and_the_schema_check_can_fail() {
    let dir = scratch("k8s-large");
    let big = dir.join("big.wasm");
    let bytes: Vec<u8> = (0..(1u32 << 20) + 1).map(|i| (i % 251) as u8).collect();
    std::fs::write(&big, &bytes).unwrap();
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let refused = render(
        &dir,
        &s(&["--parallelism", "3", big.to_str().unwrap(), "--vus", "3"]),
    );
    assert_eq!(refused.status.code(), Some(104));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("--test-url URL"), "{err}");

    let docs = render_valid(
        &dir,
        &s(&[
            "--parallelism",
            "3",
            "--test-url",
            "https://tests.example/big.wasm",
            big.to_str().unwrap(),
            "--vus",
            "3",
        ]),
    );
    assert_eq!(
        docs.len(),
        1,
        "no ConfigMap without an options file: {docs:#?}"
    );
    let pod = &docs[0]["spec"]["template"]["spec"];
    let init = &pod["initContainers"][0];
    let sha = init["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "TEST_SHA256")
        .unwrap()["value"]
        .clone();
    let digest = Command::new("sha256sum").arg(&big).output().unwrap();
    let digest = String::from_utf8_lossy(&digest.stdout);
    assert_eq!(sha, json!(digest.split_whitespace().next().unwrap()));

    // A misspelt field and a string for a number: both refused.
    let text = std::fs::read_to_string(dir.join("manifests.yaml")).unwrap();
    assert!(text.contains("  completionMode: Indexed\n") && text.contains("  parallelism: 3\n"));
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        text.replace("  completionMode:", "  completionsMode:"),
    )
    .unwrap();
    let e = validate(&bad).unwrap_err();
    assert!(
        e.contains("spec.completionsMode: no such field in V1JobSpec"),
        "{e}"
    );
    std::fs::write(
        &bad,
        text.replace("  parallelism: 3\n", "  parallelism: three\n"),
    )
    .unwrap();
    let e = validate(&bad).unwrap_err();
    assert!(e.contains("parallelism"), "{e}");

    for flags in [
        ["--execution-segment", "0:1/2"],
        ["--shard-summary", "s.json"],
    ] {
        let mut args = s(&["--parallelism", "2", guest("hello").to_str().unwrap()]);
        args.extend(s(&flags));
        let out = render(&dir, &args);
        assert_eq!(out.status.code(), Some(104), "{flags:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("each pod sets its own"), "{err}");
    }
}

/// The runtime image is debian:bookworm-slim: the release binary must
/// need only libraries every Debian image has (glibc and libgcc_s), of
/// glibc 2.36 (bookworm's) at most. The recipe's builder is the
/// workspace's Rust, and its user the one the pods run as.
#[test]
fn the_image_recipe_fits_the_binary_and_the_manifests() {
    let bin = env!("CARGO_BIN_EXE_wload");
    let mut readelf = Command::new("readelf");
    readelf.args(["--dynamic", "--wide", bin]);
    let dynamic = succeed(readelf, "readelf --dynamic");
    let needed: Vec<&str> = dynamic
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| l.split('[').nth(1)?.split(']').next())
        .collect();
    assert!(!needed.is_empty(), "{dynamic}");
    let glibc = [
        "libc.so.6",
        "libm.so.6",
        "libgcc_s.so.1",
        "libpthread.so.0",
        "libdl.so.2",
        "librt.so.1",
        "ld-linux-x86-64.so.2",
        "ld-linux-aarch64.so.1",
    ];
    for lib in &needed {
        assert!(
            glibc.contains(lib),
            "the binary needs {lib}, which bookworm-slim does not have"
        );
    }
    let mut objdump = Command::new("objdump");
    objdump.args(["--dynamic-syms", bin]);
    let syms = succeed(objdump, "objdump --dynamic-syms");
    let newest = syms
        .split("GLIBC_")
        .skip(1)
        .filter_map(|s| {
            let v: String = s
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
            Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
        })
        .max()
        .expect("glibc symbol versions");
    assert!(
        newest <= (2, 36),
        "the binary needs GLIBC_{}.{}",
        newest.0,
        newest.1
    );

    let dockerfile = std::fs::read_to_string(repo_root().join("Dockerfile")).unwrap();
    let manifest = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    let rust = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("the workspace's rust-version")
        .trim_matches('"');
    let froms: Vec<&str> = dockerfile
        .lines()
        .filter_map(|l| l.strip_prefix("FROM "))
        .collect();
    assert_eq!(
        froms,
        [
            format!("rust:{rust}-bookworm AS build").as_str(),
            "debian:bookworm-slim"
        ]
    );
    assert!(dockerfile.contains("rustup target add wasm32-wasip2"));
    assert!(dockerfile.contains("\nUSER 10001:10001\n"));
    let dockerignore = std::fs::read_to_string(repo_root().join(".dockerignore")).unwrap();
    assert!(
        dockerignore.lines().any(|l| l == "*"),
        "the context is an allowlist"
    );
    let docs = render_valid(
        &scratch("k8s-user"),
        &[
            "--parallelism".into(),
            "1".into(),
            guest("hello").display().to_string(),
        ],
    );
    let ctx = &doc(&docs, "Job", "shards")["spec"]["template"]["spec"]["securityContext"];
    assert_eq!(ctx["runAsUser"], json!(10001), "{ctx}");
}
