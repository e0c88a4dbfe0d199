//! Output: the end-of-test summary in the terminal and the JSON export
//! (`--summary-export`), both built from a [`Report`]: the merged metrics
//! of a run and what the run knows about itself; during the run, the
//! per-interval streaming outputs (`--out`) and the progress display, fed
//! by the aggregation thread ([`live`]); the shard summary (`--shard-summary`,
//! [`shard`]) that keeps all of a run's result; and `wload merge` of shard
//! summaries or hdr logs.

pub mod export;
pub mod groups;
pub mod live;
pub mod merge;
pub mod progress;
pub mod shard;
pub mod stream;
pub mod summary;

use std::time::{Duration, SystemTime};

use wload_metrics::threshold;
use wload_metrics::{MetricDef, Sink, Snapshot};

/// Everything the outputs need about a finished run.
pub struct Report {
    pub snapshot: Snapshot,
    pub metrics: Vec<MetricDef>,
    /// Wall time of the run (VUs running), for per-second rates.
    pub elapsed: Duration,
    /// Failed iterations by message, and how many had messages not kept.
    pub failures: (Vec<(String, u64)>, u64),
    /// Iterations stopped by the end of the run.
    pub interrupted: u64,
    /// Thresholds and their verdicts, in the order given.
    pub thresholds: Vec<threshold::Outcome>,
    /// Trend statistics to show and export.
    pub trend_stats: Vec<String>,
    /// When the run happened on the wall clock: what a shard summary
    /// needs to line its figures up with other shards'. `None` for a
    /// merge of hdr logs, which do not say.
    pub clock: Option<RunClock>,
}

/// A run's place on the wall clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunClock {
    /// When the run's clock started: VUs ready, the first iteration free
    /// to begin. `elapsed` counts from here.
    pub started: SystemTime,
    /// The wall-clock time of the metrics recorder's zero: gauges order
    /// their values by nanoseconds since then.
    pub metrics_zero: SystemTime,
    /// `--start-at`: when the run was asked to start, if it was.
    pub start_at: Option<SystemTime>,
}

/// One check's totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckTotals {
    pub name: String,
    pub passes: u64,
    pub fails: u64,
}

impl Report {
    /// Metrics that have samples, with their merged sink.
    pub fn recorded(&self) -> Vec<(&MetricDef, Sink)> {
        self.metrics
            .iter()
            .enumerate()
            .filter_map(|(id, def)| {
                let sink = self.snapshot.metric(id as u32)?;
                (sink.samples() > 0).then_some((def, sink))
            })
            .collect()
    }

    pub fn per_second(&self, value: f64) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 { value / secs } else { 0.0 }
    }
}

/// The trend statistics shown and exported unless `--summary-trend-stats`
/// or `summaryTrendStats` says otherwise, in order.
pub const TREND_STATS: [&str; 7] = ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"];

/// The default trend statistics, owned.
pub fn default_trend_stats() -> Vec<String> {
    TREND_STATS.iter().map(|s| (*s).to_owned()).collect()
}

/// Check a list of trend statistics: `avg`, `min`, `med`, `max`, `count`,
/// `p(N)` with 0 ≤ N ≤ 100.
pub fn parse_trend_stats(list: &[String]) -> Result<Vec<String>, String> {
    if list.is_empty() {
        return Err("needs at least one statistic".to_owned());
    }
    for stat in list {
        let ok = matches!(stat.as_str(), "avg" | "min" | "med" | "max" | "count")
            || stat
                .strip_prefix("p(")
                .and_then(|s| s.strip_suffix(')'))
                .and_then(|s| s.parse::<f64>().ok())
                .is_some_and(|q| (0.0..=100.0).contains(&q));
        if !ok {
            return Err(format!(
                "unknown trend statistic {stat:?}; use avg, min, med, max, count or p(N)"
            ));
        }
    }
    Ok(list.to_vec())
}

/// A trend statistic by name.
pub fn trend_stat(t: &wload_metrics::TrendSink, stat: &str) -> f64 {
    match stat {
        "avg" => t.avg(),
        "min" => t.min(),
        "med" => t.median(),
        "max" => t.max(),
        "count" => t.count as f64,
        p => p
            .strip_prefix("p(")
            .and_then(|s| s.strip_suffix(')'))
            .and_then(|s| s.parse::<f64>().ok())
            .map(|q| t.percentile(q))
            .unwrap_or(0.0),
    }
}
