//! The model both pages draw: one JSON document built from a run's
//! [`Report`] (the figures of the summary export, by the export's own
//! code, so that what a page shows is what `--summary-export` wrote) and
//! its [`Timeline`] (one point per output interval). The dashboard sends
//! the same pieces over server-sent events; the report embeds the whole
//! document.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde_json::{Map, Value, json};

use wload_metrics::threshold::Outcome;
use wload_metrics::{Builtin, MetricDef, Sink, Snapshot, TIME_SCALE, TrendSink};
use wload_output::progress::ScenarioPlan;
use wload_output::stream::ScenarioVus;
use wload_output::{Report, export, trend_stat};

/// What a page says about where its figures come from.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    /// The test, as the run header names it.
    pub title: String,
    pub scenarios: Vec<ScenarioPlan>,
    /// The files a `wload report` read, for its header.
    pub sources: Vec<String>,
    /// When the run started on the wall clock, if known.
    pub started: Option<SystemTime>,
}

/// One point per output interval, in order: the figures of the charts
/// over time.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub points: Vec<Map<String, Value>>,
}

impl Timeline {
    pub fn to_json(&self) -> Value {
        Value::Array(self.points.iter().cloned().map(Value::Object).collect())
    }
}

/// The trend statistics a timeline point keeps of `http_req_duration`.
const POINT_PERCENTILES: [(&str, f64); 4] =
    [("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0)];

/// The request phases, as the point names them, with their metric.
const PHASES: [(&str, Builtin); 6] = [
    ("blocked", Builtin::HttpReqBlocked),
    ("connecting", Builtin::HttpReqConnecting),
    ("tls_handshaking", Builtin::HttpReqTlsHandshaking),
    ("sending", Builtin::HttpReqSending),
    ("waiting", Builtin::HttpReqWaiting),
    ("receiving", Builtin::HttpReqReceiving),
];

fn counter_sum(s: &Snapshot, m: Builtin) -> f64 {
    match s.metric(m.id()) {
        Some(Sink::Counter { sum, .. }) => sum,
        _ => 0.0,
    }
}

fn rate_counts(s: &Snapshot, m: Builtin) -> (u64, u64) {
    match s.metric(m.id()) {
        Some(Sink::Rate { trues, total }) => (trues, total),
        _ => (0, 0),
    }
}

fn trend(s: &Snapshot, m: Builtin) -> Option<TrendSink> {
    match s.metric(m.id()) {
        Some(Sink::Trend(t)) if t.count > 0 => Some(t),
        _ => None,
    }
}

/// One interval's point: `t` is its end in seconds since the run
/// started; rates are per second of the interval.
pub fn point(
    series: &Snapshot,
    start: f64,
    end: f64,
    scenario_vus: &[ScenarioVus],
) -> Map<String, Value> {
    let seconds = (end - start).max(0.0);
    let per_second = |v: f64| if seconds > 0.0 { v / seconds } else { 0.0 };
    let mut p = Map::new();
    p.insert("t".into(), json!(end));
    let reqs = counter_sum(series, Builtin::HttpReqs);
    p.insert("reqs".into(), json!(reqs));
    p.insert("reqs_rate".into(), json!(per_second(reqs)));
    let iterations = counter_sum(series, Builtin::Iterations);
    p.insert("iterations".into(), json!(iterations));
    p.insert("iterations_rate".into(), json!(per_second(iterations)));
    let (failed, total) = rate_counts(series, Builtin::HttpReqFailed);
    p.insert("failed".into(), json!(failed));
    p.insert(
        "failed_rate".into(),
        json!(if total == 0 {
            0.0
        } else {
            failed as f64 / total as f64
        }),
    );
    if let Some(Sink::Gauge { last, .. }) = series.metric(Builtin::Vus.id()) {
        p.insert("vus".into(), json!(last));
    }
    let vus: Map<String, Value> = scenario_vus
        .iter()
        .map(|s| (s.name.clone(), json!(s.active)))
        .collect();
    p.insert("scenario_vus".into(), Value::Object(vus));
    if let Some(t) = trend(series, Builtin::HttpReqDuration) {
        for (name, q) in POINT_PERCENTILES {
            p.insert(name.into(), json!(t.percentile(q)));
        }
        p.insert("avg".into(), json!(t.avg()));
        p.insert("max".into(), json!(t.max()));
    }
    for (name, m) in PHASES {
        if let Some(t) = trend(series, m) {
            p.insert(name.into(), json!(t.avg()));
        }
    }
    let (passes, checks) = rate_counts(series, Builtin::Checks);
    p.insert("checks_pass".into(), json!(passes));
    p.insert("checks_fail".into(), json!(checks - passes));
    p.insert(
        "data_received".into(),
        json!(per_second(counter_sum(series, Builtin::DataReceived))),
    );
    p.insert(
        "data_sent".into(),
        json!(per_second(counter_sum(series, Builtin::DataSent))),
    );
    p
}

/// Thresholds with their verdicts: what the summary marks ✓ or ✗.
pub fn thresholds(outcomes: &[Outcome]) -> Value {
    Value::Array(
        outcomes
            .iter()
            .map(|o| {
                json!({
                    "key": o.threshold.key,
                    "source": o.threshold.source,
                    "ok": o.verdict.ok,
                    "observed": o.verdict.observed,
                    "abort_on_fail": o.threshold.abort_on_fail,
                    "note": o.note,
                })
            })
            .collect(),
    )
}

/// A trend's figures in a table row: count, avg, med, p(90), p(95),
/// p(99), max.
fn trend_row(t: &TrendSink) -> Value {
    let mut m = Map::new();
    m.insert("count".into(), json!(t.count));
    for stat in ["avg", "min", "med", "p(90)", "p(95)", "p(99)", "max"] {
        m.insert(stat.into(), json!(trend_stat(t, stat)));
    }
    Value::Object(m)
}

/// One row per request name and method: how many, their statuses and
/// error codes, how many failed, and their durations. The statuses and
/// error codes are the `status` and `error_code` tags of `http_reqs`.
pub fn requests(snapshot: &Snapshot) -> Value {
    #[derive(Default)]
    struct Row {
        count: f64,
        statuses: BTreeMap<String, f64>,
        errors: BTreeMap<String, f64>,
        failed: u64,
        duration: Option<TrendSink>,
    }
    let key = |tags: &wload_metrics::TagSet| {
        (
            tags.get("name").unwrap_or("").to_owned(),
            tags.get("method").unwrap_or("").to_owned(),
        )
    };
    let mut rows: BTreeMap<(String, String), Row> = BTreeMap::new();
    for (tags, sink) in snapshot.series_of(Builtin::HttpReqs.id()) {
        let Sink::Counter { sum, .. } = sink else {
            continue;
        };
        let row = rows.entry(key(tags)).or_default();
        row.count += sum;
        *row.statuses
            .entry(tags.get("status").unwrap_or("").to_owned())
            .or_default() += sum;
        if let Some(code) = tags.get("error_code") {
            *row.errors.entry(code.to_owned()).or_default() += sum;
        }
    }
    for (tags, sink) in snapshot.series_of(Builtin::HttpReqFailed.id()) {
        if let (Some(row), Sink::Rate { trues, .. }) = (rows.get_mut(&key(tags)), sink) {
            row.failed += trues;
        }
    }
    for (tags, sink) in snapshot.series_of(Builtin::HttpReqDuration.id()) {
        if let (Some(row), Sink::Trend(t)) = (rows.get_mut(&key(tags)), sink) {
            match &mut row.duration {
                Some(d) => d.merge(t),
                None => row.duration = Some(t.clone()),
            }
        }
    }
    Value::Array(
        rows.into_iter()
            .map(|((name, method), row)| {
                json!({
                    "name": name,
                    "method": method,
                    "count": row.count,
                    "failed": row.failed,
                    "statuses": row.statuses,
                    "errors": row.errors,
                    "duration": row.duration.as_ref().map(trend_row),
                })
            })
            .collect(),
    )
}

/// One row per group path: its `group_duration` (k6 records one per
/// time a group is left).
pub fn groups(snapshot: &Snapshot) -> Value {
    let mut by_path: BTreeMap<String, TrendSink> = BTreeMap::new();
    for (tags, sink) in snapshot.series_of(Builtin::GroupDuration.id()) {
        let (Some(path), Sink::Trend(t)) = (tags.get("group"), sink) else {
            continue;
        };
        match by_path.get_mut(path) {
            Some(d) => d.merge(t),
            None => {
                by_path.insert(path.to_owned(), t.clone());
            }
        }
    }
    Value::Array(
        by_path
            .iter()
            .map(|(path, t)| json!({ "path": path, "duration": trend_row(t) }))
            .collect(),
    )
}

/// Bins of the latency distribution.
const BINS: usize = 40;

/// The distribution of `http_req_duration` over the whole run: the
/// histogram's recorded values in log-spaced bins from its min to its
/// max (milliseconds), with the percentiles a reader looks for.
pub fn distribution(snapshot: &Snapshot) -> Value {
    let Some(t) = trend(snapshot, Builtin::HttpReqDuration) else {
        return Value::Null;
    };
    distribution_of(&t)
}

/// [`distribution`] of one trend.
pub fn distribution_of(t: &TrendSink) -> Value {
    let hist = t.histogram();
    let scale = if t.is_time() {
        TIME_SCALE
    } else {
        wload_metrics::PLAIN_SCALE
    };
    // Log bins need a positive start: a histogram of 0s has one bin.
    let lo = (hist.min().max(1)) as f64;
    let hi = (hist.max().max(1)) as f64;
    let ratio = (hi / lo).max(1.0 + 1e-9);
    let step = ratio.ln() / BINS as f64;
    let mut counts = vec![0u64; BINS];
    for (value, count) in hist.recorded() {
        let value = (value as f64).max(lo);
        let i = (((value / lo).ln() / step) as usize).min(BINS - 1);
        counts[i] += count;
    }
    let edges: Vec<f64> = (0..=BINS)
        .map(|i| lo * (step * i as f64).exp() / scale)
        .collect();
    let percentiles: Vec<Value> = [50.0, 90.0, 95.0, 99.0, 99.9]
        .iter()
        .map(|q| json!({ "p": q, "value": t.percentile(*q) }))
        .collect();
    json!({
        "edges": edges,
        "counts": counts,
        "count": t.count,
        "percentiles": percentiles,
    })
}

/// The scenarios as the run header words them.
pub fn scenarios(plans: &[ScenarioPlan]) -> Value {
    Value::Array(
        plans
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "what": s.what,
                    "details": s.details,
                    "exec": s.exec,
                    "max_vus": s.max_vus,
                    "start_time": s.start_time.as_secs_f64(),
                    "duration": s.duration.as_secs_f64(),
                })
            })
            .collect(),
    )
}

/// Iteration errors by message, as the summary lists them.
fn failures(report: &Report) -> Value {
    let (messages, more) = &report.failures;
    json!({
        "messages": messages.iter().map(|(m, n)| json!({ "message": m, "count": n })).collect::<Vec<_>>(),
        "unlisted": more,
        "interrupted": report.interrupted,
    })
}

/// The figures of a report that change while a run goes: the export,
/// thresholds, requests and groups. The dashboard sends them each
/// interval; the report embeds them once.
pub fn figures(report: &Report) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("summary".into(), export::to_json(report));
    m.insert("thresholds".into(), thresholds(&report.thresholds));
    m.insert("requests".into(), requests(&report.snapshot));
    m.insert("groups".into(), groups(&report.snapshot));
    m.insert("failures".into(), failures(report));
    m.insert("trend_stats".into(), json!(report.trend_stats));
    m.insert("elapsed".into(), json!(report.elapsed.as_secs_f64()));
    m
}

/// The whole model of a finished run (or of saved outputs).
pub fn model(report: &Report, timeline: &Timeline, meta: &Meta) -> Value {
    let mut m = figures(report);
    m.insert("title".into(), json!(meta.title));
    m.insert("live".into(), json!(false));
    m.insert("scenarios".into(), scenarios(&meta.scenarios));
    m.insert("sources".into(), json!(meta.sources));
    m.insert(
        "started".into(),
        json!(meta.started.map(wload_units::rfc3339)),
    );
    m.insert(
        "generated".into(),
        json!(wload_units::rfc3339(SystemTime::now())),
    );
    m.insert("timeline".into(), timeline.to_json());
    m.insert("distribution".into(), distribution(&report.snapshot));
    m.insert("metrics_kinds".into(), kinds(&report.metrics));
    Value::Object(m)
}

/// Each metric's type, for the metrics table's columns.
pub fn kinds(metrics: &[MetricDef]) -> Value {
    Value::Object(
        metrics
            .iter()
            .map(|d| (d.name.clone(), json!(d.kind.as_str())))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use wload_metrics::{Recorder, Registry, TagSet};

    fn tags(pairs: &[(&str, &str)]) -> wload_metrics::Tags {
        Arc::new(TagSet::new(pairs.iter().copied()))
    }

    fn report(snapshot: Snapshot, registry: &Registry) -> Report {
        Report {
            snapshot,
            metrics: registry.all(),
            elapsed: Duration::from_secs(2),
            failures: (Vec::new(), 0),
            interrupted: 0,
            thresholds: Vec::new(),
            trend_stats: wload_output::default_trend_stats(),
            clock: None,
        }
    }

    #[test]
    fn requests_are_one_row_per_name_with_statuses_errors_and_durations() {
        let rec = Recorder::new(Arc::new(Registry::new()));
        let ok = tags(&[("name", "home"), ("method", "GET"), ("status", "200")]);
        let missing = tags(&[("name", "home"), ("method", "GET"), ("status", "404")]);
        let refused = tags(&[
            ("name", "api"),
            ("method", "POST"),
            ("status", "0"),
            ("error_code", "1211"),
        ]);
        for _ in 0..3 {
            rec.record(
                &ok,
                &[
                    (Builtin::HttpReqs.id(), 1.0),
                    (Builtin::HttpReqFailed.id(), 0.0),
                ],
            );
            rec.record_nanos(&ok, &[(Builtin::HttpReqDuration.id(), 2_000_000)]);
        }
        rec.record(
            &missing,
            &[
                (Builtin::HttpReqs.id(), 1.0),
                (Builtin::HttpReqFailed.id(), 1.0),
            ],
        );
        rec.record(
            &refused,
            &[
                (Builtin::HttpReqs.id(), 1.0),
                (Builtin::HttpReqFailed.id(), 1.0),
            ],
        );
        let rows = requests(&rec.snapshot());
        let rows = rows.as_array().unwrap();
        assert_eq!(rows.len(), 2, "{rows:#?}");
        assert_eq!(rows[0]["name"], "api");
        assert_eq!(rows[0]["errors"]["1211"], 1.0);
        assert_eq!(rows[0]["failed"], 1);
        assert_eq!(rows[1]["name"], "home");
        assert_eq!(rows[1]["count"], 4.0);
        assert_eq!(rows[1]["statuses"]["200"], 3.0);
        assert_eq!(rows[1]["statuses"]["404"], 1.0);
        assert_eq!(rows[1]["failed"], 1);
        assert_eq!(rows[1]["duration"]["count"], 3);
        assert_eq!(rows[1]["duration"]["p(95)"], 2.0);
    }

    #[test]
    fn the_distribution_counts_every_sample_once() {
        let mut t = TrendSink::new(true);
        for ms in [1u64, 2, 2, 3, 10, 50, 50, 200] {
            t.add_nanos(ms * 1_000_000);
        }
        let d = distribution_of(&t);
        let counts: u64 = d["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .sum();
        assert_eq!(counts, 8);
        let edges = d["edges"].as_array().unwrap();
        assert_eq!(edges.len(), BINS + 1);
        assert!((edges[0].as_f64().unwrap() - 1.0).abs() < 0.01, "{edges:?}");
        assert!(
            (edges[BINS].as_f64().unwrap() - 200.0).abs() < 0.5,
            "{edges:?}"
        );
    }

    #[test]
    fn a_point_has_rates_per_second_of_its_interval() {
        let registry = Arc::new(Registry::new());
        let rec = Recorder::new(registry.clone());
        let t = tags(&[("scenario", "default")]);
        for _ in 0..10 {
            rec.record(
                &t,
                &[
                    (Builtin::HttpReqs.id(), 1.0),
                    (Builtin::Iterations.id(), 1.0),
                ],
            );
        }
        rec.record(
            &t,
            &[(Builtin::Checks.id(), 1.0), (Builtin::Checks.id(), 0.0)],
        );
        let snap = rec.snapshot();
        let vus = [ScenarioVus {
            name: "default".into(),
            active: 3,
        }];
        let p = point(&snap, 1.0, 3.0, &vus);
        assert_eq!(p["t"], 3.0);
        assert_eq!(p["reqs"], 10.0);
        assert_eq!(p["reqs_rate"], 5.0);
        assert_eq!(p["iterations_rate"], 5.0);
        assert_eq!(p["scenario_vus"]["default"], 3);
        assert_eq!(p["checks_pass"], 1);
        assert_eq!(p["checks_fail"], 1);
        let m = model(
            &report(snap, &registry),
            &Timeline { points: vec![p] },
            &Meta::default(),
        );
        assert_eq!(m["summary"]["metrics"]["http_reqs"]["count"], 10.0);
        assert_eq!(m["timeline"].as_array().unwrap().len(), 1);
    }
}
