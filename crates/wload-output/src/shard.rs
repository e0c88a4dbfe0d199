//! `--shard-summary FILE`: all of a run's result in one JSON document,
//! written once at the end, so that `wload merge` of the shards of a
//! distributed run (`--execution-segment`) prints what one process
//! running the whole test would have printed. The k6 export and the hdr
//! log each keep only part of a run (the export no histograms, the log
//! nothing but trends); this keeps every series' sink as the run holds it
//! (trends with their HdrHistogram), the metric definitions, the
//! thresholds as configured, the iteration errors and where the run sits
//! on the wall clock. docs/architecture.md says why a file of its own.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow, bail};
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
use serde_json::{Map, Value, json};

use super::{Report, RunClock};
use wload_metrics::threshold::{self, Threshold};
use wload_metrics::{MetricDef, MetricKind, Sink, TagSet, TrendSink, ValueKind};

/// The document's `format`, so that `wload merge` tells it from an hdr
/// log or another JSON file.
pub const FORMAT: &str = "wload-shard-summary";
/// Its layout's version; a reader refuses versions it does not know.
pub const VERSION: u64 = 1;

/// A fraction `num/den` of a test.
pub type Fraction = (u64, u64);

/// The part `(from, to]` of every scenario a shard ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub from: Fraction,
    pub to: Fraction,
}

impl Part {
    pub const FULL: Part = Part {
        from: (0, 1),
        to: (1, 1),
    };
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", fraction(self.from), fraction(self.to))
    }
}

/// `0`, `1`, `1/3`.
pub fn fraction((num, den): Fraction) -> String {
    match (num, den) {
        (0, _) => "0".to_owned(),
        (n, d) if n == d => "1".to_owned(),
        (n, d) => format!("{n}/{d}"),
    }
}

/// What the run knows about itself beyond its [`Report`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardMeta {
    /// The test, as the run header names it.
    pub test: String,
    pub part: Part,
    /// The run's own exit code (99 if its thresholds failed on its share).
    pub exit_code: u8,
}

/// A shard summary read back.
pub struct Shard {
    pub meta: ShardMeta,
    pub metrics: Vec<MetricDef>,
    /// Every series with samples: metric name, tags, sink. Gauges'
    /// `at` is in unix nanoseconds, comparable across shards.
    pub series: Vec<(String, TagSet, Sink)>,
    pub thresholds: Vec<Threshold>,
    pub elapsed: Duration,
    pub clock: RunClock,
    pub failures: (Vec<(String, u64)>, u64),
    pub interrupted: u64,
    pub trend_stats: Vec<String>,
}

fn unix_ns(t: SystemTime) -> u64 {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn value_name(v: ValueKind) -> &'static str {
    match v {
        ValueKind::Default => "default",
        ValueKind::Time => "time",
        ValueKind::Data => "data",
    }
}

/// The document for `report`. A report without its wall clock (a merge
/// of hdr logs) cannot be a shard.
pub fn to_json(report: &Report, meta: &ShardMeta) -> Result<Value> {
    let clock = report
        .clock
        .ok_or_else(|| anyhow!("this report has no wall-clock times: not a run's"))?;
    let zero = unix_ns(clock.metrics_zero);
    let metrics: Vec<Value> = report
        .metrics
        .iter()
        .map(|d| {
            json!({
                "name": d.name,
                "type": d.kind.as_str(),
                "contains": value_name(d.value),
                "builtin": d.builtin,
            })
        })
        .collect();
    let mut serializer = V2DeflateSerializer::new();
    let mut series = Vec::new();
    for ((id, tags), sink) in &report.snapshot.series {
        if sink.samples() == 0 {
            continue;
        }
        let def = report
            .metrics
            .get(*id as usize)
            .ok_or_else(|| anyhow!("a series of metric id {id}, which the run never defined"))?;
        let tags: Map<String, Value> = tags.iter().map(|(k, v)| (k.into(), json!(v))).collect();
        let mut entry = json!({ "metric": def.name, "tags": tags });
        let (kind, body) = match sink {
            Sink::Counter { sum, count } => ("counter", json!({ "sum": sum, "count": count })),
            Sink::Gauge { last, min, max, at } => (
                "gauge",
                json!({ "last": last, "min": min, "max": max, "atUnixNs": zero.saturating_add(*at) }),
            ),
            Sink::Rate { trues, total } => ("rate", json!({ "trues": trues, "total": total })),
            Sink::Trend(t) => {
                let mut bytes = Vec::new();
                t.histogram()
                    .serialize(&mut serializer, &mut bytes)
                    .map_err(|e| anyhow!("cannot encode the histogram of {}: {e:?}", def.name))?;
                (
                    "trend",
                    json!({
                        "count": t.count,
                        "sum": t.sum,
                        "min": t.min,
                        "max": t.max,
                        "histogram": base64::engine::general_purpose::STANDARD.encode(&bytes),
                    }),
                )
            }
        };
        entry[kind] = body;
        series.push(entry);
    }
    let thresholds: Vec<Value> = report
        .thresholds
        .iter()
        .map(|o| {
            let t = &o.threshold;
            json!({
                "metric": t.key,
                "threshold": t.source,
                "abortOnFail": t.abort_on_fail,
                "delayAbortEval": t.delay_abort_eval.as_secs_f64() * 1000.0,
                "okOnThisShard": o.verdict.ok,
            })
        })
        .collect();
    let (messages, not_kept) = &report.failures;
    Ok(json!({
        "format": FORMAT,
        "version": VERSION,
        "wload": env!("CARGO_PKG_VERSION"),
        "test": meta.test,
        "segment": {
            "from": [meta.part.from.0, meta.part.from.1],
            "to": [meta.part.to.0, meta.part.to.1],
        },
        "exitCode": meta.exit_code,
        "started": wload_units::rfc3339(clock.started),
        "startedUnixNs": unix_ns(clock.started),
        "startAtUnixNs": clock.start_at.map(unix_ns),
        "elapsedNs": u64::try_from(report.elapsed.as_nanos()).unwrap_or(u64::MAX),
        "summaryTrendStats": report.trend_stats,
        "metrics": metrics,
        "series": series,
        "thresholds": thresholds,
        "failures": {
            "messages": messages.iter().map(|(m, n)| json!({"message": m, "count": n})).collect::<Vec<_>>(),
            "notKept": not_kept,
        },
        "interruptedIterations": report.interrupted,
    }))
}

/// Whether `bytes` look like a shard summary rather than an hdr log.
pub fn looks_like(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{')
}

/// Read a shard summary.
pub fn read(path: &Path, bytes: &[u8]) -> Result<Shard> {
    let doc: Value =
        serde_json::from_slice(bytes).with_context(|| format!("{} is not JSON", path.display()))?;
    parse(&doc).with_context(|| format!("{} is not a usable shard summary", path.display()))
}

fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value> {
    v.get(key).ok_or_else(|| anyhow!("no {key:?}"))
}

fn u64_of(v: &Value, key: &str) -> Result<u64> {
    field(v, key)?
        .as_u64()
        .ok_or_else(|| anyhow!("{key:?} is not a whole number"))
}

/// A float field; JSON has no infinities, so none can come back.
fn f64_of(v: &Value, key: &str) -> Result<f64> {
    field(v, key)?
        .as_f64()
        .ok_or_else(|| anyhow!("{key:?} is not a number"))
}

fn str_of<'a>(v: &'a Value, key: &str) -> Result<&'a str> {
    field(v, key)?
        .as_str()
        .ok_or_else(|| anyhow!("{key:?} is not a string"))
}

fn array_of<'a>(v: &'a Value, key: &str) -> Result<&'a Vec<Value>> {
    field(v, key)?
        .as_array()
        .ok_or_else(|| anyhow!("{key:?} is not a list"))
}

fn fraction_of(v: &Value, key: &str) -> Result<Fraction> {
    match field(v, key)?.as_array().map(Vec::as_slice) {
        Some([n, d]) => match (n.as_u64(), d.as_u64()) {
            (Some(n), Some(d)) if d > 0 && n <= d => Ok((n, d)),
            _ => bail!("{key:?} is not a fraction [num, den] between 0 and 1"),
        },
        _ => bail!("{key:?} is not a fraction [num, den]"),
    }
}

fn time_of(ns: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(ns)
}

fn parse(doc: &Value) -> Result<Shard> {
    if doc.get("format").and_then(Value::as_str) != Some(FORMAT) {
        bail!("its \"format\" is not {FORMAT:?}; write one with `wload run --shard-summary FILE`");
    }
    let version = u64_of(doc, "version")?;
    if version != VERSION {
        bail!(
            "it is of version {version}, this wload reads version {VERSION} (written by wload {})",
            doc.get("wload").and_then(Value::as_str).unwrap_or("?")
        );
    }
    let segment = field(doc, "segment")?;
    let part = Part {
        from: fraction_of(segment, "from")?,
        to: fraction_of(segment, "to")?,
    };
    if u128::from(part.from.0) * u128::from(part.to.1)
        >= u128::from(part.to.0) * u128::from(part.from.1)
    {
        bail!("its segment {part} is empty");
    }
    let exit_code = u8::try_from(u64_of(doc, "exitCode")?).context("\"exitCode\"")?;
    let meta = ShardMeta {
        test: str_of(doc, "test")?.to_owned(),
        part,
        exit_code,
    };

    let mut metrics = Vec::new();
    for m in array_of(doc, "metrics")? {
        let kind = match str_of(m, "type")? {
            "counter" => MetricKind::Counter,
            "gauge" => MetricKind::Gauge,
            "rate" => MetricKind::Rate,
            "trend" => MetricKind::Trend,
            other => bail!("unknown metric type {other:?}"),
        };
        let value = match str_of(m, "contains")? {
            "default" => ValueKind::Default,
            "time" => ValueKind::Time,
            "data" => ValueKind::Data,
            other => bail!("unknown metric value kind {other:?}"),
        };
        metrics.push(MetricDef {
            name: str_of(m, "name")?.to_owned(),
            kind,
            value,
            builtin: field(m, "builtin")?.as_bool().unwrap_or(false),
        });
    }

    let mut series = Vec::new();
    for s in array_of(doc, "series")? {
        let name = str_of(s, "metric")?;
        let def = metrics
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| anyhow!("a series of {name:?}, which is not among its metrics"))?;
        let tags = match field(s, "tags")?.as_object() {
            Some(map) => {
                let mut pairs = Vec::with_capacity(map.len());
                for (k, v) in map {
                    let v = v
                        .as_str()
                        .ok_or_else(|| anyhow!("tag {k:?} of {name} is not a string"))?;
                    pairs.push((k.as_str(), v));
                }
                TagSet::new(pairs)
            }
            None => bail!("the tags of a series of {name} are not an object"),
        };
        let sink = sink_of(s, def).with_context(|| format!("a series of {name}"))?;
        series.push((name.to_owned(), tags, sink));
    }

    let mut thresholds = Vec::new();
    for t in array_of(doc, "thresholds")? {
        let key = str_of(t, "metric")?;
        let item = json!({
            "threshold": str_of(t, "threshold")?,
            "abortOnFail": field(t, "abortOnFail")?.as_bool().unwrap_or(false),
            "delayAbortEval": f64_of(t, "delayAbortEval")?,
        });
        let mut errors = Vec::new();
        let parsed = threshold::parse_all(&json!({ key: [item] }), &mut errors);
        if !errors.is_empty() {
            bail!("{}", errors.join("; "));
        }
        thresholds.extend(parsed);
    }

    let start_at = match field(doc, "startAtUnixNs")? {
        Value::Null => None,
        v => Some(time_of(v.as_u64().ok_or_else(|| {
            anyhow!("\"startAtUnixNs\" is not a whole number")
        })?)),
    };
    let clock = RunClock {
        started: time_of(u64_of(doc, "startedUnixNs")?),
        // Gauges were stored in unix nanoseconds.
        metrics_zero: UNIX_EPOCH,
        start_at,
    };
    let failures = field(doc, "failures")?;
    let mut messages = Vec::new();
    for m in array_of(failures, "messages")? {
        messages.push((str_of(m, "message")?.to_owned(), u64_of(m, "count")?));
    }
    let trend_stats = array_of(doc, "summaryTrendStats")?
        .iter()
        .map(|s| s.as_str().map(str::to_owned))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| anyhow!("\"summaryTrendStats\" is not a list of strings"))?;
    Ok(Shard {
        meta,
        metrics,
        series,
        thresholds,
        elapsed: Duration::from_nanos(u64_of(doc, "elapsedNs")?),
        clock,
        failures: (messages, u64_of(failures, "notKept")?),
        interrupted: u64_of(doc, "interruptedIterations")?,
        trend_stats,
    })
}

fn sink_of(s: &Value, def: &MetricDef) -> Result<Sink> {
    let body = |kind: &str| field(s, kind);
    Ok(match def.kind {
        MetricKind::Counter => {
            let c = body("counter")?;
            Sink::Counter {
                sum: f64_of(c, "sum")?,
                count: u64_of(c, "count")?,
            }
        }
        MetricKind::Gauge => {
            let g = body("gauge")?;
            Sink::Gauge {
                last: f64_of(g, "last")?,
                min: f64_of(g, "min")?,
                max: f64_of(g, "max")?,
                at: u64_of(g, "atUnixNs")?,
            }
        }
        MetricKind::Rate => {
            let r = body("rate")?;
            let (trues, total) = (u64_of(r, "trues")?, u64_of(r, "total")?);
            if trues > total {
                bail!("a rate of {trues} out of {total}");
            }
            Sink::Rate { trues, total }
        }
        MetricKind::Trend => {
            let t = body("trend")?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(str_of(t, "histogram")?)
                .context("its histogram is not base64")?;
            let hist: Histogram<u64> = Deserializer::new()
                .deserialize(&mut bytes.as_slice())
                .map_err(|e| anyhow!("cannot decode its histogram: {e:?}"))?;
            let mut sink = TrendSink::from_histogram(hist, def.value == ValueKind::Time);
            // The exact figures, where the histogram has them to 3 digits.
            sink.count = u64_of(t, "count")?;
            sink.sum = f64_of(t, "sum")?;
            sink.min = f64_of(t, "min")?;
            sink.max = f64_of(t, "max")?;
            if sink.count != sink.histogram().len() {
                bail!(
                    "a trend of {} values whose histogram holds {}",
                    sink.count,
                    sink.histogram().len()
                );
            }
            Sink::Trend(sink)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use wload_metrics::{Builtin, Recorder, Registry, Snapshot, Tags};

    /// A report of a few series of every kind, as a run would make it.
    pub(crate) fn sample_report() -> Report {
        let rec = Recorder::new(Arc::new(Registry::new()));
        let get: Tags = Arc::new(TagSet::new([("method", "GET"), ("name", "a, \"b\"")]));
        for i in 0..500u64 {
            rec.record_nanos(
                &get,
                &[(Builtin::HttpReqDuration.id(), 1_000_000 + i * 7919)],
            );
            rec.record(
                &get,
                &[
                    (Builtin::HttpReqs.id(), 1.0),
                    (Builtin::HttpReqFailed.id(), (i % 5 == 0) as u8 as f64),
                ],
            );
        }
        let score = rec
            .registry()
            .define("score", MetricKind::Trend, false)
            .unwrap();
        let queue = rec
            .registry()
            .define("queue", MetricKind::Gauge, false)
            .unwrap();
        rec.record(
            &get,
            &[(score, 1.25), (score, 7.5), (queue, 3.0), (queue, 4.0)],
        );
        let snapshot: Snapshot = rec.snapshot();
        Report {
            snapshot,
            metrics: rec.registry().all(),
            elapsed: Duration::from_millis(2500),
            failures: (vec![("boom".into(), 3)], 1),
            interrupted: 2,
            thresholds: Vec::new(),
            trend_stats: crate::default_trend_stats(),
            clock: Some(RunClock {
                started: UNIX_EPOCH + Duration::from_secs(1_796_135_400),
                metrics_zero: UNIX_EPOCH + Duration::from_secs(1_796_135_399),
                start_at: Some(UNIX_EPOCH + Duration::from_secs(1_796_135_400)),
            }),
        }
    }

    #[test]
    fn a_shard_summary_reads_back_as_written() {
        let report = sample_report();
        let meta = ShardMeta {
            test: "t.wasm".into(),
            part: Part {
                from: (1, 4),
                to: (1, 2),
            },
            exit_code: 0,
        };
        let doc = to_json(&report, &meta).unwrap();
        let text = serde_json::to_string(&doc).unwrap();
        assert!(looks_like(text.as_bytes()));
        let shard = read(Path::new("s.json"), text.as_bytes()).unwrap();
        assert_eq!(shard.meta, meta);
        assert_eq!(shard.elapsed, report.elapsed);
        assert_eq!(shard.failures, report.failures);
        assert_eq!(shard.interrupted, 2);
        assert_eq!(shard.clock.started, report.clock.unwrap().started);
        assert_eq!(shard.series.len(), report.snapshot.series.len());
        for (name, tags, sink) in &shard.series {
            let id = report.metrics.iter().position(|d| &d.name == name).unwrap() as u32;
            let orig = &report.snapshot.series[&(id, Arc::new(tags.clone()))];
            match (orig, sink) {
                (Sink::Trend(a), Sink::Trend(b)) => {
                    assert_eq!(
                        (a.count, a.sum, a.min, a.max),
                        (b.count, b.sum, b.min, b.max)
                    );
                    assert_eq!(a.histogram(), b.histogram());
                    assert_eq!(a.is_time(), b.is_time());
                }
                (
                    Sink::Gauge { last, min, max, at },
                    Sink::Gauge {
                        last: l,
                        min: mi,
                        max: ma,
                        at: a,
                    },
                ) => {
                    assert_eq!((last, min, max), (l, mi, ma));
                    // Now in unix nanoseconds: the recorder's zero added.
                    assert_eq!(*a, 1_796_135_399_000_000_000 + at);
                }
                (a, b) => assert_eq!(format!("{a:?}"), format!("{b:?}")),
            }
        }
    }

    #[test]
    fn other_documents_are_refused_with_the_reason() {
        let read_doc = |v: Value| {
            read(Path::new("x.json"), v.to_string().as_bytes())
                .err()
                .map(|e| format!("{e:#}"))
        };
        let err = read_doc(json!({"metrics": {}})).unwrap();
        assert!(
            err.contains("x.json is not a usable shard summary") && err.contains("--shard-summary"),
            "{err}"
        );
        let err = read_doc(json!({"format": FORMAT, "version": 99, "wload": "9.0.0"})).unwrap();
        assert!(err.contains("version 99") && err.contains("9.0.0"), "{err}");
        let mut doc = to_json(
            &sample_report(),
            &ShardMeta {
                test: "t".into(),
                part: Part::FULL,
                exit_code: 0,
            },
        )
        .unwrap();
        doc["segment"]["to"] = json!([0, 3]);
        assert!(read_doc(doc.clone()).unwrap().contains("empty"));
        doc["segment"]["to"] = json!([1, 1]);
        doc["series"][0]["metric"] = json!("nope");
        assert!(read_doc(doc).unwrap().contains("not among its metrics"));
        let err = read(Path::new("x.json"), b"{ not json").err().unwrap();
        assert!(format!("{err:#}").contains("x.json is not JSON"), "{err:#}");
    }
}
