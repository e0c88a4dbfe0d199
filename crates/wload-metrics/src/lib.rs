//! Metrics: the registry of metric definitions, tag sets, and the sinks
//! samples are recorded into.
//!
//! The request path records into a per-thread [`shard`] (a mutex only its
//! own thread takes, except for a swap at each drain), never into shared
//! state; once per output interval the run drains the shards off the hot
//! path into an [`Interval`] for the streaming outputs and the progress
//! display, and into run-wide totals, read as a [`Snapshot`] that the
//! summary and the thresholds use. Trends are HdrHistograms, so snapshots from
//! threads (and later machines) merge exactly.

mod registry;
mod shard;
mod sink;
mod tags;
pub mod threshold;

pub use registry::{Builtin, MetricDef, MetricId, MetricKind, Registry, ValueKind};
pub use shard::{Interval, Recorder, Snapshot};
pub use sink::{PLAIN_SCALE, Sink, TIME_SCALE, TrendHistogram, TrendSink};
pub use tags::{GROUP_PATH_SEPARATOR, TagSet, Tags, intern, untagged};
