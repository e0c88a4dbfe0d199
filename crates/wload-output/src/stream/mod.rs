//! Streaming outputs (`--out KIND=FILE`, repeatable): each output interval
//! (`--out-interval`, default 1s) the run drains the recorder into one
//! [`Interval`] of aggregates per metric and tag set, and every output
//! writes that interval: JSON lines, CSV rows, an HdrHistogram interval
//! log per trend, or a push to Prometheus (remote write) or InfluxDB.
//! Never one line per sample: the files grow with intervals × series, not
//! with requests.

mod csv;
mod hdr;
mod influxdb;
mod json;
mod prometheus;
mod prometheus_wire;
mod push;
pub mod tag;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};

use crate::progress::ScenarioPlan;
use wload_metrics::threshold::Threshold;
use wload_metrics::{Interval, MetricDef, Sink};

/// One `--out` flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutSpec {
    Json(PathBuf),
    Csv(PathBuf),
    Hdr(PathBuf),
    /// Prometheus remote write; no URL: `WLOAD_PROMETHEUS_RW_SERVER_URL`
    /// or k6's default.
    PrometheusRw(Option<String>),
    /// InfluxDB 1.x; no URL: `WLOAD_INFLUXDB_ADDR` or k6's default.
    Influxdb(Option<String>),
}

/// The accepted forms, for error messages and help.
pub const OUT_FORMS: &str = "json=FILE, csv=FILE, hdr=FILE, prometheus-rw[=URL] or influxdb[=URL]";

impl OutSpec {
    /// Parse `KIND=FILE` or `KIND[=URL]`.
    pub fn parse(s: &str) -> Result<OutSpec, String> {
        let (kind, file) = s.split_once('=').unwrap_or((s, ""));
        let url = (!file.is_empty()).then(|| file.to_owned());
        match kind {
            // k6's name for it too.
            "prometheus-rw" | "experimental-prometheus-rw" => {
                return Ok(OutSpec::PrometheusRw(url));
            }
            "influxdb" => return Ok(OutSpec::Influxdb(url)),
            _ => {}
        }
        if file.is_empty() {
            return Err(format!(
                "invalid --out {s:?}: expected {OUT_FORMS} (e.g. --out json=results.jsonl)"
            ));
        }
        let path = PathBuf::from(file);
        match kind {
            "json" => Ok(OutSpec::Json(path)),
            "csv" => Ok(OutSpec::Csv(path)),
            "hdr" => Ok(OutSpec::Hdr(path)),
            _ => Err(format!(
                "unknown --out kind {kind:?} in {s:?}: use {OUT_FORMS}"
            )),
        }
    }

    /// What is wrong with a remote output's settings (its URL and the
    /// `WLOAD_PROMETHEUS_RW_*` / `WLOAD_INFLUXDB_*` variables in `env`),
    /// every problem on a line; `None` for files and good settings. The
    /// CLI asks before the run so that they are invalid options, listed
    /// with the others.
    pub fn settings_problems(&self, env: &BTreeMap<String, String>) -> Option<String> {
        match self {
            OutSpec::PrometheusRw(url) => {
                prometheus::PrometheusConfig::from_env(url.as_deref(), env).err()
            }
            OutSpec::Influxdb(url) => influxdb::InfluxConfig::from_env(url.as_deref(), env).err(),
            _ => None,
        }
    }

    fn path(&self) -> Option<&Path> {
        match self {
            OutSpec::Json(p) | OutSpec::Csv(p) | OutSpec::Hdr(p) => Some(p),
            OutSpec::PrometheusRw(_) | OutSpec::Influxdb(_) => None,
        }
    }
}

/// What every output gets for one interval.
pub struct IntervalView<'a> {
    /// Active VUs of each scenario at the interval's end (sampled with
    /// the `vus` gauge), in the run's scenario order.
    pub scenario_vus: &'a [ScenarioVus],
    pub interval: &'a Interval,
    /// Start and end in seconds since the run started (VUs running;
    /// samples of setup land in the first interval).
    pub start: f64,
    pub end: f64,
    /// Wall-clock end of the interval, Unix seconds.
    pub time: f64,
    pub metrics: &'a [MetricDef],
}

impl IntervalView<'_> {
    /// The interval's series in a stable order: metric id, then tags.
    pub fn sorted(&self) -> Vec<(&MetricDef, &wload_metrics::TagSet, &Sink)> {
        let mut rows: Vec<_> = self
            .interval
            .series
            .series
            .iter()
            .filter_map(|((id, tags), sink)| {
                let def = self.metrics.get(*id as usize)?;
                Some((*id, def, &**tags, sink))
            })
            .collect();
        rows.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| a.2.to_string().cmp(&b.2.to_string()))
        });
        rows.into_iter().map(|(_, d, t, s)| (d, t, s)).collect()
    }

    pub fn seconds(&self) -> f64 {
        (self.end - self.start).max(0.0)
    }
}

/// One scenario's active VUs at the end of an interval: what `vus` is
/// the sum of, for outputs that show VUs per scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioVus {
    pub name: String,
    pub active: u32,
}

/// What a run tells its outputs once, when its clock starts.
pub struct RunStart<'a> {
    /// The test, as the run header names it.
    pub test: &'a str,
    pub scenarios: &'a [ScenarioPlan],
    /// The thresholds as configured, for outputs that show their state
    /// while the run goes.
    pub thresholds: &'a [Threshold],
    /// The trend statistics of the summary.
    pub trend_stats: &'a [String],
    /// Wall clock of the start.
    pub started: SystemTime,
}

/// An interval sink: what every `--out` file is, and what another crate
/// implements to see a run while it goes (the dashboard and the HTML
/// report of `wload-report`), held by [`Outputs`] beside the files. It
/// runs on the aggregation thread: a sink that does more than encode and
/// write must hand the work to a thread of its own, since a slow sink
/// delays the next interval for every output.
pub trait Output: Send {
    /// The run's clock starts: called once, before the first interval.
    fn start(&mut self, run: &RunStart) -> Result<()> {
        let _ = run;
        Ok(())
    }
    fn write(&mut self, view: &IntervalView) -> Result<()>;
    /// The run is over: the last interval was written.
    fn finish(&mut self) -> Result<()>;
}

/// The open outputs of a run.
pub struct Outputs {
    /// Each output with the name its errors give (`--out FILE`, or the
    /// sink's own).
    outputs: Vec<(String, Box<dyn Output>)>,
}

impl Outputs {
    /// Create every file and read every remote output's settings (from
    /// the environment) now, so that an unwritable path or a bad setting
    /// fails before the run rather than after it. `run_start` is the wall
    /// clock of the run's start (for the hdr log's StartTime).
    pub fn open(specs: &[OutSpec], run_start: SystemTime) -> Result<Outputs> {
        let mut outputs: Vec<(String, Box<dyn Output>)> = Vec::new();
        let env: BTreeMap<String, String> = std::env::vars().collect();
        for spec in specs {
            let (name, out): (String, Box<dyn Output>) = match (spec, spec.path()) {
                (OutSpec::PrometheusRw(url), _) => (
                    "--out prometheus-rw".into(),
                    Box::new(prometheus::PrometheusOut::open(url.as_deref(), &env)?),
                ),
                (OutSpec::Influxdb(url), _) => (
                    "--out influxdb".into(),
                    Box::new(influxdb::InfluxOut::open(url.as_deref(), &env)?),
                ),
                (_, Some(path)) => {
                    let file = std::fs::File::create(path).with_context(|| {
                        format!("cannot create the --out file {}", path.display())
                    })?;
                    let out: Box<dyn Output> = match spec {
                        OutSpec::Csv(_) => Box::new(csv::CsvOut::new(file)?),
                        OutSpec::Hdr(_) => Box::new(hdr::HdrOut::new(file, run_start)?),
                        _ => Box::new(json::JsonOut::new(file)),
                    };
                    (format!("--out {}", path.display()), out)
                }
                (_, None) => continue,
            };
            outputs.push((name, out));
        }
        Ok(Outputs { outputs })
    }

    /// Add a sink of another crate; `name` is how its errors name it
    /// (`--dashboard`).
    pub fn add(&mut self, name: &str, sink: Box<dyn Output>) {
        self.outputs.push((name.to_owned(), sink));
    }

    /// Tell every output that the run starts; one that fails is reported
    /// and dropped, as in [`Outputs::write`].
    pub fn start(&mut self, run: &RunStart) {
        self.outputs.retain_mut(|(name, out)| match out.start(run) {
            Ok(()) => true,
            Err(e) => {
                eprintln!("ERROR {name}: {e:#}; it gets nothing of this run");
                false
            }
        });
    }

    pub fn is_empty(&self) -> bool {
        self.outputs.is_empty()
    }

    /// Write one interval to every output; the first failure of each
    /// output is reported once and that output is dropped (the run goes on).
    pub fn write(&mut self, view: &IntervalView) {
        self.outputs
            .retain_mut(|(name, out)| match out.write(view) {
                Ok(()) => true,
                Err(e) => {
                    eprintln!("ERROR {name}: {e:#}; no more intervals are written to it");
                    false
                }
            });
    }

    /// Flush and close every output.
    pub fn finish(&mut self) -> Result<()> {
        for (name, out) in &mut self.outputs {
            out.finish()
                .with_context(|| format!("cannot finish {name}"))?;
        }
        Ok(())
    }
}

/// Seconds since the Unix epoch.
pub fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs_f64()
}

/// The statistics a trend gets in the JSON and CSV outputs, in order.
pub const TREND_COLUMNS: [&str; 7] = ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_specs_parse_and_unknown_kinds_name_the_valid_forms() {
        assert_eq!(
            OutSpec::parse("json=a/b.jsonl"),
            Ok(OutSpec::Json("a/b.jsonl".into()))
        );
        assert_eq!(
            OutSpec::parse("csv=x=y.csv"),
            Ok(OutSpec::Csv("x=y.csv".into()))
        );
        assert_eq!(
            OutSpec::parse("hdr=h.hlog"),
            Ok(OutSpec::Hdr("h.hlog".into()))
        );
        assert_eq!(
            OutSpec::parse("prometheus-rw=http://127.0.0.1:9090/api/v1/write"),
            Ok(OutSpec::PrometheusRw(Some(
                "http://127.0.0.1:9090/api/v1/write".into()
            )))
        );
        assert_eq!(
            OutSpec::parse("experimental-prometheus-rw"),
            Ok(OutSpec::PrometheusRw(None))
        );
        assert_eq!(
            OutSpec::parse("influxdb=http://127.0.0.1:8086/k6"),
            Ok(OutSpec::Influxdb(Some("http://127.0.0.1:8086/k6".into())))
        );
        assert_eq!(OutSpec::parse("influxdb"), Ok(OutSpec::Influxdb(None)));
        for bad in ["statsd=127.0.0.1:8125", "json", "json=", "hdr:file"] {
            let err = OutSpec::parse(bad).unwrap_err();
            assert!(err.contains(OUT_FORMS), "{bad}: {err}");
        }
    }
}
