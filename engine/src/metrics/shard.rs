//! Per-thread recording and merging.
//!
//! Each thread that records gets its own shard: a series map behind a
//! mutex that only that thread locks while recording, so the request path
//! never contends. [`Recorder::snapshot`] locks the shards one at a time,
//! off the hot path, and merges them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::{MetricId, MetricKind, Registry, Sink, Tags, ValueKind};

type SeriesMap = HashMap<(MetricId, Tags), Sink>;

/// Records samples for one run. Cheap to share (`Arc`).
#[derive(Debug)]
pub struct Recorder {
    id: usize,
    registry: Arc<Registry>,
    shards: Mutex<Vec<Arc<Mutex<SeriesMap>>>>,
    start: Instant,
}

static NEXT_RECORDER: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// This thread's shard of each live recorder (usually exactly one).
    static LOCAL: RefCell<Vec<(usize, Arc<Mutex<SeriesMap>>)>> = const { RefCell::new(Vec::new()) };
}

impl Recorder {
    pub fn new(registry: Arc<Registry>) -> Recorder {
        Recorder {
            id: NEXT_RECORDER.fetch_add(1, Ordering::Relaxed),
            registry,
            shards: Mutex::new(Vec::new()),
            start: Instant::now(),
        }
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    fn local_shard(&self) -> Arc<Mutex<SeriesMap>> {
        LOCAL.with(|local| {
            let mut local = local.borrow_mut();
            if let Some((_, shard)) = local.iter().find(|(id, _)| *id == self.id) {
                return shard.clone();
            }
            let shard = Arc::new(Mutex::new(SeriesMap::new()));
            self.shards
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(shard.clone());
            local.push((self.id, shard.clone()));
            shard
        })
    }

    /// Record several samples with one tag set, taking this thread's shard
    /// lock once. The samples are `(metric, value)`; trend values of time
    /// metrics are milliseconds.
    pub fn record(&self, tags: &Tags, samples: &[(MetricId, f64)]) {
        let shard = self.local_shard();
        let mut map = shard.lock().unwrap_or_else(|e| e.into_inner());
        let at = self.start.elapsed().as_nanos() as u64;
        for &(metric, value) in samples {
            let sink = match map.get_mut(&(metric, tags.clone())) {
                Some(sink) => sink,
                None => {
                    let Some(def) = self.registry.get(metric) else {
                        continue;
                    };
                    map.entry((metric, tags.clone()))
                        .or_insert_with(|| Sink::new(def.kind, def.value == ValueKind::Time))
                }
            };
            sink.add(value, at);
        }
    }

    /// Record time samples given in nanoseconds (trends of time metrics
    /// only), avoiding the float round trip for the HTTP phases.
    pub fn record_nanos(&self, tags: &Tags, samples: &[(MetricId, u64)]) {
        let shard = self.local_shard();
        let mut map = shard.lock().unwrap_or_else(|e| e.into_inner());
        for &(metric, nanos) in samples {
            let sink = map
                .entry((metric, tags.clone()))
                .or_insert_with(|| Sink::new(MetricKind::Trend, true));
            match sink {
                Sink::Trend(t) => t.add_nanos(nanos),
                other => other.add(nanos as f64 / 1e6, 0),
            }
        }
    }

    /// Merge every thread's shard into one snapshot (the shards keep their
    /// data: this is a read, not a drain).
    pub fn snapshot(&self) -> Snapshot {
        let shards: Vec<_> = self
            .shards
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut out = Snapshot::default();
        for shard in shards {
            let map = shard.lock().unwrap_or_else(|e| e.into_inner());
            for (key, sink) in map.iter() {
                match out.series.get_mut(key) {
                    Some(s) => s.merge(sink),
                    None => {
                        out.series.insert(key.clone(), sink.clone());
                    }
                }
            }
        }
        out
    }
}

/// Merged series of a run at one moment.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    pub series: SeriesMap,
}

impl Snapshot {
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
    use crate::metrics::{Builtin, TagSet};

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
        match snap.metric(Builtin::HttpReqs.id()) {
            Some(Sink::Counter { sum, count }) => assert_eq!((sum, count), (4000.0, 4000)),
            other => panic!("{other:?}"),
        }
        match snap.metric(Builtin::HttpReqDuration.id()) {
            Some(Sink::Trend(t)) => {
                assert_eq!(t.count, 4000);
                assert!((t.max() - 0.999).abs() < 1e-9);
            }
            other => panic!("{other:?}"),
        }
    }
}
