//! Per-thread recording, per-interval draining, and run-wide totals.
//!
//! Each thread that records gets its own shard: a series map behind a
//! mutex that only that thread locks while recording, so the request path
//! never contends. The map is keyed by tag set first (looked up by
//! reference, with the set's cached hash), then indexed by metric id, so
//! recording a request's samples costs one hash lookup and no `Arc` clone.
//!
//! Off the hot path, [`Recorder::drain`] (once per output interval, from
//! the run's aggregation thread) swaps each shard's map with a spare one
//! of the same series, emptied: the recording thread is held up only for
//! the swap. The drained maps are merged into that interval's aggregate,
//! which is returned for the outputs and the progress display, and into
//! the run-wide totals, which the summary and the thresholds read through
//! [`Recorder::snapshot`]. Counters add and HdrHistograms merge exactly,
//! so the totals are what recording everything in one place would give.
//! Memory is one sink per series per shard (twice, with the spare) plus
//! the totals: it depends on the number of series, not on the samples.
//! A trend sink's histogram is nearly all of it, which is why its counts
//! are 32 bits until one could overflow (the sink module says how).

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{MetricId, MetricKind, Registry, Sink, TagSet, Tags, ValueKind};

/// Run-wide series: one sink per metric and tag set.
type SeriesMap = HashMap<(MetricId, Tags), Sink>;

/// A shard's series: per tag set, the sinks indexed by metric id.
type ShardMap = HashMap<Tags, Vec<Option<Sink>>, BuildHasherDefault<CachedHash>>;

/// Hashing a tag set writes its cached hash: use it as is.
#[derive(Default)]
struct CachedHash(u64);

impl Hasher for CachedHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only reached for keys that are not tag sets; fold them in.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Shard = Arc<Mutex<ShardMap>>;

/// Records samples for one run. Cheap to share (`Arc`).
#[derive(Debug)]
pub struct Recorder {
    id: usize,
    registry: Arc<Registry>,
    shards: Mutex<Vec<Shard>>,
    aggregate: Mutex<Aggregate>,
    start: Instant,
}

/// What the drains keep between intervals.
#[derive(Debug, Default)]
struct Aggregate {
    /// Everything drained so far.
    totals: SeriesMap,
    /// Per shard (same index), the emptied map swapped in at the next drain.
    spares: Vec<ShardMap>,
    /// End of the last drained interval, since the recorder's start.
    last: Duration,
}

/// The aggregates of one interval, as handed to the outputs.
#[derive(Debug, Default)]
pub struct Interval {
    /// Start and end of the interval, since the recorder was created.
    pub start: Duration,
    pub end: Duration,
    /// The series that had samples in the interval.
    pub series: Snapshot,
}

static NEXT_RECORDER: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// This thread's shard of each live recorder (usually exactly one).
    static LOCAL: RefCell<Vec<(usize, Shard)>> = const { RefCell::new(Vec::new()) };
}

impl Recorder {
    pub fn new(registry: Arc<Registry>) -> Recorder {
        Recorder {
            id: NEXT_RECORDER.fetch_add(1, Ordering::Relaxed),
            registry,
            shards: Mutex::new(Vec::new()),
            aggregate: Mutex::new(Aggregate::default()),
            start: Instant::now(),
        }
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Time since the recorder was created (the clock of [`Interval`]s).
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Run `f` on this thread's series for `tags`, under the shard lock.
    fn with_series<R>(&self, tags: &Tags, f: impl FnOnce(&mut Vec<Option<Sink>>) -> R) -> R {
        LOCAL.with(|local| {
            let mut local = local.borrow_mut();
            let index = match local.iter().position(|(id, _)| *id == self.id) {
                Some(i) => i,
                None => {
                    let shard = Shard::default();
                    self.shards
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(shard.clone());
                    local.push((self.id, shard));
                    local.len() - 1
                }
            };
            let mut map = local[index].1.lock().unwrap_or_else(|e| e.into_inner());
            let slots = match map.get_mut::<TagSet>(tags) {
                Some(slots) => slots,
                None => map.entry(tags.clone()).or_default(),
            };
            f(slots)
        })
    }

    /// Record several samples with one tag set, taking this thread's shard
    /// lock once. The samples are `(metric, value)`; trend values of time
    /// metrics are milliseconds.
    #[inline]
    pub fn record(&self, tags: &Tags, samples: &[(MetricId, f64)]) {
        self.record_all(tags, samples, &[]);
    }

    /// Record time samples given in nanoseconds (trends of time metrics
    /// only), avoiding the float round trip for the HTTP phases.
    #[inline]
    pub fn record_nanos(&self, tags: &Tags, samples: &[(MetricId, u64)]) {
        self.record_all(tags, &[], samples);
    }

    /// [`record`](Self::record) and [`record_nanos`](Self::record_nanos)
    /// under one lock and one series lookup: what a request or an
    /// iteration records.
    pub fn record_all(&self, tags: &Tags, values: &[(MetricId, f64)], nanos: &[(MetricId, u64)]) {
        // Only gauges need the time (to order updates across threads):
        // read the clock for the first one, if any.
        let mut at = None;
        self.with_series(tags, |slots| {
            for &(metric, value) in values {
                let Some(sink) = slot(slots, metric, || {
                    let def = self.registry.get(metric)?;
                    Some(Sink::new(def.kind, def.value == ValueKind::Time))
                }) else {
                    continue;
                };
                let at = match sink {
                    Sink::Gauge { .. } => {
                        *at.get_or_insert_with(|| self.start.elapsed().as_nanos() as u64)
                    }
                    _ => 0,
                };
                sink.add(value, at);
            }
            for &(metric, nanos) in nanos {
                let Some(sink) = slot(slots, metric, || Some(Sink::new(MetricKind::Trend, true)))
                else {
                    continue;
                };
                match sink {
                    Sink::Trend(t) => t.add_nanos(nanos),
                    other => other.add(nanos as f64 / 1e6, 0),
                }
            }
        });
    }

    fn shards(&self) -> Vec<Shard> {
        self.shards
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// End the current interval: take every shard's samples since the
    /// last drain, add them to the run-wide totals and return them.
    pub fn drain(&self) -> Interval {
        let mut agg = self.aggregate.lock().unwrap_or_else(|e| e.into_inner());
        let shards = self.shards();
        let end = self.start.elapsed();
        let mut out = Snapshot::default();
        let agg = &mut *agg;
        agg.spares.resize_with(shards.len(), ShardMap::default);
        for (shard, spare) in shards.iter().zip(agg.spares.iter_mut()) {
            // Hold the recording thread up only for the swap.
            std::mem::swap(&mut *shard.lock().unwrap_or_else(|e| e.into_inner()), spare);
            for (tags, slots) in spare.iter_mut() {
                for (metric, sink) in slots.iter_mut().enumerate() {
                    let Some(sink) = sink else { continue };
                    if sink.samples() == 0 {
                        continue;
                    }
                    out.add((metric as MetricId, tags.clone()), sink);
                    sink.reset();
                }
            }
        }
        for (key, sink) in &out.series {
            match agg.totals.get_mut(key) {
                Some(total) => total.merge(sink),
                None => {
                    agg.totals.insert(key.clone(), sink.clone());
                }
            }
        }
        let start = std::mem::replace(&mut agg.last, end);
        Interval {
            start,
            end,
            series: out,
        }
    }

    /// The run-wide totals: everything drained plus what the shards hold
    /// now (a read: the next drain still sees those samples).
    pub fn snapshot(&self) -> Snapshot {
        let agg = self.aggregate.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Snapshot {
            series: agg.totals.clone(),
        };
        for shard in self.shards() {
            let map = shard.lock().unwrap_or_else(|e| e.into_inner());
            for (tags, slots) in map.iter() {
                for (metric, sink) in slots.iter().enumerate() {
                    if let Some(sink) = sink.as_ref().filter(|s| s.samples() > 0) {
                        out.add((metric as MetricId, tags.clone()), sink);
                    }
                }
            }
        }
        out
    }
}

/// The sink of `metric` in a series, created by `new` on first use.
/// Inlined by hand: it runs once per sample, and out of line (as LLVM
/// chose once this crate was split out) it cost ~30 instructions a call,
/// ~1% of a request.
#[inline(always)]
fn slot(
    slots: &mut Vec<Option<Sink>>,
    metric: MetricId,
    new: impl FnOnce() -> Option<Sink>,
) -> Option<&mut Sink> {
    let i = metric as usize;
    if slots.get(i).is_none_or(Option::is_none) {
        let sink = new()?;
        if slots.len() <= i {
            slots.resize_with(i + 1, || None);
        }
        slots[i] = Some(sink);
    }
    slots[i].as_mut()
}

/// Merged series: a run's totals, or one interval's aggregates.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    pub series: SeriesMap,
}

impl Snapshot {
    /// Merge `sink` into the series `key`.
    fn add(&mut self, key: (MetricId, Tags), sink: &Sink) {
        match self.series.get_mut(&key) {
            Some(s) => s.merge(sink),
            None => {
                self.series.insert(key, sink.clone());
            }
        }
    }

    /// The metric aggregated over all its tag sets, if it has samples.
    pub fn metric(&self, id: MetricId) -> Option<Sink> {
        let mut out: Option<Sink> = None;
        for ((m, _), sink) in &self.series {
            if *m != id {
                continue;
            }
            match &mut out {
                Some(o) => o.merge(sink),
                None => out = Some(sink.clone()),
            }
        }
        out
    }

    /// Every series of one metric, with its tags.
    pub fn series_of(&self, id: MetricId) -> impl Iterator<Item = (&Tags, &Sink)> {
        self.series
            .iter()
            .filter(move |((m, _), _)| *m == id)
            .map(|((_, t), s)| (t, s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Builtin;

    fn counter(s: Option<Sink>) -> (f64, u64) {
        match s {
            Some(Sink::Counter { sum, count }) => (sum, count),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn samples_from_several_threads_merge() {
        let rec = Arc::new(Recorder::new(Arc::new(Registry::new())));
        let tags: Tags = Arc::new(TagSet::new([("scenario", "default")]));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (rec, tags) = (rec.clone(), tags.clone());
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        rec.record(&tags, &[(Builtin::HttpReqs.id(), 1.0)]);
                        rec.record_nanos(&tags, &[(Builtin::HttpReqDuration.id(), i * 1000)]);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let snap = rec.snapshot();
        assert_eq!(counter(snap.metric(Builtin::HttpReqs.id())), (4000.0, 4000));
        match snap.metric(Builtin::HttpReqDuration.id()) {
            Some(Sink::Trend(t)) => {
                assert_eq!(t.count, 4000);
                assert!((t.max() - 0.999).abs() < 1e-9);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn intervals_hold_their_own_samples_and_totals_hold_all() {
        let rec = Arc::new(Recorder::new(Arc::new(Registry::new())));
        let a: Tags = Arc::new(TagSet::new([("scenario", "a")]));
        let b: Tags = Arc::new(TagSet::new([("scenario", "b")]));
        let mut all = crate::TrendSink::new(true);
        let mut drained = Vec::new();
        for round in 0..5u64 {
            let threads: Vec<_> = [a.clone(), b.clone()]
                .into_iter()
                .map(|tags| {
                    let rec = rec.clone();
                    std::thread::spawn(move || {
                        for i in 0..=round * 100 {
                            rec.record(&tags, &[(Builtin::HttpReqs.id(), 1.0)]);
                            rec.record_nanos(
                                &tags,
                                &[(Builtin::HttpReqDuration.id(), (round + 1) * 1_000_000 + i)],
                            );
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            for i in 0..=round * 100 {
                for _ in 0..2 {
                    all.add_nanos((round + 1) * 1_000_000 + i);
                }
            }
            // A snapshot between drains sees the undrained samples too.
            let n = (1..=round + 1)
                .map(|r| 2 * ((r - 1) * 100 + 1))
                .sum::<u64>();
            assert_eq!(counter(rec.snapshot().metric(Builtin::HttpReqs.id())).1, n);
            drained.push(rec.drain());
        }
        for (round, interval) in drained.iter().enumerate() {
            let per_set = round as u64 * 100 + 1;
            for tags in [&a, &b] {
                let got = interval
                    .series
                    .series
                    .get(&(Builtin::HttpReqs.id(), tags.clone()))
                    .cloned();
                assert_eq!(counter(got), (per_set as f64, per_set), "round {round}");
            }
            assert!(interval.end >= interval.start);
        }
        assert!(drained.windows(2).all(|w| w[0].end == w[1].start));
        // Nothing recorded since the last drain: an empty interval.
        assert!(rec.drain().series.series.is_empty());
        match rec.snapshot().metric(Builtin::HttpReqDuration.id()) {
            Some(Sink::Trend(t)) => {
                assert_eq!(t.count, all.count);
                assert_eq!((t.min(), t.max()), (all.min(), all.max()));
                for p in [50.0, 90.0, 95.0, 99.0, 99.9] {
                    assert_eq!(t.percentile(p), all.percentile(p), "p{p}");
                }
            }
            other => panic!("{other:?}"),
        }
    }
}
