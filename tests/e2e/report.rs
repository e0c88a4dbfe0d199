//! The pages in a real browser: Debian's chromium, driven by
//! playwright-core (from npm, pinned, installed once into
//! `target/lang/playwright`) through `report_driver.js`. Every request
//! that is not the report's own file or the dashboard's 127.0.0.1 server
//! is blocked and must not happen: the pages work offline. The report of
//! a run (`--report`) and of its saved outputs (`wload report`) must draw
//! their charts and show the summary export's numbers; the dashboard must
//! update while the run goes and end on the run's totals.
//!
//! Screenshots go to the scratch folder; with `WLOAD_UPDATE_SCREENSHOTS=1`
//! they also replace docs/report.png and docs/dashboard.png.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{debian_packages, guest, repo_root, run, scratch, server, wload};

/// The playwright-core release this test is written against.
const PLAYWRIGHT: &str = "playwright-core@1.65.1";

/// playwright-core under `target/lang/`, installed when the pinned
/// version is not the one there already (once per test process: the
/// tests run in parallel); returns its node_modules.
fn playwright() -> &'static Path {
    static MODULES: OnceLock<PathBuf> = OnceLock::new();
    MODULES.get_or_init(install_playwright)
}

fn install_playwright() -> PathBuf {
    let dir = repo_root().join("target/lang/playwright");
    let marker = dir.join(".wload-pin");
    let modules = dir.join("node_modules");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(PLAYWRIGHT)
        && modules.join("playwright-core").exists()
    {
        return modules;
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create target/lang/playwright");
    let out = Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--prefix",
        ])
        .arg(&dir)
        .arg(PLAYWRIGHT)
        .output()
        .expect("run npm (is Node.js installed?)");
    assert!(
        out.status.success(),
        "npm install {PLAYWRIGHT} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&marker, PLAYWRIGHT).expect("mark the install");
    modules
}

/// Open `url` in chromium through the driver; what the page showed.
fn browse(dir: &Path, mode: &str, url: &str, stop: Option<u32>, screenshot: &Path) -> Value {
    debian_packages(&["chromium"]);
    let modules = playwright();
    let config = dir.join(format!("{mode}-driver.json"));
    let profile = dir.join(format!("{mode}-profile"));
    let _ = std::fs::remove_dir_all(&profile);
    std::fs::write(
        &config,
        json!({
            "mode": mode,
            "url": url,
            // The dashboard's own server is the one place it may reach.
            "allow": stop.map(|_| url),
            "stopPid": stop,
            "userDataDir": profile,
            "screenshot": screenshot,
        })
        .to_string(),
    )
    .expect("write the driver's config");
    let mut node = Command::new("node");
    node.arg(repo_root().join("tests/e2e/report_driver.js"))
        .arg(&config)
        .env("NODE_PATH", modules);
    let out = run(node, Duration::from_secs(180));
    assert!(
        out.status.success(),
        "the browser driver failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the driver printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(seen["blocked"], json!([]), "the page reached out");
    assert_eq!(seen["pageErrors"], json!([]), "the page's script failed");
    if std::env::var_os("WLOAD_UPDATE_SCREENSHOTS").is_some()
        && ["report", "dashboard"].contains(&mode)
    {
        let name = screenshot.file_name().expect("a file name");
        std::fs::copy(screenshot, repo_root().join("docs").join(name))
            .expect("copy the screenshot");
    }
    seen
}

/// Every figure the page shows equals the export's number, and is the
/// number its text says.
fn assert_figures_match(seen: &Value, export: &Value) -> usize {
    let figures = seen["figures"].as_array().expect("figures");
    for f in figures {
        let (metric, field) = (f["metric"].as_str().unwrap(), f["field"].as_str().unwrap());
        let shown: f64 = f["value"].as_str().unwrap().parse().expect("a number");
        let exported = export["metrics"][metric][field]
            .as_f64()
            .unwrap_or_else(|| panic!("no {metric}.{field} in the export"));
        // The same double, but for serde_json's reading of the export: its
        // default float parser may land one unit in the last place off
        // (the page's value is read by Rust's exact `parse`).
        assert!(
            shown == exported || (shown - exported).abs() <= exported.abs() * 1e-15,
            "{metric}.{field}: the page has {shown}, the export {exported}"
        );
        let text = f["text"].as_str().unwrap();
        let leading: String = text
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-')
            .collect();
        let number: f64 = leading
            .parse()
            .unwrap_or_else(|_| panic!("{metric}.{field} shows {text:?}"));
        let expected = if text.ends_with('%') {
            exported * 100.0
        } else {
            exported
        };
        let tolerance = if text.contains(" kB") || text.contains(" MB") {
            // Bytes are shown in kB/MB, two decimals.
            let unit = if text.contains(" MB") { 1e6 } else { 1e3 };
            assert!(
                (number * unit - exported).abs() <= 0.005 * unit,
                "{metric}.{field}: {text}"
            );
            continue;
        } else if expected.fract() == 0.0 && !text.contains('.') {
            0.0
        } else {
            // Two decimals, rounded (and a rounding error of the double).
            0.0051
        };
        assert!(
            (number - expected).abs() <= tolerance,
            "{metric}.{field} shows {text:?}, the export has {exported}"
        );
    }
    figures.len()
}

/// The charts named were drawn, with their series in colour.
fn assert_drawn(seen: &Value, ids: &[&str]) {
    let charts = seen["charts"].as_array().expect("charts");
    for id in ids {
        let chart = charts
            .iter()
            .find(|c| c["id"] == *id)
            .unwrap_or_else(|| panic!("no chart {id}: {charts:?}"));
        assert!(
            chart["drawn"].as_u64().unwrap_or(0) > 0,
            "chart {id} not drawn"
        );
        assert!(
            chart["pixels"].as_u64().unwrap_or(0) > 50,
            "chart {id} has no series drawn: {chart}"
        );
    }
}

/// Two scenarios of the shop (groups, checks) for `seconds`, thresholds
/// one passing and one failing (exit 99), as a k6 options file.
fn shop_options(dir: &Path, seconds: u32) -> PathBuf {
    let path = dir.join("options.json");
    let options = json!({
        "scenarios": {
            "browsers": { "executor": "constant-vus", "vus": 2, "duration": format!("{seconds}s") },
            "buyers": {
                "executor": "ramping-vus", "startVUs": 0,
                "stages": [{ "duration": format!("{seconds}s"), "target": 3 }],
            },
        },
        "thresholds": {
            "http_req_duration": ["p(95)<5000"],
            "http_reqs{group:::cart::view}": ["count<1"],
        },
    });
    std::fs::write(&path, options.to_string()).expect("write the options");
    path
}

#[test]
fn the_report_of_a_run_and_of_its_saved_outputs_shows_the_summary_export() {
    let dir = scratch("report");
    let target = server();
    let report = dir.join("report.html");
    let export = dir.join("summary.json");
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("shop"))
        .arg("--config")
        .arg(shop_options(&dir, 4))
        .arg("-e")
        .arg(format!("BASE_URL={}", target.base_url()))
        .args(["--quiet", "--no-summary", "--out-interval", "500ms"])
        .arg("--out")
        .arg(format!("json={}", dir.join("intervals.jsonl").display()))
        .arg("--out")
        .arg(format!("hdr={}", dir.join("intervals.hlog").display()))
        .arg("--shard-summary")
        .arg(dir.join("shard.json"))
        .arg("--summary-export")
        .arg(&export)
        .arg("--report")
        .arg(&report);
    let out = run(cmd, Duration::from_secs(120));
    assert_eq!(
        out.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let export: Value =
        serde_json::from_str(&std::fs::read_to_string(&export).expect("the export")).expect("JSON");

    let url = format!("file://{}", report.display());
    let seen = browse(&dir, "report", &url, None, &dir.join("report.png"));
    let page = &seen["final"];
    assert!(assert_figures_match(page, &export) > 20, "{page:#}");
    assert_drawn(
        page,
        &[
            "rates",
            "vus",
            "latency",
            "phases",
            "checks",
            "distribution",
        ],
    );
    // Checks: the export's, one row each.
    let checks = page["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 4, "{checks:#?}");
    let in_export = export["root_group"]["groups"][0]["groups"][0]["checks"][0].clone();
    assert_eq!(in_export["name"], "item added");
    let row = checks
        .iter()
        .find(|c| c["key"] == "::cart::add::item added")
        .expect("item added");
    assert_eq!(row["passes"], in_export["passes"].to_string());
    assert_eq!(row["fails"], "0");
    // Requests by name: the POSTs to /echo and GETs, their statuses.
    let requests = page["requests"].as_array().unwrap();
    let echo = requests
        .iter()
        .find(|r| {
            r["key"]
                .as_str()
                .is_some_and(|k| k.starts_with("POST ") && k.ends_with("/echo"))
        })
        .unwrap_or_else(|| panic!("{requests:#?}"));
    let posts = export["metrics"]["http_reqs"]["count"].as_f64().unwrap() / 4.0 * 2.0;
    assert_eq!(echo["count"], posts.to_string());
    assert!(echo["text"].as_str().unwrap().contains("200: "), "{echo}");
    // Groups: the four of the shop.
    let groups: Vec<&str> = page["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["key"].as_str().unwrap())
        .collect();
    assert_eq!(groups, ["::cart", "::cart::add", "::cart::view", "::home"]);
    // Thresholds: their state as the export has it.
    let thresholds = page["thresholds"].as_array().unwrap();
    assert_eq!(thresholds.len(), 2);
    for t in thresholds {
        let key = t["key"].as_str().unwrap();
        let (metric, source) = key.rsplit_once(' ').unwrap();
        let ok = export["metrics"][metric]["thresholds"][source]["ok"]
            .as_bool()
            .unwrap();
        assert_eq!(t["ok"], ok.to_string(), "{key}");
    }
    assert_eq!(page["percentiles"].as_array().map(Vec::len), Some(5));

    // The same run from what it saved: the export and the interval files.
    let again = dir.join("saved.html");
    let mut cmd = wload();
    cmd.args(["report", "--out"])
        .arg(&again)
        .arg(dir.join("summary.json"))
        .arg(dir.join("intervals.jsonl"))
        .arg(dir.join("intervals.hlog"));
    let out = run(cmd, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = format!("file://{}", again.display());
    let saved = browse(&dir, "saved", &url, None, &dir.join("saved.png"));
    let saved = &saved["final"];
    assert!(assert_figures_match(saved, &export) > 20);
    assert_drawn(
        saved,
        &["rates", "latency", "phases", "checks", "distribution"],
    );
    assert_eq!(
        saved["requests"].as_array().map(Vec::len),
        page["requests"].as_array().map(Vec::len)
    );
    assert_eq!(saved["checks"], page["checks"]);

    // And from its shard summary: the merge `wload merge` makes.
    let merged = dir.join("merged.html");
    let mut cmd = wload();
    cmd.args(["report", "--out"])
        .arg(&merged)
        .arg(dir.join("shard.json"))
        .arg(dir.join("intervals.jsonl"));
    let out = run(cmd, Duration::from_secs(60));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = format!("file://{}", merged.display());
    let shard = browse(&dir, "merged", &url, None, &dir.join("merged.png"));
    let shard = &shard["final"];
    assert!(assert_figures_match(shard, &export) > 20);
    assert_eq!(shard["requests"], page["requests"]);
    assert_eq!(shard["groups"], page["groups"]);
}

#[test]
fn the_dashboard_updates_while_the_run_goes_and_ends_on_its_totals() {
    let dir = scratch("dashboard");
    let target = server();
    let export = dir.join("summary.json");
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("shop"))
        .arg("--config")
        // Longer than any browser takes to start: the driver stops it.
        .arg(shop_options(&dir, 300))
        .arg("-e")
        .arg(format!("BASE_URL={}", target.base_url()))
        .args([
            "--quiet",
            "--no-summary",
            "--dashboard",
            "--dashboard-port",
            "0",
        ])
        .arg("--summary-export")
        .arg(&export)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start wload");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("wload ended before printing the dashboard's address")
            .expect("read stderr");
        if let Some(url) = line.strip_prefix("dashboard: ") {
            break url.to_owned();
        }
    };
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert!(
        !url.ends_with(":0/"),
        "port 0 must print the port taken: {url}"
    );
    // Keep reading, so that the run never blocks on a full pipe.
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let seen = browse(
        &dir,
        "dashboard",
        &url,
        Some(child.id()),
        &dir.join("dashboard.png"),
    );
    let status = child.wait().expect("wait for wload");
    let stderr = rest.join().unwrap_or_default().join("\n");
    // Stopped by the driver once it had seen the run go (k6's 105).
    assert_eq!(status.code(), Some(105), "{stderr}");
    let export: Value =
        serde_json::from_str(&std::fs::read_to_string(&export).expect("the export")).expect("JSON");

    // Three frames while the run went, each with more requests than the last.
    let samples = seen["samples"].as_array().expect("samples");
    let reqs: Vec<f64> = samples
        .iter()
        .map(|s| {
            s["figures"]
                .as_array()
                .and_then(|f| {
                    f.iter()
                        .find(|f| f["metric"] == "http_reqs" && f["field"] == "count")
                })
                .and_then(|f| f["value"].as_str()?.parse().ok())
                .expect("http_reqs on the page")
        })
        .collect();
    assert!(reqs.windows(2).all(|w| w[0] < w[1]), "{reqs:?}");
    assert!(samples.iter().all(|s| s["finished"] == false));
    assert_drawn(
        &samples[2],
        &["rates", "vus", "latency", "phases", "checks"],
    );
    // Thresholds with their state as the run goes: the failing one fails.
    let states: Vec<(String, String)> = samples[2]["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["key"].as_str().unwrap().to_owned(),
                t["ok"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        states.contains(&(
            "http_reqs{group:::cart::view} count<1".to_owned(),
            "false".to_owned()
        )),
        "{states:?}"
    );
    assert!(
        states.contains(&("http_req_duration p(95)<5000".to_owned(), "true".to_owned())),
        "{states:?}"
    );
    // At its end, the run's totals: the counters of the summary export.
    let last = &seen["final"];
    assert_eq!(last["finished"], true);
    for (metric, field) in [
        ("http_reqs", "count"),
        ("iterations", "count"),
        ("checks", "passes"),
    ] {
        let shown = last["figures"]
            .as_array()
            .and_then(|f| {
                f.iter()
                    .find(|f| f["metric"] == metric && f["field"] == field)
            })
            .and_then(|f| f["value"].as_str()?.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {metric}.{field} on the page"));
        assert_eq!(
            shown,
            export["metrics"][metric][field].as_f64().unwrap(),
            "{metric}.{field}"
        );
    }
}
