//! Distributed runs, simulated with local processes: a test split into N
//! shards (`--execution-segment`), each writing `--shard-summary`, run at
//! once against one target server and merged by `wload merge`, gives what
//! one process running the whole test gives: the same counts, checks and
//! threshold verdicts, and exit code 99 when a threshold fails on the
//! merged data though it passes on every shard.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::support::*;
use wload_target::TargetServer;

pub(crate) const LIMIT: Duration = Duration::from_secs(180);

/// Trend statistics with the count, so that trend counts compare too.
pub(crate) fn trend_stats() -> Value {
    json!([
        "count", "avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"
    ])
}

/// `i/n:(i+1)/n`.
fn segment(i: usize, n: usize) -> String {
    format!("{i}/{n}:{}/{n}", i + 1)
}

/// A merge of shard summaries: its exit code, stdout and export.
pub(crate) struct Merge {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) summary: Value,
}

fn merge(name: &str, files: &[PathBuf]) -> Merge {
    let export = scratch(name).join("merged.json");
    let mut cmd = wload();
    cmd.arg("merge")
        .args(files)
        .arg("--summary-export")
        .arg(&export);
    merge_run(cmd, &export)
}

/// Run a merge command `cmd` that writes its export to `export`.
pub(crate) fn merge_run(cmd: std::process::Command, export: &std::path::Path) -> Merge {
    let out = run(cmd, LIMIT);
    let summary = std::fs::read_to_string(export)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    Merge {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        summary,
    }
}

/// The shard summary file of shard `i` of run `name`.
fn shard_file(name: &str, i: usize) -> PathBuf {
    repo_root()
        .join("target")
        .join("e2e-scratch")
        .join(format!("{name}-shards"))
        .join(format!("shard-{i}.json"))
}

/// Run `n` shards of `guest` at once, each a process of its own, shard
/// `i` with the arguments `args(i)` and its execution segment; returns
/// each one's run and the path of its shard summary.
fn shards(
    name: &str,
    guest_name: &str,
    base_url: &str,
    n: usize,
    args: impl Fn(usize) -> String,
) -> Vec<(Finished, PathBuf)> {
    scratch(&format!("{name}-shards"));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let file = shard_file(name, i);
            let args = format!(
                "{} --execution-segment {} --shard-summary {}",
                args(i),
                segment(i, n),
                file.display()
            );
            let (name, guest_name, base_url) = (
                format!("{name}-{i}"),
                guest_name.to_owned(),
                base_url.to_owned(),
            );
            std::thread::spawn(move || {
                (run_test(&name, &guest_name, &base_url, &args, LIMIT), file)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("a shard's thread"))
        .collect()
}

/// `metrics.<metric>.<field>` of an export, 0 when absent.
pub(crate) fn figure(summary: &Value, metric: &str, field: &str) -> f64 {
    summary["metrics"][metric][field].as_f64().unwrap_or(0.0)
}

/// Every threshold verdict of an export: `(key, expression, ok)`.
fn verdicts(summary: &Value) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    for (key, m) in summary["metrics"].as_object().into_iter().flatten() {
        for (expr, v) in m["thresholds"].as_object().into_iter().flatten() {
            out.push((key.clone(), expr.clone(), v["ok"] == true));
        }
    }
    out.sort();
    out
}

/// The merged export reports what the one-process run's does: counts,
/// checks and verdicts exactly.
pub(crate) fn assert_same_result(one: &Value, merged: &Value, exact: &[(&str, &str)], what: &str) {
    for (metric, field) in exact {
        assert_eq!(
            figure(merged, metric, field),
            figure(one, metric, field),
            "{what}: {metric}.{field}\nmerged: {:#}\none process: {:#}",
            merged["metrics"][metric],
            one["metrics"][metric]
        );
    }
    assert_eq!(
        merged["root_group"], one["root_group"],
        "{what}: checks and groups"
    );
    assert_eq!(
        verdicts(merged),
        verdicts(one),
        "{what}: threshold verdicts"
    );
    assert!(!verdicts(one).is_empty(), "{what}: the test has thresholds");
}

pub(crate) const CLOSED_EXACT: [(&str, &str); 9] = [
    ("http_reqs", "count"),
    ("iterations", "count"),
    ("http_req_duration", "count"),
    ("iteration_duration", "count"),
    ("data_sent", "count"),
    ("data_received", "count"),
    ("body_bytes", "count"),
    ("vus_max", "value"),
    ("http_req_failed", "passes"),
];

/// shared-iterations of 200 over 4 VUs, with thresholds that pass on the
/// whole test (and fail on every shard's share), in N = 2 and 4 shards.
#[test]
fn closed_model_shards_merge_into_the_one_process_result() {
    let server = server();
    let (_, config, one) = closed_one_process("dist-closed", &server);
    assert_eq!(one.check("status is 200"), (200, 0));
    for n in [2, 4] {
        let name = format!("dist-closed-{n}");
        let hdr = |i: usize| shard_file(&name, i).with_extension("hlog");
        let runs = shards(&name, "hello", &server.base_url(), n, |i| {
            format!("{config} --out hdr={}", hdr(i).display())
        });
        for (i, (run, _)) in runs.iter().enumerate() {
            // Each shard ran its share exactly, and failed `count==200`.
            assert_eq!(run.code(), Some(99), "shard {i}: {}", run.stderr());
            assert_eq!(run.metric("iterations", "count"), (200 / n) as f64);
        }
        let files: Vec<PathBuf> = runs.iter().map(|(_, f)| f.clone()).collect();
        let merged = merge(&format!("{name}-merge"), &files);
        assert_eq!(merged.code, Some(0), "{}\n{}", merged.stdout, merged.stderr);
        assert_same_result(&one.summary, &merged.summary, &CLOSED_EXACT, &name);
        assert!(
            merged
                .stdout
                .contains(&format!("merged {n} shard summaries (the whole test)")),
            "{}",
            merged.stdout
        );
        assert!(
            merged.stdout.contains("✓ 'count==200' count=200"),
            "{}",
            merged.stdout
        );

        // Trends: the merged min and max are the shards' own, exactly;
        // the percentiles those of the shards' hdr logs merged.
        let stat = |v: &Value, s: &str| figure(v, "http_req_duration", s);
        let shard_min = runs
            .iter()
            .map(|(r, _)| stat(&r.summary, "min"))
            .fold(f64::INFINITY, f64::min);
        let shard_max = runs
            .iter()
            .map(|(r, _)| stat(&r.summary, "max"))
            .fold(0.0, f64::max);
        assert_eq!(stat(&merged.summary, "min"), shard_min);
        assert_eq!(stat(&merged.summary, "max"), shard_max);
        let logs: Vec<PathBuf> = (0..n).map(hdr).collect();
        let from_logs = merge(&format!("{name}-hdr"), &logs);
        assert_eq!(from_logs.code, Some(0), "{}", from_logs.stderr);
        for s in ["med", "p(90)", "p(95)", "p(99)"] {
            let (a, b) = (stat(&merged.summary, s), stat(&from_logs.summary, s));
            assert!(
                (a - b).abs() <= b * 2e-3,
                "{name} {s}: {a} vs {b} from the hdr logs"
            );
        }
    }
}

/// A threshold that every shard passes on its share but the whole test
/// fails (`count<150` of 200 requests): the merge exits 99, as the
/// one-process run does.
#[test]
fn a_threshold_failing_only_on_merged_data_exits_99() {
    let server = server();
    let options = json!({
        "scenarios": {"closed": {"executor": "per-vu-iterations", "vus": 4, "iterations": 50}},
        "thresholds": {"http_reqs": ["count<150"], "checks": ["rate==1"]},
    });
    let config = options_file("dist-fail", &options);
    let one = run_test("dist-fail-one", "hello", &server.base_url(), &config, LIMIT);
    assert_eq!(one.code(), Some(99), "{}", one.stderr());
    for n in [2, 4] {
        let name = format!("dist-fail-{n}");
        let runs = shards(&name, "hello", &server.base_url(), n, |_| config.clone());
        for (i, (run, _)) in runs.iter().enumerate() {
            assert_eq!(
                run.code(),
                Some(0),
                "shard {i} passes on its share: {}",
                run.stderr()
            );
            assert_eq!(run.metric("http_reqs", "count"), (200 / n) as f64);
        }
        let files: Vec<PathBuf> = runs.iter().map(|(_, f)| f.clone()).collect();
        let merged = merge(&format!("{name}-merge"), &files);
        assert_eq!(
            merged.code,
            Some(99),
            "{}\n{}",
            merged.stdout,
            merged.stderr
        );
        assert_same_result(
            &one.summary,
            &merged.summary,
            &[("http_reqs", "count"), ("iterations", "count")],
            &name,
        );
        assert!(
            merged.stdout.contains("✗ 'count<150' count=200"),
            "{}",
            merged.stdout
        );
    }
}

/// constant-arrival-rate, 100 iterations a second for 2 s, split in 2 and
/// 4 shards started together by `--start-at`: the same 200 iterations,
/// the rate per second over the merged span, and each shard's start
/// within milliseconds of the time asked.
#[test]
fn arrival_rate_shards_merge_into_the_one_process_result() {
    let server = server();
    let options = json!({
        "scenarios": {"open": {
            "executor": "constant-arrival-rate", "rate": 100, "timeUnit": "1s",
            "duration": "2s", "preAllocatedVUs": 8, "maxVUs": 8,
        }},
        "thresholds": {"iterations": ["count==200"], "dropped_iterations": ["count==0"], "checks": ["rate==1"]},
        "summaryTrendStats": trend_stats(),
    });
    let config = options_file("dist-open", &options);
    let one = run_test("dist-open-one", "hello", &server.base_url(), &config, LIMIT);
    assert_eq!(one.code(), Some(0), "{}", one.stderr());
    assert_eq!(one.metric("iterations", "count"), 200.0);
    for n in [2, 4] {
        let name = format!("dist-open-{n}");
        // Far enough ahead for every process to load the test and start
        // its VUs on two shared cores.
        let at = SystemTime::now() + Duration::from_secs(6);
        let at_secs = at.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
        let runs = shards(&name, "hello", &server.base_url(), n, |_| {
            format!("{config} --start-at {at_secs:.3}")
        });
        for (i, (run, file)) in runs.iter().enumerate() {
            // `count==200` fails on each share.
            assert_eq!(run.code(), Some(99), "shard {i}: {}", run.stderr());
            assert_eq!(run.metric("iterations", "count"), (200 / n) as f64);
            let shard: Value =
                serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
            let skew_ms = (shard["startedUnixNs"].as_f64().unwrap()
                - shard["startAtUnixNs"].as_f64().unwrap())
                / 1e6;
            assert!(
                (0.0..50.0).contains(&skew_ms),
                "shard {i} started {skew_ms} ms after --start-at"
            );
        }
        let files: Vec<PathBuf> = runs.iter().map(|(_, f)| f.clone()).collect();
        let merged = merge(&format!("{name}-merge"), &files);
        assert_eq!(merged.code, Some(0), "{}\n{}", merged.stdout, merged.stderr);
        assert_same_result(
            &one.summary,
            &merged.summary,
            &[
                ("iterations", "count"),
                ("http_reqs", "count"),
                ("http_req_duration", "count"),
                ("data_sent", "count"),
                ("data_received", "count"),
                ("body_bytes", "count"),
                ("vus_max", "value"),
            ],
            &name,
        );
        assert!(
            merged.stdout.contains("starts spread over"),
            "{}",
            merged.stdout
        );
        assert!(
            merged.stdout.contains("from --start-at"),
            "{}",
            merged.stdout
        );
        // Rates per second over the merged span, as over one run's.
        let (a, b) = (
            figure(&merged.summary, "iterations", "rate"),
            figure(&one.summary, "iterations", "rate"),
        );
        assert!(
            (a - b).abs() <= b * 0.05,
            "{name}: {a}/s merged vs {b}/s in one process"
        );
    }
}

/// Shards of overlapping segments would count a part twice: refused.
#[test]
fn overlapping_shards_are_refused() {
    let server = server();
    let runs = shards("dist-overlap", "hello", &server.base_url(), 2, |_| {
        "--vus 2 --iterations 4".to_owned()
    });
    let files: Vec<PathBuf> = runs
        .iter()
        .map(|(r, f)| {
            assert_eq!(r.code(), Some(0), "{}", r.stderr());
            f.clone()
        })
        .collect();
    let twice = [files[0].clone(), files[1].clone(), files[1].clone()];
    let merged = merge("dist-overlap-merge", &twice);
    assert_eq!(merged.code, Some(1), "{}", merged.stderr);
    assert!(
        merged.stderr.contains("would count twice"),
        "{}",
        merged.stderr
    );
    let one = merge("dist-overlap-half", &files[..1]);
    assert_eq!(one.code, Some(0), "{}", one.stderr);
    assert!(
        one.stdout
            .contains("NOT the whole test: no shard ran 1/2:1"),
        "{}",
        one.stdout
    );
}

/// The closed-model test the distributed tests split (shared-iterations
/// of 200 over 4 VUs, thresholds that pass on the whole test and fail on
/// every shard's share), run in one process: its options, their
/// `--config` flag, and its result.
pub(crate) fn closed_one_process(name: &str, server: &TargetServer) -> (Value, String, Finished) {
    let options = json!({
        "scenarios": {"closed": {"executor": "shared-iterations", "vus": 4, "iterations": 200}},
        "thresholds": {
            "http_reqs": ["count==200"],
            "iterations": ["count>=200"],
            "checks": ["rate==1"],
            "http_req_duration": ["p(95)<10000"],
        },
        "summaryTrendStats": trend_stats(),
    });
    let config = options_file(name, &options);
    let one = run_test(
        &format!("{name}-one"),
        "hello",
        &server.base_url(),
        &config,
        LIMIT,
    );
    assert_eq!(one.code(), Some(0), "{}", one.stderr());
    assert_eq!(one.metric("iterations", "count"), 200.0);
    (options, config, one)
}
