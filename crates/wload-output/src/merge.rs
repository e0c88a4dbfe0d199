//! `wload merge FILE…`: one result from the outputs of several runs or
//! machines.
//!
//! Shard summaries (`wload run --shard-summary FILE`, [`super::shard`])
//! of the segments of one test merge into the [`Report`] one process
//! running the whole test would have made: counters, rates and checks
//! add, trends add their HdrHistograms, the thresholds are evaluated once
//! on the merged data, and the run summary and `--summary-export` print it
//! with the very code a run uses.
//!
//! `--out hdr` interval logs merge per trend metric and tag set. Adding
//! HdrHistograms is exact, so the merged percentiles are those of one
//! histogram of every request (within its 3 significant digits), unlike
//! averaging percentiles; the logs hold nothing but trends, so that is
//! all such a merge shows, plus one row per tag set.
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use serde_json::Value;

use super::shard::{self, Fraction, Part, Shard};
use super::stream::tag::{self, SeriesTag};
use super::{Report, RunClock, TREND_STATS, trend_stat};
use wload_metrics::threshold::{self, Threshold};
use wload_metrics::{
    Builtin, MetricId, MetricKind, Registry, Sink, Snapshot, TagSet, TrendSink, ValueKind,
};
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
            clock: None,
        },
        files: files.len(),
        intervals,
    })
}

/// What `wload merge` was given: interval logs or shard summaries (never
/// both: a log's trends are also in its run's summary).
pub enum Input {
    Logs(Merged),
    Shards(MergedShards),
}

/// Read `files`, shard summaries or hdr logs, and merge them.
/// `trend_stats`: `--summary-trend-stats`, if given.
pub fn merge_files(files: &[PathBuf], trend_stats: Option<Vec<String>>) -> Result<Input> {
    let mut shards = Vec::new();
    let mut logs = Vec::new();
    for path in files {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        if shard::looks_like(&bytes) {
            shards.push((path.clone(), shard::read(path, &bytes)?));
        } else {
            logs.push(path.clone());
        }
    }
    match (shards.is_empty(), logs.is_empty()) {
        (true, _) => Ok(Input::Logs(merge(
            &logs,
            trend_stats.unwrap_or_else(default_stats),
        )?)),
        (false, true) => Ok(Input::Shards(merge_shards(shards, trend_stats)?)),
        (false, false) => bail!(
            "{} are shard summaries and {} hdr logs: merge one kind (a run's shard summary already holds its trends)",
            list(&shards.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>()),
            list(&logs)
        ),
    }
}

/// Shard summaries merged into one run's report.
pub struct MergedShards {
    pub report: Report,
    /// Each shard as read, in segment order.
    pub shards: Vec<ShardLine>,
    /// Parts of the test no shard ran, in order.
    pub gaps: Vec<Part>,
    /// 99 when a threshold fails on the merged data; a shard's own exit
    /// code when it failed otherwise (setup or teardown, Ctrl-C).
    pub exit_code: u8,
}

/// One shard of a merge.
pub struct ShardLine {
    pub path: PathBuf,
    /// The test as the shard's run named it.
    pub test: String,
    pub part: Part,
    pub started: SystemTime,
    /// `started - --start-at`, in seconds (negative if early), when the
    /// shard was given a start time.
    pub skew: Option<f64>,
    pub elapsed: Duration,
    pub exit_code: u8,
}

/// Gauges that count something every shard has its own share of: VUs.
/// One process running the whole test has the sum of the shards' VUs, so
/// these add; any other gauge keeps its latest value across shards.
const SUMMED_GAUGES: [Builtin; 2] = [Builtin::Vus, Builtin::VusMax];

/// a/b < c/d.
fn less(a: Fraction, b: Fraction) -> bool {
    u128::from(a.0) * u128::from(b.1) < u128::from(b.0) * u128::from(a.1)
}

/// Distinct iteration error messages a merge keeps (as a run does).
const MAX_MESSAGES: usize = 100;

fn signed_secs(a: SystemTime, b: SystemTime) -> f64 {
    match a.duration_since(b) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// Merge shard summaries: their segments must not overlap (that would
/// count a part of the test twice), and they must carry the same
/// thresholds (the test's).
pub fn merge_shards(
    mut shards: Vec<(PathBuf, Shard)>,
    trend_stats: Option<Vec<String>>,
) -> Result<MergedShards> {
    shards.sort_by(|(_, a), (_, b)| {
        if less(a.meta.part.from, b.meta.part.from) {
            std::cmp::Ordering::Less
        } else if less(b.meta.part.from, a.meta.part.from) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    let mut gaps = Vec::new();
    let mut covered: Fraction = (0, 1);
    let mut last: Option<&Path> = None;
    for (path, s) in &shards {
        let part = s.meta.part;
        if less(part.from, covered) {
            bail!(
                "{} (segment {part}) overlaps {} (up to {}): the overlap would count twice; merge the shards of one run of the test, each once",
                path.display(),
                last.map_or_else(|| "another shard".to_owned(), |p| p.display().to_string()),
                shard::fraction(covered)
            );
        }
        if less(covered, part.from) {
            gaps.push(Part {
                from: covered,
                to: part.from,
            });
        }
        covered = part.to;
        last = Some(path);
    }
    if less(covered, (1, 1)) {
        gaps.push(Part {
            from: covered,
            to: (1, 1),
        });
    }

    let (first_path, first) = &shards[0];
    for (path, s) in &shards[1..] {
        if s.thresholds != first.thresholds {
            let show = |t: &[Threshold]| {
                t.iter()
                    .map(|t| format!("{}: {}", t.key, t.source))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            bail!(
                "{} and {} have different thresholds ([{}] vs [{}]): are they shards of one test?",
                first_path.display(),
                path.display(),
                show(&first.thresholds),
                show(&s.thresholds)
            );
        }
    }

    let registry = Registry::new();
    let mut series: HashMap<(MetricId, Arc<TagSet>), Sink> = HashMap::new();
    let mut messages: Vec<(String, u64)> = Vec::new();
    let mut not_kept = 0u64;
    let mut interrupted = 0u64;
    let summed: Vec<MetricId> = SUMMED_GAUGES.iter().map(|b| b.id()).collect();
    for (path, s) in &shards {
        for def in &s.metrics {
            let is_time = def.value == ValueKind::Time;
            let known = registry.id_of(&def.name);
            match known.and_then(|id| registry.get(id)) {
                Some(have) if have.kind == def.kind => {}
                Some(have) => bail!(
                    "{}: metric {} is a {} there and a {} in the other shards",
                    path.display(),
                    def.name,
                    def.kind.as_str(),
                    have.kind.as_str()
                ),
                None if def.builtin => bail!(
                    "{}: built-in metric {} is unknown to this wload (written by another version?)",
                    path.display(),
                    def.name
                ),
                None => {
                    registry
                        .define(&def.name, def.kind, is_time)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                }
            }
        }
        for (name, tags, sink) in &s.series {
            let id = registry
                .id_of(name)
                .ok_or_else(|| anyhow::anyhow!("{}: series of undefined {name}", path.display()))?;
            match series.get_mut(&(id, Arc::new(tags.clone()))) {
                Some(have) if summed.contains(&id) => add_gauges(have, sink),
                Some(have) => have.merge(sink),
                None => {
                    series.insert((id, Arc::new(tags.clone())), sink.clone());
                }
            }
        }
        let (list, other) = &s.failures;
        not_kept += other;
        for (message, count) in list {
            let kept = messages.len();
            match messages.iter_mut().find(|(m, _)| m == message) {
                Some((_, n)) => *n += count,
                None if kept < MAX_MESSAGES => messages.push((message.clone(), *count)),
                None => not_kept += count,
            }
        }
        interrupted += s.interrupted;
    }

    // The merged run spans from the first shard's start to the last one's
    // end: per-second rates are over that, as they would be over one
    // process's run.
    let start = shards
        .iter()
        .map(|(_, s)| s.clock.started)
        .min()
        .unwrap_or(UNIX_EPOCH);
    let end = shards
        .iter()
        .map(|(_, s)| s.clock.started + s.elapsed)
        .max()
        .unwrap_or(start);
    let elapsed = end.duration_since(start).unwrap_or(Duration::ZERO);
    let start_at = first
        .clock
        .start_at
        .filter(|t| shards.iter().all(|(_, s)| s.clock.start_at == Some(*t)));

    let snapshot = Snapshot { series };
    let thresholds = threshold::evaluate_all(&first.thresholds, &snapshot, &registry, elapsed);
    let failed_otherwise = shards
        .iter()
        .map(|(_, s)| s.meta.exit_code)
        .find(|c| *c != 0 && *c != THRESHOLDS_FAILED);
    let exit_code = match failed_otherwise {
        Some(code) => code,
        None if thresholds.iter().any(|o| !o.verdict.ok) => THRESHOLDS_FAILED,
        None => 0,
    };
    let report = Report {
        snapshot,
        metrics: registry.all(),
        elapsed,
        failures: (messages, not_kept),
        interrupted,
        thresholds,
        trend_stats: trend_stats.unwrap_or_else(|| first.trend_stats.clone()),
        clock: Some(RunClock {
            started: start,
            metrics_zero: UNIX_EPOCH,
            start_at,
        }),
    };
    let lines = shards
        .into_iter()
        .map(|(path, s)| ShardLine {
            part: s.meta.part,
            started: s.clock.started,
            skew: s.clock.start_at.map(|at| signed_secs(s.clock.started, at)),
            elapsed: s.elapsed,
            exit_code: s.meta.exit_code,
            test: s.meta.test,
            path,
        })
        .collect();
    Ok(MergedShards {
        report,
        shards: lines,
        gaps,
        exit_code,
    })
}

/// The k6 exit code of failed thresholds.
const THRESHOLDS_FAILED: u8 = 99;

fn add_gauges(have: &mut Sink, other: &Sink) {
    if let (
        Sink::Gauge { last, min, max, at },
        Sink::Gauge {
            last: l,
            min: mi,
            max: ma,
            at: a,
        },
    ) = (have, other)
    {
        *last += l;
        *min += mi;
        *max += ma;
        *at = (*at).max(*a);
    }
}

fn signed_ms(secs: f64) -> String {
    let ms = millis(secs.abs() * 1e3);
    if secs < 0.0 {
        format!("-{ms}")
    } else {
        format!("+{ms}")
    }
}

/// The terminal text of a shard merge: the shards, how closely they
/// started, then the run summary of the merged report.
pub fn render_shards(merged: &MergedShards) -> String {
    let n = merged.shards.len();
    let coverage = if merged.gaps.is_empty() {
        "the whole test".to_owned()
    } else {
        format!(
            "NOT the whole test: no shard ran {}",
            merged
                .gaps
                .iter()
                .map(Part::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut out = format!(
        "\n  merged {n} shard summar{} ({coverage})\n",
        if n == 1 { "y" } else { "ies" }
    );
    let width = merged
        .shards
        .iter()
        .map(|s| s.part.to_string().len())
        .max()
        .unwrap_or(0);
    for s in &merged.shards {
        let skew = s
            .skew
            .map(|k| format!(" ({} from --start-at)", signed_ms(k)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "    {:<width$}  started {}{skew}, ran {}, exit {}  {}",
            s.part.to_string(),
            wload_units::rfc3339(s.started),
            wload_units::format::duration_short(
                Duration::from_millis(s.elapsed.as_millis() as u64)
            ),
            s.exit_code,
            s.path.display()
        );
    }
    let starts: Vec<SystemTime> = merged.shards.iter().map(|s| s.started).collect();
    if let (Some(first), Some(last)) = (starts.iter().min(), starts.iter().max()) {
        let spread = last.duration_since(*first).unwrap_or(Duration::ZERO);
        let _ = write!(
            out,
            "  starts spread over {} (each shard's own clock)",
            millis(spread.as_secs_f64() * 1e3)
        );
        if let Some(at) = merged.report.clock.and_then(|c| c.start_at) {
            let _ = write!(out, ", asked for {}", wload_units::rfc3339(at));
        }
        let _ = writeln!(
            out,
            "; the merged run spans {}",
            millis(merged.report.elapsed.as_secs_f64() * 1e3)
        );
    }
    let mut tests: Vec<&str> = merged.shards.iter().map(|s| s.test.as_str()).collect();
    tests.sort_unstable();
    tests.dedup();
    if tests.len() > 1 {
        let _ = writeln!(
            out,
            "  note: the shards name different tests ({}): check that they are one test",
            tests.join(", ")
        );
    }
    // One note per exit code: with many shards, one line per shard
    // would bury the summary.
    let mut codes: Vec<u8> = merged.shards.iter().map(|s| s.exit_code).collect();
    codes.sort_unstable();
    codes.dedup();
    for code in codes.into_iter().filter(|c| *c != 0) {
        let parts: Vec<String> = merged
            .shards
            .iter()
            .filter(|s| s.exit_code == code)
            .map(|s| s.part.to_string())
            .collect();
        let (who, its) = match parts.len() {
            1 => (format!("shard {}", parts[0]), "its"),
            _ => (format!("shards {}", parts.join(", ")), "their"),
        };
        let why = match code {
            THRESHOLDS_FAILED => format!(
                "{its} thresholds failed on {its} own share (an abortOnFail one stops a shard early); the verdicts below are on the merged data"
            ),
            105 => "stopped by a signal".to_owned(),
            107 => format!("{its} teardown failed"),
            _ => "see the shard's own output".to_owned(),
        };
        let _ = writeln!(out, "  note: {who} exited {code}: {why}");
    }
    out.push_str(&super::summary::render(&merged.report));
    out
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
        // In ms: whole seconds showed a run shorter than one as "0s".
        millis(report.elapsed.as_secs_f64() * 1e3),
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
    use wload_metrics::{Builtin, Recorder, Tags, untagged};

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
                scenario_vus: &[],
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

    /// One shard of a test: `iterations` iterations of (a request of
    /// `base + i` µs, a check passing unless `i % 7 == 0`, a custom
    /// counter of `i`), for the global iterations `range`.
    fn shard_report(range: std::ops::Range<u64>, thresholds: &[Threshold]) -> Report {
        let rec = Recorder::new(Arc::new(Registry::new()));
        let get: Tags = Arc::new(TagSet::new([("method", "GET")]));
        let check: Tags = Arc::new(TagSet::new([("check", "ok")]));
        let items = rec
            .registry()
            .define("items", MetricKind::Counter, false)
            .unwrap();
        let n = range.end - range.start;
        for i in range {
            // From 1 ms up to ~1 s: the later shards' histograms need a
            // wider range than the first one's.
            rec.record_nanos(
                &get,
                &[(Builtin::HttpReqDuration.id(), 1_000_000 + i * i * 997)],
            );
            rec.record(&get, &[(Builtin::HttpReqs.id(), 1.0), (items, i as f64)]);
            rec.record(
                &check,
                &[(Builtin::Checks.id(), f64::from(u8::from(i % 7 != 0)))],
            );
            rec.record(&untagged(), &[(Builtin::Iterations.id(), 1.0)]);
        }
        rec.record(&untagged(), &[(Builtin::VusMax.id(), n as f64 / 100.0)]);
        let snapshot = rec.snapshot();
        let elapsed = Duration::from_secs(10);
        let outcomes = threshold::evaluate_all(thresholds, &snapshot, rec.registry(), elapsed);
        Report {
            snapshot,
            metrics: rec.registry().all(),
            elapsed,
            failures: (vec![("boom".into(), n / 100)], 0),
            interrupted: n / 500,
            thresholds: outcomes,
            trend_stats: crate::default_trend_stats(),
            clock: Some(RunClock {
                started: UNIX_EPOCH + Duration::from_secs(1_796_135_400),
                metrics_zero: UNIX_EPOCH + Duration::from_secs(1_796_135_399),
                start_at: None,
            }),
        }
    }

    fn thresholds(spec: Value) -> Vec<Threshold> {
        let mut errors = Vec::new();
        let t = threshold::parse_all(&spec, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        t
    }

    /// Write `reports` as shard summaries of `parts` and read them back.
    fn shards_of(reports: &[(Report, Part)]) -> Vec<(PathBuf, Shard)> {
        reports
            .iter()
            .enumerate()
            .map(|(i, (report, part))| {
                let meta = shard::ShardMeta {
                    test: "t.wasm".into(),
                    part: *part,
                    exit_code: if report.thresholds.iter().all(|o| o.verdict.ok) {
                        0
                    } else {
                        99
                    },
                };
                let text = shard::to_json(report, &meta).unwrap().to_string();
                let path = PathBuf::from(format!("shard-{i}.json"));
                let shard = shard::read(&path, text.as_bytes()).unwrap();
                (path, shard)
            })
            .collect()
    }

    fn counter(report: &Report, name: &str) -> f64 {
        let id = report.metrics.iter().position(|d| d.name == name).unwrap() as MetricId;
        match report.snapshot.metric(id) {
            Some(Sink::Counter { sum, .. }) => sum,
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn shards_merge_into_the_report_of_one_process() {
        // Each half has 500 requests: `count>=1000` fails on each alone
        // and passes on both.
        let th = thresholds(serde_json::json!({
            "http_reqs": ["count>=1000"],
            "checks": ["rate>0.8"],
            "http_req_duration": ["p(95)<10000"],
        }));
        let whole = shard_report(0..1000, &th);
        let a = shard_report(0..500, &th);
        let b = shard_report(500..1000, &th);
        assert!(a.thresholds.iter().any(|o| !o.verdict.ok));
        let half = |from, to| Part { from, to };
        let merged = merge_shards(
            shards_of(&[(b, half((1, 2), (1, 1))), (a, half((0, 1), (1, 2)))]),
            None,
        )
        .unwrap();
        assert!(merged.gaps.is_empty());
        assert_eq!(merged.exit_code, 0, "{:?}", merged.report.thresholds);
        assert_eq!(merged.shards[0].part, half((0, 1), (1, 2)));
        let m = &merged.report;
        for name in ["http_reqs", "iterations", "items"] {
            assert_eq!(counter(m, name), counter(&whole, name), "{name}");
        }
        assert_eq!(m.groups(), whole.groups());
        assert_eq!(m.interrupted, whole.interrupted);
        assert_eq!(m.failures, (vec![("boom".to_owned(), 10)], 0));
        let trend = |r: &Report| match r.snapshot.metric(Builtin::HttpReqDuration.id()) {
            Some(Sink::Trend(t)) => t,
            other => panic!("{other:?}"),
        };
        let (got, want) = (trend(m), trend(&whole));
        assert_eq!(
            (got.count, got.min, got.max),
            (want.count, want.min, want.max)
        );
        assert!((got.sum - want.sum).abs() < 1e-9 * want.sum);
        for p in [50.0, 90.0, 99.0, 99.9] {
            assert_eq!(got.percentile(p), want.percentile(p), "p{p}");
        }
        match m.snapshot.metric(Builtin::VusMax.id()) {
            Some(Sink::Gauge { last, max, .. }) => assert_eq!((last, max), (10.0, 10.0)),
            other => panic!("{other:?}"),
        }
        // The same summary and export as the one-process run, but for
        // the export's own figures of time.
        assert_eq!(
            super::super::summary::render(m),
            super::super::summary::render(&whole)
        );
        let text = render_shards(&merged);
        assert!(
            text.contains("merged 2 shard summaries (the whole test)"),
            "{text}"
        );
        assert!(text.contains("✓ 'count>=1000' count=1000"), "{text}");
        assert!(
            text.contains(
                "note: shards 0:1/2, 1/2:1 exited 99: their thresholds failed on their own share"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_threshold_failing_only_on_merged_data_fails_the_merge() {
        // 400 requests per shard pass `count<500` each; 800 do not.
        let th = thresholds(serde_json::json!({"http_reqs": ["count<500"]}));
        let parts = [((0, 1), (1, 2)), ((1, 2), (1, 1))];
        let reports: Vec<(Report, Part)> = [0..400, 400..800]
            .into_iter()
            .zip(parts)
            .map(|(r, (from, to))| (shard_report(r, &th), Part { from, to }))
            .collect();
        assert!(reports.iter().all(|(r, _)| r.thresholds[0].verdict.ok));
        let merged = merge_shards(shards_of(&reports), None).unwrap();
        assert_eq!(merged.exit_code, 99);
        assert_eq!(merged.report.thresholds[0].verdict.observed, Some(800.0));
        let doc = super::super::export::to_json(&merged.report);
        assert_eq!(
            doc["metrics"]["http_reqs"]["thresholds"]["count<500"]["ok"],
            false
        );
        assert_eq!(doc["metrics"]["http_reqs"]["count"], 800.0);
    }

    #[test]
    fn overlapping_shards_are_refused_and_gaps_named() {
        let th = Vec::new();
        let part = |from, to| Part { from, to };
        let err = merge_shards(
            shards_of(&[
                (shard_report(0..10, &th), part((0, 1), (1, 2))),
                (shard_report(0..10, &th), part((1, 3), (1, 1))),
            ]),
            None,
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("overlaps shard-0.json"), "{err}");
        let err = merge_shards(
            shards_of(&[
                (shard_report(0..10, &th), part((0, 1), (1, 2))),
                (shard_report(0..10, &th), part((0, 1), (1, 2))),
            ]),
            None,
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("would count twice"), "{err}");
        let merged = merge_shards(
            shards_of(&[
                (shard_report(0..10, &th), part((1, 4), (1, 2))),
                (shard_report(0..10, &th), part((3, 4), (1, 1))),
            ]),
            None,
        )
        .unwrap();
        assert_eq!(
            merged.gaps,
            vec![part((0, 1), (1, 4)), part((1, 2), (3, 4))]
        );
        assert!(
            render_shards(&merged).contains("NOT the whole test: no shard ran 0:1/4, 1/2:3/4"),
            "{}",
            render_shards(&merged)
        );
        // Shards of different tests: different thresholds.
        let other = thresholds(serde_json::json!({"checks": ["rate>0.5"]}));
        let err = merge_shards(
            shards_of(&[
                (shard_report(0..10, &th), part((0, 1), (1, 2))),
                (shard_report(10..20, &other), part((1, 2), (1, 1))),
            ]),
            None,
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("different thresholds"), "{err}");
    }
}
