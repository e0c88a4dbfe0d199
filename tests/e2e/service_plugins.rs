//! Scenario plugins on `wload serve`: uploaded and run by `wload run
//! PLUGIN.wasm --server URL -p NAME=VALUE` as a local run runs them, the
//! parameters sent with the run (`@FILE` read by the client) and checked
//! by the service's worker against the plugin's description before any
//! request. The caps-probe fixture of `plugins/` declares one host (its
//! `allowed` URL) and tries an undeclared one (`other`): under a tenant
//! whose policy covers the declared host, the allowed listener sees the
//! plugin's traffic and the other loopback listener sees nothing; a
//! declared host outside the tenant's policy refuses the run at its start,
//! naming the host.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};
use wload_target::counting;

use crate::service::Service;
use crate::support::{Finished, plugin, run, run_exporting, scratch, server, wload};

const LIMIT: Duration = Duration::from_secs(180);

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// `wload run caps-probe ARGS` on `service` as `token`, from `dir` (where
/// `@FILE` is relative to), its summary exported.
fn remote_probe(service: &Service, token: &str, dir: &std::path::Path, a: &[String]) -> Finished {
    let mut cmd = service.cli(token);
    cmd.current_dir(dir)
        .arg(plugin("caps-probe"))
        .args(a)
        .arg("--quiet");
    run_exporting(cmd, &dir.join("summary.json"), LIMIT)
}

#[test]
fn a_plugin_runs_on_the_service_with_its_parameters_and_reaches_only_its_declared_host() {
    let target = server();
    let (other, other_seen) =
        counting::start([127, 0, 0, 1].into(), counting::ok()).expect("a loopback listener");
    let service = Service::start("plugins");
    // All of loopback: the plugin's declaration, not the tenant's policy,
    // keeps it off the other port.
    let (_, token) = service.tenant("p", json!({}), json!({"allow": ["127.0.0.0/8"]}));
    let dir = scratch("service-plugin-run");
    // `allowed` from a file named by -p, `other` from the options file's
    // params (relative to its folder): both read by the client.
    std::fs::write(dir.join("allowed.txt"), format!("{}/", target.base_url())).expect("write");
    let conf = dir.join("conf");
    std::fs::create_dir_all(&conf).expect("mkdir");
    std::fs::write(conf.join("other.txt"), format!("http://{other}/")).expect("write");
    std::fs::write(
        conf.join("options.json"),
        json!({"params": {"other": "@other.txt"}, "iterations": 2}).to_string(),
    )
    .expect("write the options file");
    let run = remote_probe(
        &service,
        &token,
        &dir,
        &args(&[
            "-p",
            "allowed=@allowed.txt",
            "--config",
            "conf/options.json",
            "-e",
            "PROBE_TOKEN=granted",
            "-e",
            "PROBE_UNDECLARED=leaked",
        ]),
    );
    assert_eq!(
        run.code(),
        Some(0),
        "stderr: {}\nservice: {}",
        run.stderr(),
        service.log()
    );
    assert_eq!(run.check("the declared host answers"), (2, 0));
    assert_eq!(run.check("the undeclared host answers"), (0, 2));
    assert_eq!(run.check("the declared env is read"), (2, 0));
    assert_eq!(run.check("the undeclared env is hidden"), (2, 0));
    assert_eq!(
        target.stats.requests(),
        2,
        "the allowed listener's requests"
    );
    assert_eq!(
        other_seen.load(Ordering::SeqCst),
        0,
        "the undeclared listener was connected to"
    );
    // The undeclared request failed as an egress denial does.
    assert_eq!(run.metric("http_req_failed", "passes"), 2.0);
}

#[test]
fn a_plugin_on_the_service_is_refused_before_any_request_as_a_local_run_is() {
    let target = server();
    let (other, other_seen) =
        counting::start([127, 0, 0, 1].into(), counting::ok()).expect("a loopback listener");
    let service = Service::start("plugins-refused");
    let allowed = target.base_url();
    let host = allowed.trim_start_matches("http://").to_owned();
    let (_, token) = service.tenant("r", json!({}), json!({"allow": [host]}));
    let dir = scratch("service-plugin-refused");

    // A wrong and a missing parameter: the local run's text and exit code.
    for (name, given) in [
        (
            "unknown",
            args(&["-p", &format!("allowed={allowed}/"), "-p", "bogus=1"]),
        ),
        ("missing", args(&["-p", "other="])),
    ] {
        let mut local = wload();
        local
            .current_dir(&dir)
            .arg("run")
            .arg(plugin("caps-probe"))
            .args(&given)
            .args(["--allow-host", &host, "--quiet"]);
        let local = run(local, LIMIT);
        let local_err = String::from_utf8_lossy(&local.stderr);
        assert_eq!(local.status.code(), Some(104), "{name}: {local_err}");
        let said = local_err.trim().trim_start_matches("error: ");
        assert!(
            said.starts_with("invalid parameters for the plugin caps-probe"),
            "{said}"
        );
        let remote = remote_probe(&service, &token, &dir, &given);
        assert_eq!(remote.code(), Some(104), "{name}: {}", remote.stderr());
        assert!(
            remote.stderr().contains(said),
            "{name}: the service said\n{}\nwhere a local run says\n{said}",
            remote.stderr()
        );
    }

    // A declared host outside the tenant's policy: refused at start,
    // naming it.
    let remote = remote_probe(
        &service,
        &token,
        &dir,
        &args(&["-p", &format!("allowed=http://{other}/")]),
    );
    let err = remote.stderr();
    assert_eq!(remote.code(), Some(104), "{err}");
    assert!(
        err.contains(&format!(
            "host {other} (the URL of the parameter allowed): outside the tenant's egress policy"
        )),
        "{err}"
    );
    assert!(err.contains(&format!("it allows {host}")), "{err}");

    // A file the client cannot read stops it before anything is sent.
    let remote = remote_probe(
        &service,
        &token,
        &dir,
        &args(&["-p", "allowed=@absent.txt"]),
    );
    assert_eq!(remote.code(), Some(104), "{}", remote.stderr());
    assert!(
        remote
            .stderr()
            .contains("-p allowed: cannot read absent.txt"),
        "{}",
        remote.stderr()
    );

    assert_eq!(target.stats.requests(), 0, "a refused run sent requests");
    assert_eq!(other_seen.load(Ordering::SeqCst), 0);
}

/// The API takes a plugin upload, and refuses options that would name
/// the service's own files (`params`, `with`).
#[test]
fn the_api_takes_plugins_and_refuses_options_naming_files() {
    let service = Service::start("plugins-api");
    let (_, token) = service.tenant("a", json!({}), json!({"allow": []}));
    let probe = service.upload(&token, &plugin("caps-probe"));
    for (key, value) in [
        ("params", json!({"allowed": "@../../wload.sqlite"})),
        ("with", json!(["../../tests/x.wasm"])),
    ] {
        let (status, v): (u16, Value) =
            service.start_run(&token, &probe, json!({ key: value }), json!({}));
        assert_eq!(status, 400, "options.{key}: {v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!("options.{key} is not taken by the service")),
            "{message}"
        );
    }
}
