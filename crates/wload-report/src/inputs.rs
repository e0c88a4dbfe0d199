//! `wload report [--out FILE.html] INPUTS…`: the report of a run from
//! what it saved. The figures come from shard summaries (merged as `wload
//! merge` merges them: the report of a distributed run, or of one run's
//! `--shard-summary`) or from a `--summary-export` file, shown as they
//! are; the charts over time from `--out json` files (rates, VUs, failed
//! requests, phases, checks) and `--out hdr` logs (percentiles over time
//! and the latency distribution, exactly: their histograms add).

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use serde_json::{Map, Value, json};

use wload_metrics::TrendSink;
use wload_output::merge;
use wload_output::shard;
use wload_output::stream::tag;

use crate::model::{self, Meta, Timeline};

/// What one input file is.
enum Kind {
    Shard,
    Export(Value),
    JsonLines(Vec<Value>),
    Hdr,
}

fn kind(path: &Path, bytes: &[u8]) -> Result<Kind> {
    let text = String::from_utf8_lossy(bytes);
    if let Ok(doc) = serde_json::from_str::<Value>(&text) {
        if doc["format"] == shard::FORMAT {
            return Ok(Kind::Shard);
        }
        if doc.get("metrics").is_some() && doc.get("root_group").is_some() {
            return Ok(Kind::Export(doc));
        }
    }
    if text.trim_start().starts_with('{') {
        let lines = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .enumerate()
            .map(|(i, l)| {
                serde_json::from_str::<Value>(l)
                    .ok()
                    .filter(|v| v.get("metric").is_some() && v.get("values").is_some())
                    .with_context(|| {
                        format!(
                            "{} line {}: not a line of `wload run --out json=FILE`",
                            path.display(),
                            i + 1
                        )
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        return Ok(Kind::JsonLines(lines));
    }
    if text.starts_with('#') || text.contains("StartTime") {
        return Ok(Kind::Hdr);
    }
    bail!(
        "{} is none of what `wload report` reads: a --summary-export file, a --shard-summary, \
         an --out json file or an --out hdr log",
        path.display()
    )
}

/// Build the model of the report from `files`.
pub fn model(files: &[PathBuf]) -> Result<Value> {
    let mut shards = Vec::new();
    let mut export = None;
    let mut lines = Vec::new();
    let mut hdr = Vec::new();
    for path in files {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        match kind(path, &bytes)? {
            Kind::Shard => shards.push((path.clone(), shard::read(path, &bytes)?)),
            Kind::Export(doc) => {
                if export.replace(doc).is_some() {
                    bail!(
                        "two --summary-export files: a report shows one run; give one (or the shards' summaries)"
                    );
                }
            }
            Kind::JsonLines(mut l) => lines.append(&mut l),
            Kind::Hdr => hdr.push((path.clone(), bytes)),
        }
    }
    let mut meta = Meta {
        sources: files.iter().map(|p| p.display().to_string()).collect(),
        ..Meta::default()
    };
    let mut timeline = from_json_lines(&lines);
    let (percentiles, distribution) = from_hdr(&hdr)?;
    let mut m = match (shards.is_empty(), export) {
        (false, Some(_)) => bail!(
            "shard summaries and a --summary-export: give the shards (their merge is the run's summary) or the export"
        ),
        (false, None) => {
            let merged = merge::merge_shards(shards, None)?;
            if let Some(first) = merged.shards.first() {
                meta.title = first.test.clone();
                meta.started = Some(first.started);
            }
            let mut m = match model::model(&merged.report, &Timeline::default(), &meta) {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            m.insert(
                "shards".into(),
                json!(
                    merged
                        .shards
                        .iter()
                        .map(|s| s.path.display().to_string())
                        .collect::<Vec<_>>()
                ),
            );
            m
        }
        (true, Some(doc)) => from_export(doc, &lines, &meta),
        (true, None) => bail!(
            "no summary among {}: give the run's --summary-export file or its --shard-summary files \
             (with --out json and hdr files for the charts over time)",
            files
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    for p in &mut timeline.points {
        let key = key_of(p["t"].as_f64().unwrap_or(0.0));
        if let Some(q) = percentiles.get(&key) {
            for (k, v) in q {
                p.insert(k.clone(), v.clone());
            }
        }
    }
    if timeline.points.is_empty() {
        // Percentiles over time from hdr logs alone.
        for (key, q) in &percentiles {
            let mut p = q.clone();
            p.insert("t".into(), json!(*key as f64 / 1000.0));
            timeline.points.push(p);
        }
    }
    m.insert("timeline".into(), timeline.to_json());
    if !distribution.is_null() || !m.contains_key("distribution") {
        m.insert("distribution".into(), distribution);
    }
    Ok(Value::Object(m))
}

/// An interval's end in milliseconds: the key that lines json points up
/// with hdr intervals.
fn key_of(t: f64) -> i64 {
    (t * 1000.0).round() as i64
}

/// The figures of a summary export, as written.
fn from_export(doc: Value, lines: &[Value], meta: &Meta) -> Map<String, Value> {
    let mut thresholds = Vec::new();
    if let Some(metrics) = doc["metrics"].as_object() {
        for (key, m) in metrics {
            if let Some(th) = m["thresholds"].as_object() {
                for (source, verdict) in th {
                    thresholds.push(json!({
                        "key": key,
                        "source": source,
                        "ok": verdict["ok"],
                        "observed": Value::Null,
                    }));
                }
            }
        }
    }
    let trend_stats: Vec<String> = doc["metrics"]["http_req_duration"]
        .as_object()
        .map(|m| m.keys().filter(|k| *k != "thresholds").cloned().collect())
        .unwrap_or_default();
    let elapsed = doc["state"]["testRunDurationMs"].as_f64().unwrap_or(0.0) / 1000.0;
    let mut m = Map::new();
    m.insert("summary".into(), doc);
    m.insert("thresholds".into(), Value::Array(thresholds));
    m.insert("requests".into(), requests_from_lines(lines));
    m.insert("groups".into(), groups_from_lines(lines));
    m.insert("failures".into(), Value::Null);
    m.insert("trend_stats".into(), json!(trend_stats));
    m.insert("elapsed".into(), json!(elapsed));
    m.insert("title".into(), json!(meta.title));
    m.insert("live".into(), json!(false));
    m.insert("scenarios".into(), json!([]));
    m.insert("sources".into(), json!(meta.sources));
    m.insert("started".into(), Value::Null);
    m.insert(
        "generated".into(),
        json!(wload_units::rfc3339(std::time::SystemTime::now())),
    );
    m
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// Request rows from json lines: counts, statuses, error codes and
/// failures add up exactly; of the durations, the count, the average
/// (their sums add) and the max (percentiles need the histograms: a
/// shard summary has them).
fn requests_from_lines(lines: &[Value]) -> Value {
    #[derive(Default)]
    struct Row {
        count: f64,
        statuses: BTreeMap<String, f64>,
        errors: BTreeMap<String, f64>,
        failed: f64,
        n: f64,
        sum: f64,
        max: f64,
    }
    let mut rows: BTreeMap<(String, String), Row> = BTreeMap::new();
    for l in lines {
        let tags = &l["tags"];
        let key = (
            tags["name"].as_str().unwrap_or("").to_owned(),
            tags["method"].as_str().unwrap_or("").to_owned(),
        );
        let v = &l["values"];
        match l["metric"].as_str() {
            Some("http_reqs") => {
                let row = rows.entry(key).or_default();
                row.count += num(&v["sum"]);
                *row.statuses
                    .entry(tags["status"].as_str().unwrap_or("").to_owned())
                    .or_default() += num(&v["sum"]);
                if let Some(code) = tags["error_code"].as_str() {
                    *row.errors.entry(code.to_owned()).or_default() += num(&v["sum"]);
                }
            }
            Some("http_req_failed") => rows.entry(key).or_default().failed += num(&v["passes"]),
            Some("http_req_duration") => {
                let row = rows.entry(key).or_default();
                row.n += num(&v["count"]);
                row.sum += num(&v["sum"]);
                row.max = row.max.max(num(&v["max"]));
            }
            _ => {}
        }
    }
    Value::Array(
        rows.into_iter()
            .filter(|(_, r)| r.count > 0.0)
            .map(|((name, method), r)| {
                json!({
                    "name": name,
                    "method": method,
                    "count": r.count,
                    "failed": r.failed,
                    "statuses": r.statuses,
                    "errors": r.errors,
                    "duration": (r.n > 0.0).then(|| json!({
                        "count": r.n,
                        "avg": r.sum / r.n,
                        "max": r.max,
                    })),
                })
            })
            .collect(),
    )
}

/// Group rows from json lines: count, average and max of `group_duration`.
fn groups_from_lines(lines: &[Value]) -> Value {
    let mut by_path: BTreeMap<String, (f64, f64, f64)> = BTreeMap::new();
    for l in lines.iter().filter(|l| l["metric"] == "group_duration") {
        let Some(path) = l["tags"]["group"].as_str() else {
            continue;
        };
        let v = &l["values"];
        let e = by_path.entry(path.to_owned()).or_default();
        e.0 += num(&v["count"]);
        e.1 += num(&v["sum"]);
        e.2 = e.2.max(num(&v["max"]));
    }
    Value::Array(
        by_path
            .into_iter()
            .map(|(path, (n, sum, max))| {
                json!({ "path": path, "duration": { "count": n, "avg": if n > 0.0 { sum / n } else { 0.0 }, "max": max } })
            })
            .collect(),
    )
}

/// One point per interval of json lines: the same figures as a run's
/// own timeline, where the lines hold them. Percentiles of one interval
/// are kept only when a single series had requests in it (otherwise they
/// do not add; the hdr log's do).
fn from_json_lines(lines: &[Value]) -> Timeline {
    let mut by_end: BTreeMap<i64, Vec<&Value>> = BTreeMap::new();
    for l in lines {
        by_end.entry(key_of(num(&l["end"]))).or_default().push(l);
    }
    let mut timeline = Timeline::default();
    for group in by_end.values() {
        let (start, end) = (num(&group[0]["start"]), num(&group[0]["end"]));
        let seconds = (end - start).max(0.0);
        let per_second = |v: f64| if seconds > 0.0 { v / seconds } else { 0.0 };
        let sum_of = |metric: &str, field: &str| -> f64 {
            group
                .iter()
                .filter(|l| l["metric"] == metric)
                .map(|l| num(&l["values"][field]))
                .sum()
        };
        let mut p = Map::new();
        p.insert("t".into(), json!(end));
        let reqs = sum_of("http_reqs", "sum");
        p.insert("reqs".into(), json!(reqs));
        p.insert("reqs_rate".into(), json!(per_second(reqs)));
        let iterations = sum_of("iterations", "sum");
        p.insert("iterations".into(), json!(iterations));
        p.insert("iterations_rate".into(), json!(per_second(iterations)));
        let failed = sum_of("http_req_failed", "passes");
        let total = failed + sum_of("http_req_failed", "fails");
        p.insert("failed".into(), json!(failed));
        p.insert(
            "failed_rate".into(),
            json!(if total > 0.0 { failed / total } else { 0.0 }),
        );
        if let Some(v) = group.iter().find(|l| l["metric"] == "vus") {
            p.insert("vus".into(), v["values"]["value"].clone());
        }
        p.insert("scenario_vus".into(), json!({}));
        let durations: Vec<&&Value> = group
            .iter()
            .filter(|l| l["metric"] == "http_req_duration")
            .collect();
        let n = sum_of("http_req_duration", "count");
        if n > 0.0 {
            p.insert("avg".into(), json!(sum_of("http_req_duration", "sum") / n));
            let max = durations
                .iter()
                .map(|l| num(&l["values"]["max"]))
                .fold(0.0, f64::max);
            p.insert("max".into(), json!(max));
        }
        if let [one] = durations.as_slice() {
            for (name, stat) in [
                ("p50", "med"),
                ("p90", "p(90)"),
                ("p95", "p(95)"),
                ("p99", "p(99)"),
            ] {
                p.insert(name.into(), one["values"][stat].clone());
            }
        }
        for (name, metric) in [
            ("blocked", "http_req_blocked"),
            ("connecting", "http_req_connecting"),
            ("tls_handshaking", "http_req_tls_handshaking"),
            ("sending", "http_req_sending"),
            ("waiting", "http_req_waiting"),
            ("receiving", "http_req_receiving"),
        ] {
            let n = sum_of(metric, "count");
            if n > 0.0 {
                p.insert(name.into(), json!(sum_of(metric, "sum") / n));
            }
        }
        p.insert("checks_pass".into(), json!(sum_of("checks", "passes")));
        p.insert("checks_fail".into(), json!(sum_of("checks", "fails")));
        p.insert(
            "data_received".into(),
            json!(per_second(sum_of("data_received", "sum"))),
        );
        p.insert(
            "data_sent".into(),
            json!(per_second(sum_of("data_sent", "sum"))),
        );
        timeline.points.push(p);
    }
    timeline
}

fn decode(path: &Path, encoded: &str) -> Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .with_context(|| format!("{}: an interval's histogram is not base64", path.display()))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| anyhow::anyhow!("{}: cannot decode a histogram: {e:?}", path.display()))
}

type Percentiles = BTreeMap<i64, Map<String, Value>>;

/// From hdr logs: each interval's `http_req_duration` percentiles (its
/// series' histograms added), keyed by the interval's end, and the
/// distribution of the whole run.
fn from_hdr(logs: &[(PathBuf, Vec<u8>)]) -> Result<(Percentiles, Value)> {
    let mut per_interval: BTreeMap<i64, Histogram<u64>> = BTreeMap::new();
    let mut all: Option<Histogram<u64>> = None;
    for (path, bytes) in logs {
        for entry in IntervalLogIterator::new(bytes) {
            let entry = entry.map_err(|e| {
                anyhow::anyhow!(
                    "{} is not an HdrHistogram interval log ({e:?}); write one with `wload run --out hdr=FILE`",
                    path.display()
                )
            })?;
            let LogEntry::Interval(i) = entry else {
                continue;
            };
            let Some(text) = i.tag() else { continue };
            let series =
                tag::decode(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            if series.metric != "http_req_duration" || !series.is_time {
                continue;
            }
            let hist = decode(path, i.encoded_histogram())?;
            let end = key_of((i.start_timestamp() + i.duration()).as_secs_f64());
            let slot = match per_interval.entry(end) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => e.insert(empty()?),
            };
            slot.add(&hist)
                .with_context(|| format!("{}: cannot add a histogram", path.display()))?;
            let total = match &mut all {
                Some(h) => h,
                None => all.insert(empty()?),
            };
            total
                .add(&hist)
                .with_context(|| format!("{}: cannot add a histogram", path.display()))?;
        }
    }
    let percentiles = per_interval
        .into_iter()
        .map(|(end, h)| {
            let t = TrendSink::from_histogram(h, true);
            let mut p = Map::new();
            for (name, q) in [("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0)] {
                p.insert(name.into(), json!(t.percentile(q)));
            }
            (end, p)
        })
        .collect();
    let distribution = match all {
        Some(h) if !h.is_empty() => model::distribution_of(&TrendSink::from_histogram(h, true)),
        _ => Value::Null,
    };
    Ok((percentiles, distribution))
}

/// An empty histogram that grows to what is added to it.
fn empty() -> Result<Histogram<u64>> {
    let mut h = Histogram::new(3).context("an HdrHistogram of 3 digits")?;
    h.auto(true);
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(end: f64, metric: &str, tags: Value, values: Value) -> Value {
        json!({ "time": 0, "start": end - 1.0, "end": end, "metric": metric, "type": "x", "tags": tags, "values": values })
    }

    #[test]
    fn json_lines_add_up_per_interval_and_per_request_name() {
        let get = json!({ "name": "home", "method": "GET", "status": "200" });
        let gone = json!({ "name": "home", "method": "GET", "status": "404" });
        let lines = vec![
            line(
                1.0,
                "http_reqs",
                get.clone(),
                json!({ "count": 3, "sum": 3, "rate": 3 }),
            ),
            line(
                1.0,
                "http_reqs",
                gone.clone(),
                json!({ "count": 1, "sum": 1, "rate": 1 }),
            ),
            line(
                1.0,
                "http_req_failed",
                gone.clone(),
                json!({ "passes": 1, "fails": 0, "rate": 1 }),
            ),
            line(
                1.0,
                "http_req_duration",
                get.clone(),
                json!({ "count": 3, "sum": 6, "max": 3, "med": 2, "p(90)": 3, "p(95)": 3, "p(99)": 3 }),
            ),
            line(
                2.0,
                "http_reqs",
                get.clone(),
                json!({ "count": 2, "sum": 2, "rate": 2 }),
            ),
            line(
                2.0,
                "http_req_duration",
                get.clone(),
                json!({ "count": 1, "sum": 4, "max": 4, "med": 4, "p(90)": 4, "p(95)": 4, "p(99)": 4 }),
            ),
            line(
                2.0,
                "http_req_duration",
                gone.clone(),
                json!({ "count": 1, "sum": 2, "max": 2, "med": 2, "p(90)": 2, "p(95)": 2, "p(99)": 2 }),
            ),
        ];
        let t = from_json_lines(&lines);
        assert_eq!(t.points.len(), 2);
        assert_eq!(t.points[0]["reqs"], 4.0);
        assert_eq!(t.points[0]["failed_rate"], 1.0);
        assert_eq!(t.points[0]["avg"], 2.0);
        // One series of durations: its percentiles are the interval's.
        assert_eq!(t.points[0]["p95"], 3);
        // Two: percentiles do not add, and are left out.
        assert_eq!(t.points[1]["avg"], 3.0);
        assert!(t.points[1].get("p95").is_none());
        let rows = requests_from_lines(&lines);
        assert_eq!(rows[0]["count"], 6.0);
        assert_eq!(rows[0]["statuses"]["200"], 5.0);
        assert_eq!(rows[0]["statuses"]["404"], 1.0);
        assert_eq!(rows[0]["failed"], 1.0);
        assert_eq!(rows[0]["duration"]["avg"], 12.0 / 5.0);
        assert_eq!(rows[0]["duration"]["max"], 4.0);
    }

    #[test]
    fn inputs_are_told_apart_and_others_refused() {
        let p = Path::new("x");
        assert!(matches!(
            kind(p, br#"{"format":"wload-shard-summary"}"#),
            Ok(Kind::Shard)
        ));
        assert!(matches!(
            kind(p, br#"{"metrics":{},"root_group":{}}"#),
            Ok(Kind::Export(_))
        ));
        let line = r#"{"metric":"vus","values":{"value":1},"start":0,"end":1}"#;
        assert!(
            matches!(kind(p, format!("{line}\n{line}\n").as_bytes()), Ok(Kind::JsonLines(l)) if l.len() == 2)
        );
        assert!(matches!(
            kind(p, b"#[StartTime: 1 (seconds since epoch)]\n"),
            Ok(Kind::Hdr)
        ));
        let err = kind(p, b"<html>")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("--summary-export"), "{err}");
        let err = kind(p, b"{\"metric\":1}\nnot json\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("--out json"), "{err}");
    }
}
