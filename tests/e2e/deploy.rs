//! The deployment files are run, not only shown: `deploy/wload.service`
//! passes `systemd-analyze verify`, and its ExecStart command line, with
//! systemd's paths swapped for scratch ones, starts a service that
//! answers and creates a tenant with the admin token it was given.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::service::http;
use crate::support::{Daemon, debian_packages, free_port, repo_root, scratch};

/// The unit's `ExecStart=` command line.
fn exec_start(unit: &str) -> Vec<String> {
    let line = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("deploy/wload.service has an ExecStart line");
    line.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn the_systemd_unit_verifies_and_its_command_line_starts_the_service() {
    debian_packages(&["systemd"]);
    let unit = std::fs::read_to_string(repo_root().join("deploy/wload.service"))
        .expect("read deploy/wload.service");
    let bin = env!("CARGO_BIN_EXE_wload");
    let dir = scratch("deploy-systemd");

    // systemd-analyze checks the binary exists: point it at ours.
    let local = dir.join("wload.service");
    std::fs::write(&local, unit.replace("/usr/local/bin/wload", bin)).expect("write the unit");
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&local)
        .output()
        .expect("run systemd-analyze");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !said.contains("wload.service"),
        "systemd-analyze verify: {}\n{said}",
        out.status
    );

    // Its command line, as systemd would run it, with a scratch state
    // directory and credential and a free port.
    let port = free_port();
    let token_file = dir.join("admin-token");
    std::fs::write(&token_file, "deploy-admin-token\n").expect("write the admin token");
    let args: Vec<String> = exec_start(&unit)
        .into_iter()
        .map(|a| match a.as_str() {
            "/usr/local/bin/wload" => bin.to_owned(),
            "127.0.0.1:8700" => format!("127.0.0.1:{port}"),
            "/var/lib/wload" => dir.join("state").display().to_string(),
            "${CREDENTIALS_DIRECTORY}/admin-token" => token_file.display().to_string(),
            _ => a,
        })
        .collect();
    assert_eq!(
        args[0], bin,
        "ExecStart runs the installed binary: {args:?}"
    );
    let mut cmd = Command::new(&args[0]);
    cmd.args(&args[1..]).env_remove("WLOAD_ADMIN_TOKEN");
    let mut service = Daemon::start(cmd, dir.join("service.log"));
    let addr = format!("127.0.0.1:{port}");
    service.wait_until(Duration::from_secs(30), || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    let (status, body) = http(
        &addr,
        "POST",
        "/v1/tenants",
        Some("deploy-admin-token"),
        Some(br#"{"name": "deployed"}"#),
        "application/json",
    );
    assert_eq!(
        status,
        201,
        "{}\n{}",
        String::from_utf8_lossy(&body),
        service.log()
    );
    let tenant: Value = serde_json::from_slice(&body).expect("a tenant as JSON");
    assert_eq!(tenant["tenant"]["name"], "deployed", "{tenant:#}");
}
