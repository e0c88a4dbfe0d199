//! `wload merge FILE…`: read `--out hdr` interval logs from any number of
//! runs or machines and add their histograms per trend metric and tag
//! set. HdrHistograms add exactly, so the merged percentiles are those of
//! one histogram of every request (within its 3 significant digits),
//! unlike averaging percentiles. The result is a [`Report`] that the
//! summary and `--summary-export` print as for a run, plus one row per
//! tag set.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use serde_json::Value;

use super::stream::tag::{self, SeriesTag};
use super::{Report, TREND_STATS, trend_stat};
use wload_metrics::{MetricKind, Registry, Sink, Snapshot, TagSet, TrendSink};
use wload_units::format::{millis, number};

/// The merged logs.
pub struct Merged {
    pub report: Report,
    pub files: usize,
    pub intervals: usize,
}

/// The statistics `wload merge` shows unless `--summary-trend-stats` says
/// otherwise: the count, then the run summary's.
pub fn default_stats() -> Vec<String> {
    std::iter::once("count")
        .chain(TREND_STATS)
        .map(str::to_owned)
        .collect()
}

/// Series key: metric, unit, tags (sorted, for a stable order).
type Key = (String, bool, String);

/// Read and merge every file.
pub fn merge(files: &[PathBuf], trend_stats: Vec<String>) -> Result<Merged> {
    let mut series: BTreeMap<Key, (TagSet, Histogram<u64>)> = BTreeMap::new();
    let mut intervals = 0;
    let (mut first, mut last) = (f64::INFINITY, f64::NEG_INFINITY);
    for path in files {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let mut base = 0.0;
        for entry in IntervalLogIterator::new(&bytes) {
            let entry = entry.map_err(|e| {
                anyhow::anyhow!(
                    "{} is not an HdrHistogram interval log ({e:?}); write one with `wload run --out hdr=FILE`",
                    path.display()
                )
            })?;
            let interval = match entry {
                LogEntry::BaseTime(t) => {
                    base = t.as_secs_f64();
                    continue;
                }
                LogEntry::StartTime(_) => continue,
                LogEntry::Interval(i) => i,
            };
            intervals += 1;
            let start = base + interval.start_timestamp().as_secs_f64();
            first = first.min(start);
            last = last.max(start + interval.duration().as_secs_f64());
            let Some(text) = interval.tag() else {
                bail!(
                    "{}: an interval has no tag; only logs of `wload run --out hdr=FILE` name their metric",
                    path.display()
                );
            };
            let SeriesTag {
                metric,
                is_time,
                tags,
            } = tag::decode(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            let hist = decode(path, interval.encoded_histogram())?;
            let key = (metric, is_time, sort_key(&tags));
            let slot = match series.get_mut(&key) {
                Some((_, h)) => h,
                None => {
                    let empty = Histogram::new(3).context("an HdrHistogram of 3 digits")?;
                    &mut series.entry(key).or_insert((tags, empty)).1
                }
            };
            slot.add(&hist)
                .with_context(|| format!("{}: cannot add a histogram", path.display()))?;
        }
    }
    if intervals == 0 {
        bail!("no intervals in {}: nothing to merge", list(files));
    }

    let registry = Registry::new();
    let mut snapshot = Snapshot::default();
    let mut units: BTreeMap<String, bool> = BTreeMap::new();
    for ((metric, is_time, _), (tags, hist)) in series {
        if let Some(other) = units
            .insert(metric.clone(), is_time)
            .filter(|u| *u != is_time)
        {
            bail!(
                "metric {metric} is a time trend in some logs and a plain one in others ({} vs {})",
                if other { "ns" } else { "milli" },
                if is_time { "ns" } else { "milli" }
            );
        }
        let id = match registry.id_of(&metric) {
            Some(id) if registry.kind(id) == Some(MetricKind::Trend) => id,
            Some(_) => {
                bail!("metric {metric} is not a trend in wload, yet a log has histograms of it")
            }
            None => registry
                .define(&metric, MetricKind::Trend, is_time)
                .map_err(|e| anyhow::anyhow!(e))?,
        };
        snapshot.series.insert(
            (id, Arc::new(tags)),
            Sink::Trend(TrendSink::from_histogram(hist, is_time)),
        );
    }
    let span = if last > first { last - first } else { 0.0 };
    // The timestamps come from the files: a log's BaseTime may be any
    // number, too large for a Duration (from_secs_f64 panicked).
    let elapsed = Duration::try_from_secs_f64(span).map_err(|_| {
        anyhow::anyhow!(
            "the intervals of {} span {span:e} seconds: their timestamps are not those of runs",
            list(files)
        )
    })?;
    Ok(Merged {
        report: Report {
            snapshot,
            metrics: registry.all(),
            elapsed,
            failures: (Vec::new(), 0),
            interrupted: 0,
            thresholds: Vec::new(),
            trend_stats,
        },
        files: files.len(),
        intervals,
    })
}

fn decode(path: &Path, encoded: &str) -> Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .with_context(|| format!("{}: an interval's histogram is not base64", path.display()))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| anyhow::anyhow!("{}: cannot decode a histogram: {e:?}", path.display()))
}

fn sort_key(tags: &TagSet) -> String {
    tags.iter()
        .map(|(k, v)| format!("{k}\u{1}{v}"))
        .collect::<Vec<_>>()
        .join("\u{2}")
}

fn list(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `name{k:v,k:v}`, k6's way of naming a sub-metric.
pub fn series_name(name: &str, tags: &TagSet) -> String {
    let inner: Vec<String> = tags.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    format!("{name}{{{}}}", inner.join(","))
}

/// Every series with its name, in metric then tag order.
fn rows(report: &Report) -> Vec<(String, bool, &TrendSink)> {
    let mut rows: Vec<(String, bool, &TrendSink)> = report
        .snapshot
        .series
        .iter()
        .filter_map(|((id, tags), sink)| {
            let def = report.metrics.get(*id as usize)?;
            let Sink::Trend(t) = sink else { return None };
            let is_time = def.value == wload_metrics::ValueKind::Time;
            Some((series_name(&def.name, tags), is_time, t))
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}

/// The terminal text: the run summary's layout for the metrics, then one
/// row per tag set.
pub fn render(merged: &Merged) -> String {
    let report = &merged.report;
    let mut out = format!(
        "\n  merged {} interval histograms from {} file{} ({} span)\n",
        merged.intervals,
        merged.files,
        if merged.files == 1 { "" } else { "s" },
        wload_units::format::duration_short(Duration::from_secs(report.elapsed.as_secs())),
    );
    out.push_str(&super::summary::render(report));
    // One series per two lines: tag sets are too long for a dotted column.
    let _ = writeln!(out, "    BY TAG SET");
    for (name, is_time, t) in rows(report) {
        let stats: Vec<String> = report
            .trend_stats
            .iter()
            .map(|s| {
                let v = trend_stat(t, s);
                let shown = if s == "count" || !is_time {
                    number(v, 2)
                } else {
                    millis(v)
                };
                format!("{s}={shown:<9}")
            })
            .collect();
        let _ = writeln!(out, "    {name}\n      ↳ {}", stats.join(" ").trim_end());
    }
    out.push('\n');
    out
}

/// The `--summary-export` document: the run's layout, with one more entry
/// per tag set under `metrics."name{k:v,…}"`.
pub fn to_json(merged: &Merged) -> Value {
    let report = &merged.report;
    let mut doc = super::export::to_json(report);
    if let Some(metrics) = doc.get_mut("metrics").and_then(Value::as_object_mut) {
        for (name, _, t) in rows(report) {
            let mut m = serde_json::Map::new();
            for stat in &report.trend_stats {
                m.insert(stat.clone(), serde_json::json!(trend_stat(t, stat)));
            }
            metrics.insert(name, Value::Object(m));
        }
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{IntervalView, OutSpec, Outputs};
    use std::time::SystemTime;
    use wload_metrics::{Builtin, Recorder, Tags};

    /// Write an hdr log of `values` (ns) recorded over `rounds` intervals.
    fn write_log(path: &Path, tags: &Tags, values: &[u64], rounds: usize) {
        let rec = Recorder::new(Arc::new(Registry::new()));
        let mut outputs = Outputs::open(&[OutSpec::Hdr(path.to_owned())], SystemTime::now())
            .expect("open the log");
        let metrics = rec.registry().all();
        for chunk in values.chunks(values.len().div_ceil(rounds)) {
            for v in chunk {
                rec.record_nanos(tags, &[(Builtin::HttpReqDuration.id(), *v)]);
            }
            rec.record(tags, &[(Builtin::HttpReqs.id(), 1.0)]);
            let interval = rec.drain();
            let view = IntervalView {
                interval: &interval,
                start: interval.start.as_secs_f64(),
                end: interval.end.as_secs_f64(),
                time: 0.0,
                metrics: &metrics,
            };
            outputs.write(&view);
        }
        outputs.finish().expect("finish the log");
    }

    #[test]
    fn absurd_timestamps_are_an_error_not_a_panic() {
        let dir = std::env::temp_dir().join(format!("wload-merge-time-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("far.hlog");
        let tags: Tags = Arc::new(TagSet::new([("method", "GET")]));
        write_log(&path, &tags, &[1_000_000, 2_000_000], 2);
        let text = std::fs::read_to_string(&path).unwrap();
        let base = text
            .lines()
            .find(|l| l.starts_with("#[BaseTime: "))
            .expect("a BaseTime line")
            .to_owned();
        // The largest base and start the log format holds (u64 seconds):
        // intervals 3.7e19 seconds after those of the run.
        let far = text
            .replace(
                &base,
                "#[BaseTime: 18446744073709551615.000 (seconds since epoch)]",
            )
            .replace(",0.000,0.000,", ",18446744073709551615.000,0.000,");
        std::fs::write(&path, format!("{text}{far}")).unwrap();
        let err = merge(&[path], default_stats()).err().expect("an error");
        assert!(
            err.to_string()
                .contains("their timestamps are not those of runs"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn merging_logs_equals_one_histogram_of_all_values() {
        let dir = std::env::temp_dir().join(format!("wload-merge-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let get: Tags = Arc::new(TagSet::new([("method", "GET"), ("name", "a, b")]));
        let post: Tags = Arc::new(TagSet::new([("method", "POST")]));
        let a: Vec<u64> = (0..3000u64)
            .map(|i| 1_000_000 + i * 997 % 5_000_000)
            .collect();
        let b: Vec<u64> = (0..5000u64)
            .map(|i| 3_000_000 + i * 7919 % 40_000_000)
            .collect();
        let c: Vec<u64> = (0..700u64).map(|i| 500_000 + i * 13).collect();
        write_log(&dir.join("a.hlog"), &get, &a, 4);
        write_log(&dir.join("b.hlog"), &get, &b, 7);
        write_log(&dir.join("c.hlog"), &post, &c, 2);
        let files: Vec<PathBuf> = ["a", "b", "c"]
            .iter()
            .map(|f| dir.join(format!("{f}.hlog")))
            .collect();
        let merged = merge(&files, default_stats()).unwrap();
        assert_eq!(merged.intervals, 4 + 7 + 2);

        let mut all_get = TrendSink::new(true);
        for v in a.iter().chain(&b) {
            all_get.add_nanos(*v);
        }
        let id = Builtin::HttpReqDuration.id();
        let got = match merged.report.snapshot.series.get(&(id, get.clone())) {
            Some(Sink::Trend(t)) => t.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(got.count, all_get.count);
        for p in [0.0, 50.0, 90.0, 95.0, 99.0, 99.9, 100.0] {
            let (x, y) = (got.percentile(p), all_get.percentile(p));
            assert!((x - y).abs() <= y * 1e-3, "p{p}: merged {x} vs {y}");
        }
        assert!((got.avg() - all_get.avg()).abs() <= all_get.avg() * 1e-3);
        // The metric over both tag sets, and the per-tag-set export keys.
        match merged.report.snapshot.metric(id) {
            Some(Sink::Trend(t)) => assert_eq!(t.count, 3000 + 5000 + 700),
            other => panic!("{other:?}"),
        }
        let doc = to_json(&merged);
        assert_eq!(doc["metrics"]["http_req_duration"]["count"], 8700.0);
        assert_eq!(
            doc["metrics"]["http_req_duration{method:POST}"]["count"],
            700.0
        );
        assert_eq!(
            doc["metrics"]["http_req_duration{method:GET,name:a, b}"]["count"],
            8000.0
        );
        let text = render(&merged);
        assert!(text.contains("http_req_duration{method:POST}"), "{text}");

        std::fs::write(dir.join("bad.hlog"), "not a log\n").unwrap();
        let err = merge(&[dir.join("bad.hlog")], default_stats())
            .err()
            .unwrap();
        assert!(format!("{err:#}").contains("bad.hlog"), "{err:#}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
