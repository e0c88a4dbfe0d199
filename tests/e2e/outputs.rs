//! Streaming outputs, `wload merge` and the live progress: the JSON and
//! CSV files add up to the summary, hdr logs of two runs merge into the
//! histogram of both, progress shows in CI logs unless `--quiet`.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::support::{Finished, guest, run, run_test, scratch, server, wload};

const LIMIT: Duration = Duration::from_secs(120);

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// Split one CSV record (quoted cells may hold commas and quotes).
fn csv_record(line: &str) -> Vec<String> {
    let (mut cells, mut cell, mut quoted, mut chars) =
        (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cell.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(std::mem::take(&mut cell)),
            (c, _) => cell.push(c),
        }
    }
    cells.push(cell);
    cells
}

/// `values.<field>` summed over the JSON lines of one metric.
fn json_total(lines: &[Value], metric: &str, field: &str) -> f64 {
    lines
        .iter()
        .filter(|l| l["metric"] == metric)
        .map(|l| l["values"][field].as_f64().expect("a number"))
        .sum()
}

fn checks(run: &Finished) -> (f64, f64) {
    (
        run.metric("checks", "passes"),
        run.metric("checks", "fails"),
    )
}

#[test]
fn json_and_csv_outputs_add_up_to_the_summary() {
    let server = server();
    let dir = scratch("outputs-json-csv");
    let (json, csv) = (dir.join("out.jsonl"), dir.join("out.csv"));
    let run = run_test(
        "outputs-json-csv-run",
        "hello",
        &server.base_url(),
        &format!(
            "--vus 2 --duration 2s --out-interval 200ms --out json={} -o csv={}",
            json.display(),
            csv.display()
        ),
        LIMIT,
    );
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    let reqs = run.metric("http_reqs", "count");
    assert_eq!(reqs, server.stats.requests() as f64);

    let json = lines(&json);
    for l in &json {
        for key in ["time", "start", "end"] {
            assert!(l[key].is_f64() || l[key].is_u64(), "{key} in {l}");
        }
        assert!(l["tags"].is_object() && l["values"].is_object(), "{l}");
    }
    // One line per interval and series: never one per request.
    let mut seen = HashSet::new();
    for l in &json {
        let key = (
            l["start"].to_string(),
            l["metric"].to_string(),
            l["tags"].to_string(),
        );
        assert!(
            seen.insert(key),
            "two lines for one interval and series: {l}"
        );
    }
    let intervals: HashSet<String> = json.iter().map(|l| l["start"].to_string()).collect();
    assert!(
        intervals.len() >= 2,
        "{} intervals in a 2s run",
        intervals.len()
    );
    assert_eq!(json_total(&json, "http_reqs", "sum"), reqs);
    assert_eq!(json_total(&json, "http_req_duration", "count"), reqs);
    assert_eq!(
        json_total(&json, "iterations", "sum"),
        run.metric("iterations", "count")
    );
    assert_eq!(
        (
            json_total(&json, "checks", "passes"),
            json_total(&json, "checks", "fails")
        ),
        checks(&run)
    );
    let duration_line = json
        .iter()
        .find(|l| l["metric"] == "http_req_duration")
        .expect("http_req_duration lines");
    assert_eq!(duration_line["type"], "trend");
    assert_eq!(duration_line["tags"]["scenario"], "default");
    for stat in ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"] {
        assert!(
            duration_line["values"][stat].is_f64(),
            "{stat}: {duration_line}"
        );
    }

    let text = std::fs::read_to_string(&csv).expect("the csv output");
    let mut rows = text.lines().map(csv_record);
    let header = rows.next().expect("a header");
    let col: HashMap<&str, usize> = header
        .iter()
        .enumerate()
        .map(|(i, h)| (h.as_str(), i))
        .collect();
    let rows: Vec<Vec<String>> = rows.collect();
    assert_eq!(rows.len(), json.len(), "one row per JSON line");
    let total = |metric: &str, column: &str| -> f64 {
        rows.iter()
            .filter(|r| r[col["metric"]] == metric)
            .map(|r| {
                assert_eq!(r.len(), header.len(), "{r:?}");
                r[col[column]]
                    .parse::<f64>()
                    .unwrap_or_else(|_| panic!("{column} of {r:?}"))
            })
            .sum()
    };
    assert_eq!(total("http_reqs", "sum"), reqs);
    assert_eq!(total("http_req_duration", "count"), reqs);
    assert_eq!(
        total("iterations", "sum"),
        run.metric("iterations", "count")
    );
    assert_eq!(
        (total("checks", "passes"), total("checks", "fails")),
        checks(&run)
    );
}

/// `wload merge FILES… --summary-export`, parsed.
fn merge(name: &str, files: &[&Path]) -> Value {
    let export = scratch(name).join("merged.json");
    let mut cmd = wload();
    cmd.arg("merge")
        .args(files)
        .arg("--summary-export")
        .arg(&export);
    let out = run(cmd, LIMIT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("http_req_duration"), "{stdout}");
    serde_json::from_str(&std::fs::read_to_string(&export).expect("merged export"))
        .expect("merged export is JSON")
}

/// Within HdrHistogram's 3 significant digits (and 1 ns).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= b.abs() * 2e-3 + 1e-6
}

#[test]
fn merged_hdr_logs_are_the_histogram_of_both_runs() {
    let server = server();
    let dir = scratch("outputs-hdr");
    let (log_a, log_b) = (dir.join("a.hlog"), dir.join("b.hlog"));
    // A: 300 requests of at least 30 ms; B: 500 fast ones. The union's
    // median is then one of B's fast values and its p(90) one of A's slow
    // ones, which averaging percentiles would not give.
    let slow = format!("{}/delay/30?", server.base_url());
    let a = run_test(
        "outputs-hdr-a",
        "hello",
        &slow,
        &format!("--vus 10 --iterations 300 --out hdr={}", log_a.display()),
        LIMIT,
    );
    let b = run_test(
        "outputs-hdr-b",
        "hello",
        &server.base_url(),
        &format!(
            "--vus 2 --iterations 500 --out hdr={} --out-interval 100ms",
            log_b.display()
        ),
        LIMIT,
    );
    for r in [&a, &b] {
        assert_eq!(r.code(), Some(0), "{}", r.stderr());
    }
    assert_eq!(a.check("status is 200"), (300, 0));
    let stat = |r: &Finished, s: &str| r.metric("http_req_duration", s);
    assert!(stat(&a, "min") >= 30.0);

    // One log merged gives back the run's own summary.
    let only_a = merge("outputs-hdr-merge-a", &[&log_a]);
    for s in ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"] {
        let got = only_a["metrics"]["http_req_duration"][s].as_f64().unwrap();
        assert!(
            close(got, stat(&a, s)),
            "{s}: merged {got} vs run {}",
            stat(&a, s)
        );
    }

    let both = merge("outputs-hdr-merge-ab", &[&log_a, &log_b]);
    let m = &both["metrics"]["http_req_duration"];
    let got = |s: &str| m[s].as_f64().unwrap_or_else(|| panic!("{s} in {m}"));
    assert_eq!(got("count"), 800.0);
    assert_eq!(
        got("count"),
        a.metric("http_reqs", "count") + b.metric("http_reqs", "count")
    );
    assert!(
        close(got("max"), stat(&a, "max").max(stat(&b, "max"))),
        "{m}"
    );
    assert!(
        close(got("min"), stat(&a, "min").min(stat(&b, "min"))),
        "{m}"
    );
    let avg = (stat(&a, "avg") * 300.0 + stat(&b, "avg") * 500.0) / 800.0;
    assert!(close(got("avg"), avg), "avg {} vs {avg}", got("avg"));
    // The 400th of 800 values is B's 400th of 500 (its p(80)).
    assert!(got("med") <= stat(&b, "p(90)") * 1.002, "{m}");
    assert!(got("med") < 30.0, "{m}");
    // The 720th is one of A's.
    assert!(got("p(90)") >= stat(&a, "min") * 0.998, "{m}");
    for s in ["p(95)", "p(99)"] {
        let (lo, hi) = (stat(&a, s).min(stat(&b, s)), stat(&a, s).max(stat(&b, s)));
        assert!(got(s) >= lo * 0.998 && got(s) <= hi * 1.002, "{s}: {m}");
    }
    // Per tag set: the two runs' URLs are two series.
    let per_set: Vec<(&String, &Value)> = both["metrics"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("http_req_duration{"))
        .collect();
    assert_eq!(per_set.len(), 2, "{per_set:?}");
    let counts: f64 = per_set
        .iter()
        .map(|(_, v)| v["count"].as_f64().unwrap())
        .sum();
    assert_eq!(counts, 800.0);
}

#[test]
fn progress_shows_in_logs_unless_quiet() {
    let server = server();
    let test = crate::support::guest("hello");
    let go = |quiet: bool| {
        let mut cmd = wload();
        cmd.arg("run")
            .arg(&test)
            .args([
                "--vus",
                "2",
                "--duration",
                "1500ms",
                "--out-interval",
                "250ms",
            ])
            .arg("-e")
            .arg(format!("BASE_URL={}", server.base_url()));
        if quiet {
            cmd.arg("--quiet");
        }
        let out = run(cmd, LIMIT);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let loud = go(false);
    assert!(loud.contains("running ("), "{loud}");
    let bar = loud
        .lines()
        .find(|l| l.starts_with("default ["))
        .unwrap_or_else(|| panic!("no progress bar of the scenario in:\n{loud}"));
    for part in ["/2 VUs", "iters", "req/s", "% failed", "p95="] {
        assert!(bar.contains(part), "{part} in {bar}");
    }
    // Not a terminal: plain lines, no cursor movement.
    assert!(!loud.contains('\x1b'), "{loud:?}");
    let quiet = go(true);
    assert!(
        !quiet.contains("running (") && !quiet.contains("default ["),
        "{quiet}"
    );
}

#[test]
fn unknown_out_kinds_are_refused_with_the_valid_forms() {
    let mut cmd = wload();
    cmd.arg("run").arg(crate::support::guest("hello")).args([
        "--iterations",
        "1",
        "--out",
        "statsd=127.0.0.1:8125",
    ]);
    let out = run(cmd, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(104), "{stderr}");
    assert!(
        stderr.contains("json=FILE, csv=FILE, hdr=FILE, prometheus-rw[=URL] or influxdb[=URL]"),
        "{stderr}"
    );
    assert!(stderr.contains("statsd"), "{stderr}");
}

/// An unwritable `--summary-export` or `--out` is found before the first
/// request (setup's included), not after the whole run.
#[test]
fn unwritable_outputs_are_refused_before_any_load() {
    for flag in [
        ["--summary-export", "/nonexistent-dir/summary.json"],
        ["--out", "json=/nonexistent-dir/out.json"],
    ] {
        let server = server();
        let mut cmd = wload();
        cmd.arg("run")
            .arg(guest("hello"))
            .args(["--vus", "2", "--duration", "30s", "-e"])
            .arg(format!("BASE_URL={}", server.base_url()))
            .args(flag);
        let started = std::time::Instant::now();
        let out = run(cmd, Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag:?}: {stderr}");
        assert!(stderr.contains("nonexistent-dir"), "{flag:?}: {stderr}");
        assert_eq!(server.stats.requests(), 0, "{flag:?}: load was sent");
        assert!(started.elapsed() < Duration::from_secs(20));
    }
}

/// A summary export that fails only at the end (here /dev/full: it opens,
/// but takes no byte) is reported, and a failing threshold's 99 stays the
/// exit code (it was 1, which hid the threshold).
#[test]
fn a_late_export_error_does_not_hide_a_failed_threshold() {
    let server = server();
    let options = serde_json::json!({"thresholds": {"http_reqs": ["count<1"]}});
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("hello"))
        .args(["--iterations", "3", "-e"])
        .arg(format!("BASE_URL={}", server.base_url()))
        .args(crate::support::options_file("late-export", &options).split(' '))
        .args(["--summary-export", "/dev/full"]);
    let out = run(cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "{stderr}");
    assert!(stderr.contains("/dev/full"), "{stderr}");
}
