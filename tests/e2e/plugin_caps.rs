//! Plugin capabilities (wit/test-0.2/scenario.wit, world
//! `confined-plugin`): the caps-probe fixture of `plugins/` declares one
//! host (its `allowed` URL) and one env name, and tries an undeclared host
//! and name too. A run grants them with `--allow-host` / `--allow-env` or
//! is refused before any request, naming what is missing; a granted plugin
//! reaches its declared host, a listener on another loopback port sees
//! nothing however broad the grant, and undeclared env names read as
//! unset. Every test runs caps-probe-v0-1 too, the same probe on 0.1's
//! world (wit/scenario.wit): the engine holds plugins of both versions
//! alike.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;
use wload_target::counting;

use crate::support::{Finished, plugin, plugin_info, run_plugin, scratch, server};

const LIMIT: Duration = Duration::from_secs(120);

/// The probe on `wload:scenario@0.2.0`, and on `@0.1.0`.
const PROBES: [&str; 2] = ["caps-probe", "caps-probe-v0-1"];

/// `wload run PROBE ARGS --summary-export`, in a scratch folder.
fn probe(probe: &str, name: &str, args: &[String]) -> Finished {
    run_plugin(probe, &scratch(&format!("{probe}-{name}")), args, LIMIT)
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn a_granted_plugin_reaches_its_declared_host_and_nothing_else() {
    for p in PROBES {
        granted_reaches_the_declared_host_only(p);
    }
}

fn granted_reaches_the_declared_host_only(name: &str) {
    let server = server();
    let (other, other_seen) =
        counting::start([127, 0, 0, 1].into(), counting::ok()).expect("a loopback listener");
    let allowed = server.base_url();
    let port = allowed.rsplit(':').next().expect("a port").to_owned();
    let common = [
        "-p".to_owned(),
        format!("allowed={allowed}/"),
        "-p".to_owned(),
        format!("other=http://{other}/"),
        "-e".to_owned(),
        "PROBE_TOKEN=granted".to_owned(),
        "-e".to_owned(),
        "PROBE_UNDECLARED=leaked".to_owned(),
        "--iterations".to_owned(),
        "2".to_owned(),
    ];
    // Exactly the declared port; then all of loopback, which does not
    // widen what the plugin declared.
    for (i, grant) in [format!("127.0.0.1:{port}"), "127.0.0.0/8".to_owned()]
        .iter()
        .enumerate()
    {
        let mut a = common.to_vec();
        a.extend(args(&["--allow-host", grant, "--allow-env", "PROBE_TOKEN"]));
        let run = probe(name, &format!("caps-granted-{i}"), &a);
        assert_eq!(run.code(), Some(0), "{name}: stderr: {}", run.stderr());
        assert_eq!(
            run.check("the declared host answers"),
            (2, 0),
            "{name} {grant}"
        );
        assert_eq!(
            run.check("the undeclared host answers"),
            (0, 2),
            "{name} {grant}"
        );
        assert_eq!(
            run.check("the declared env is read"),
            (2, 0),
            "{name} {grant}"
        );
        assert_eq!(
            run.check("the undeclared env is hidden"),
            (2, 0),
            "{name} {grant}"
        );
        assert_eq!(server.stats.requests(), 2 * (i as u64 + 1), "{name}");
        assert_eq!(
            other_seen.load(Ordering::SeqCst),
            0,
            "{name}: the undeclared listener was connected to"
        );
        // The undeclared request failed as an egress denial does.
        assert_eq!(
            run.metric("http_req_failed", "passes"),
            2.0,
            "{name} {grant}"
        );
    }
}

#[test]
fn a_run_that_does_not_grant_what_the_plugin_declares_is_refused_before_any_request() {
    for p in PROBES {
        ungranted_is_refused_before_any_request(p);
    }
}

fn ungranted_is_refused_before_any_request(name: &str) {
    let server = server();
    let (other, other_seen) =
        counting::start([127, 0, 0, 1].into(), counting::ok()).expect("a loopback listener");
    let allowed = server.base_url();
    let host = allowed.trim_start_matches("http://").to_owned();
    let base = [
        "-p".to_owned(),
        format!("allowed={allowed}/"),
        "-e".to_owned(),
        "PROBE_TOKEN=granted".to_owned(),
    ];

    let run = probe(name, "caps-refused-none", &base);
    let err = run.stderr();
    assert_eq!(run.code(), Some(104), "stderr: {err}");
    assert!(
        err.contains(&format!(
            "the plugin {name} needs what this run does not grant (2 missing; nothing is granted)"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "host {host} (the URL of the parameter allowed): grant it with --allow-host {host}"
        )),
        "{err}"
    );
    assert!(
        err.contains("env PROBE_TOKEN: grant it with --allow-env PROBE_TOKEN"),
        "{err}"
    );

    // Another port granted, the env granted: the host is still missing.
    let mut a = base.to_vec();
    a.extend(args(&[
        "--allow-host",
        &other.to_string(),
        "--allow-env",
        "PROBE_TOKEN",
    ]));
    let run = probe(name, "caps-refused-port", &a);
    let err = run.stderr();
    assert_eq!(run.code(), Some(104), "stderr: {err}");
    assert!(
        err.contains(&format!(
            "(1 missing; granted: host {other}, env PROBE_TOKEN)"
        )),
        "{err}"
    );
    assert!(!err.contains("env PROBE_TOKEN: grant"), "{err}");

    // A grant that is not a host rule is refused as a flag.
    let mut a = base.to_vec();
    a.extend(args(&["--allow-host", "127.0.0.1:port"]));
    let run = probe(name, "caps-refused-flag", &a);
    assert_eq!(run.code(), Some(2), "stderr: {}", run.stderr());
    assert!(run.stderr().contains("--allow-host"), "{}", run.stderr());

    assert_eq!(
        server.stats.requests(),
        0,
        "{name}: a refused run sent requests"
    );
    assert_eq!(other_seen.load(Ordering::SeqCst), 0);
}

/// `wload plugin info` shows what a plugin declares, before anyone runs
/// it.
#[test]
fn plugin_info_shows_the_declared_capabilities() {
    for name in PROBES {
        let text = plugin_info(&plugin(name), &[], LIMIT);
        assert!(text.contains("capabilities"), "{name}: {text}");
        assert!(text.contains("{allowed}"), "{name}: {text}");
        assert!(text.contains("PROBE_TOKEN"), "{name}: {text}");

        let json: Value =
            serde_json::from_str(&plugin_info(&plugin(name), &["--json"], LIMIT)).expect("JSON");
        assert_eq!(json["name"], name);
        let world = if name.ends_with("v0-1") {
            "0.1.0"
        } else {
            "0.2.0"
        };
        assert_eq!(
            json["world"],
            format!("wload:scenario/confined-plugin@{world}"),
            "{name}"
        );
        assert_eq!(json["capabilities"]["hosts"][0], "{allowed}");
        assert_eq!(json["capabilities"]["env"][0], "PROBE_TOKEN");
    }
    // A plugin of the plain world declares none.
    let json: Value = serde_json::from_str(&plugin_info(&plugin("har-replay"), &["--json"], LIMIT))
        .expect("JSON");
    assert_eq!(json["capabilities"], Value::Null);
    assert_eq!(json["world"], "wload:scenario/plugin@0.2.0");
}
