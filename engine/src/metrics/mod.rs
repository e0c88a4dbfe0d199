//! Metrics: the registry of metric definitions, tag sets, and the sinks
//! samples are recorded into.
//!
//! The request path records into a per-thread [`shard`] (a mutex only its
//! own thread takes, except at merge time), never into shared state; the
//! run merges the shards off the hot path into a [`Snapshot`] that the
//! output modules summarise. Trends are HdrHistograms, so snapshots from
//! threads (and later machines) merge exactly.

mod registry;
mod shard;
mod sink;
mod tags;
pub mod threshold;

pub use registry::{Builtin, MetricDef, MetricId, MetricKind, Registry, ValueKind};
pub use shard::{Recorder, Snapshot};
pub use sink::{Sink, TrendSink};
pub use tags::{TagSet, Tags};
