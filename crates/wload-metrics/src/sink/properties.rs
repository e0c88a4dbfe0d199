//! Trend histograms keep `u32` counts (wload-metrics' sink module says
//! why): whatever a run records, shards, drains and merges, every figure
//! read from them must be what `u64` histograms fed the same way give,
//! down to the bytes of the `--out hdr` log and the shard summary.

use hdrhistogram::Histogram;
use proptest::prelude::*;

use super::tests::{PERCENTILES, readout, reference};
use super::{TIME_SCALE, TrendSink};

/// A value in nanoseconds: mostly sub-second, some up to ~18 minutes,
/// some 0.
fn nanos() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0u64..1_000_000_000,
        1 => 0u64..(1 << 40),
        1 => Just(0u64),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Intervals of samples per shard: each drained into an interval
    /// aggregate (the first shard's sink cloned, the others merged in),
    /// the shards reset, the aggregate merged into the totals, as
    /// `Recorder::drain` does.
    #[test]
    fn drained_and_merged_trends_read_as_u64_histograms(
        intervals in prop::collection::vec(
            prop::collection::vec(prop::collection::vec(nanos(), 0..60), 1..4),
            1..5,
        )
    ) {
        let shards = intervals.iter().map(Vec::len).max().unwrap_or(1);
        let mut sinks = vec![TrendSink::new(true); shards];
        let mut refs = vec![Histogram::<u64>::new(3).expect("valid"); shards];
        let mut totals: Option<TrendSink> = None;
        let mut ref_totals: Option<Histogram<u64>> = None;
        for interval in &intervals {
            for (shard, values) in interval.iter().enumerate() {
                for &ns in values {
                    sinks[shard].add_nanos(ns);
                    refs[shard].record(ns).expect("auto-resizing");
                }
            }
            let mut agg: Option<TrendSink> = None;
            let mut ref_agg: Option<Histogram<u64>> = None;
            for (sink, r) in sinks.iter_mut().zip(refs.iter_mut()) {
                if sink.count == 0 {
                    continue;
                }
                match (&mut agg, &mut ref_agg) {
                    (Some(a), Some(ra)) => {
                        a.merge(sink);
                        ra.add(&*r).expect("auto-resizing");
                    }
                    _ => {
                        agg = Some(sink.clone());
                        ref_agg = Some(r.clone());
                    }
                }
                sink.reset();
                r.reset();
            }
            let (Some(agg), Some(ref_agg)) = (agg, ref_agg) else { continue };
            prop_assert_eq!(readout(agg.histogram()), readout(&reference(&ref_agg)));
            match (&mut totals, &mut ref_totals) {
                (Some(t), Some(rt)) => {
                    t.merge(&agg);
                    rt.add(&ref_agg).expect("auto-resizing");
                }
                _ => {
                    totals = Some(agg.clone());
                    ref_totals = Some(ref_agg.clone());
                }
            }
            let (t, rt) = (totals.as_ref().expect("set"), ref_totals.as_ref().expect("set"));
            prop_assert!(!t.histogram().is_wide());
            prop_assert_eq!(readout(t.histogram()), readout(&reference(rt)));
            // What the summary and the thresholds read: the sink's
            // percentiles, clamped to its exact min and max.
            // (`TrendSink::percentile` on a u64 histogram, as it was).
            for p in PERCENTILES {
                let want = (rt.value_at_percentile(p) as f64 / TIME_SCALE).clamp(t.min, t.max);
                prop_assert_eq!(t.percentile(p).to_bits(), want.to_bits());
            }
        }
    }
}
