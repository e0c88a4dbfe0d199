//! Sinks: the running aggregate of one series (a metric with one tag set).
//!
//! Counters, gauges and rates keep a few numbers. Trends keep an exact
//! count/sum/min/max plus an HdrHistogram (3 significant digits) for
//! percentiles, so that sinks merge without loss, unlike a sample list.
//!
//! **Why the histogram's counts are 32 bits.** Its counts array is
//! nearly all of a sink's memory: 25,600 counts once a 14 s value was
//! seen (nanoseconds, 3 digits, lowest discernible value 1), and a run
//! keeps one sink per series per recording shard, twice (the spare
//! swapped in at each drain), plus the run totals and each interval's
//! aggregate: 20 MB for the dozen series of `examples/rust/mixed` with
//! `u64` counts. `u32` counts halve that. They could overflow (a sink of
//! the totals past 4.3 billion samples), and hdrhistogram does not say
//! so: it adds counts with `saturating_add`, keeps its total in a `u64`,
//! and a bin stuck at `u32::MAX` under a larger total gives wrong
//! percentiles. So [`TrendHistogram`] widens to `u64` counts, exactly,
//! before a record or a merge could take its total past `u32::MAX`: a
//! bin never holds more than the total, so that one comparison is enough
//! (with the enum's tag, what a record costs more: the total is a field
//! the record updates anyway). Narrow or wide, the same samples read the
//! same and serialize to the same bytes. The lowest discernible value
//! stays 1: a coarser one would change the figures users read
//! (percentiles, exports, hdr logs).

use std::io::Write;

use hdrhistogram::serialization::Serializer;
use hdrhistogram::{Counter, Histogram};

use super::MetricKind;

/// Trend values are recorded into the histogram as integers of this many
/// units per value unit: time trends are in milliseconds, so nanoseconds;
/// plain trends keep three decimals.
pub const TIME_SCALE: f64 = 1_000_000.0;
pub const PLAIN_SCALE: f64 = 1_000.0;

/// The most samples a narrow histogram may hold: with its total at most
/// this, no bin can have overflowed its `u32` count.
const NARROW_MAX: u64 = u32::MAX as u64;

#[derive(Debug, Clone)]
pub enum Sink {
    Counter {
        sum: f64,
        count: u64,
    },
    Gauge {
        last: f64,
        min: f64,
        max: f64,
        at: u64,
    },
    Rate {
        trues: u64,
        total: u64,
    },
    Trend(TrendSink),
}

/// A trend's HdrHistogram of scaled values: `u32` counts until its total
/// would pass `u32::MAX`, then `u64` counts (see the module's comment).
/// Both hold the same figures for the same samples, and serialize to the
/// same bytes: the V2 format writes counts as varints, whatever their
/// type in memory.
#[derive(Debug, Clone)]
pub enum TrendHistogram {
    Narrow(Histogram<u32>),
    Wide(Histogram<u64>),
}

impl TrendHistogram {
    /// An empty, auto-resizing histogram of 3 significant digits.
    pub fn new() -> TrendHistogram {
        // Auto-resizing: memory grows with the largest value seen.
        TrendHistogram::Narrow(
            Histogram::new(3).expect("3 significant digits is a valid histogram"),
        )
    }

    /// The histogram of `hist`'s counts, narrow if its total fits.
    pub fn from_wide(hist: Histogram<u64>) -> TrendHistogram {
        if hist.len() <= NARROW_MAX
            && let Some(narrow) = convert::<u64, u32>(&hist)
        {
            return TrendHistogram::Narrow(narrow);
        }
        TrendHistogram::Wide(hist)
    }

    /// How many samples it holds.
    pub fn len(&self) -> u64 {
        match self {
            TrendHistogram::Narrow(h) => h.len(),
            TrendHistogram::Wide(h) => h.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether its counts are 64 bits.
    pub fn is_wide(&self) -> bool {
        matches!(self, TrendHistogram::Wide(_))
    }

    /// The lowest recorded value (0 if empty), as `Histogram::min`.
    pub fn min(&self) -> u64 {
        match self {
            TrendHistogram::Narrow(h) => h.min(),
            TrendHistogram::Wide(h) => h.min(),
        }
    }

    /// The highest recorded value, as `Histogram::max`.
    pub fn max(&self) -> u64 {
        match self {
            TrendHistogram::Narrow(h) => h.max(),
            TrendHistogram::Wide(h) => h.max(),
        }
    }

    pub fn mean(&self) -> f64 {
        match self {
            TrendHistogram::Narrow(h) => h.mean(),
            TrendHistogram::Wide(h) => h.mean(),
        }
    }

    pub fn value_at_percentile(&self, p: f64) -> u64 {
        match self {
            TrendHistogram::Narrow(h) => h.value_at_percentile(p),
            TrendHistogram::Wide(h) => h.value_at_percentile(p),
        }
    }

    /// The middle of the bin holding `value`.
    pub fn median_equivalent(&self, value: u64) -> u64 {
        match self {
            TrendHistogram::Narrow(h) => h.median_equivalent(value),
            TrendHistogram::Wide(h) => h.median_equivalent(value),
        }
    }

    /// Every non-empty bin, lowest first: the highest value it holds
    /// (`value_iterated_to`) and its count.
    pub fn recorded(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let (narrow, wide) = match self {
            TrendHistogram::Narrow(h) => (Some(h), None),
            TrendHistogram::Wide(h) => (None, Some(h)),
        };
        let narrow = narrow.into_iter().flat_map(|h| {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value().as_u64()))
        });
        let wide = wide.into_iter().flat_map(|h| {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
        });
        narrow.chain(wide)
    }

    /// Encode it with `serializer` (the same bytes for either width).
    pub fn serialize<S: Serializer, W: Write>(
        &self,
        serializer: &mut S,
        writer: &mut W,
    ) -> Result<usize, S::SerializeError> {
        match self {
            TrendHistogram::Narrow(h) => serializer.serialize(h, writer),
            TrendHistogram::Wide(h) => serializer.serialize(h, writer),
        }
    }

    /// Record one value. The request path: one comparison more than a
    /// plain `Histogram::record`.
    #[inline]
    fn record(&mut self, v: u64) {
        match self {
            // Total below u32::MAX: no bin is at u32::MAX, so adding one
            // cannot saturate.
            TrendHistogram::Narrow(h) if h.len() < NARROW_MAX => record_growing(h, v),
            _ => self.record_wide(v),
        }
    }

    #[cold]
    #[inline(never)]
    fn record_wide(&mut self, v: u64) {
        record_growing(self.widen(), v);
    }

    /// Add `other`'s samples, widening first if the sum of the totals
    /// would not fit a narrow histogram.
    fn add(&mut self, other: &TrendHistogram) {
        if other.is_empty() {
            return;
        }
        if let (TrendHistogram::Narrow(a), TrendHistogram::Narrow(b)) = (&mut *self, other)
            && a.len().saturating_add(b.len()) <= NARROW_MAX
        {
            // Both auto-resize, so adding cannot fail for lack of range.
            let _ = a.add(b);
            return;
        }
        let wide = self.widen();
        // hdrhistogram's `add` takes one counter type: a narrow `other`
        // is widened first (a copy, on this rare path only), so that the
        // sum is `add`'s own, down to the range it resizes to (which the
        // serialized header holds).
        let _ = match other {
            TrendHistogram::Narrow(b) => wide.add(widened(b)),
            TrendHistogram::Wide(b) => wide.add(b),
        };
    }

    /// Switch to `u64` counts (a no-op if already wide), keeping every
    /// count, the range and min/max as they read.
    fn widen(&mut self) -> &mut Histogram<u64> {
        if let TrendHistogram::Narrow(h) = self {
            *self = TrendHistogram::Wide(widened(h));
        }
        match self {
            TrendHistogram::Wide(h) => h,
            TrendHistogram::Narrow(_) => unreachable!("a narrow histogram was just widened"),
        }
    }

    /// Empty it, keeping its range. A wide one goes back to `u32` counts
    /// (a new allocation, at most once per 4.3 billion samples): empty, it
    /// fits them again, and a shard's sink lives the whole run.
    fn reset(&mut self) {
        match self {
            TrendHistogram::Narrow(h) => h.reset(),
            TrendHistogram::Wide(h) => *self = TrendHistogram::Narrow(Histogram::new_from(h)),
        }
    }
}

impl Default for TrendHistogram {
    fn default() -> TrendHistogram {
        TrendHistogram::new()
    }
}

/// Equal when they hold the same counts in the same range, whatever the
/// width of their counts.
impl PartialEq for TrendHistogram {
    fn eq(&self, other: &TrendHistogram) -> bool {
        match (self, other) {
            (TrendHistogram::Narrow(a), TrendHistogram::Narrow(b)) => a == b,
            (TrendHistogram::Wide(a), TrendHistogram::Wide(b)) => a == b,
            (TrendHistogram::Narrow(a), TrendHistogram::Wide(b))
            | (TrendHistogram::Wide(b), TrendHistogram::Narrow(a)) => widened(a) == *b,
        }
    }
}

fn record_growing<T: Counter>(h: &mut Histogram<T>, v: u64) {
    // `record` grows the auto-resizing histogram; `saturating_record`
    // would clamp to its current range.
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

/// `h` with `u64` counts: every `u32` count fits.
fn widened(h: &Histogram<u32>) -> Histogram<u64> {
    convert(h).expect("every u32 count fits a u64 one")
}

/// A histogram of `source`'s range and settings (`new_from`) holding its
/// counts as counters of type `T`; `None` if a count does not fit `T`.
/// Each bin is recorded at its lowest value, as hdrhistogram's own `add`
/// does between histograms of different layouts: `min`, `max` and every
/// percentile read as the source's.
fn convert<F: Counter, T: Counter>(source: &Histogram<F>) -> Option<Histogram<T>> {
    let mut out = Histogram::<T>::new_from(source);
    for v in source.iter_recorded() {
        let count = T::from_u64(v.count_at_value().as_u64())?;
        let value = source.lowest_equivalent(v.value_iterated_to());
        // In the range `new_from` copied: recording needs no resize.
        out.record_n(value, count).ok()?;
    }
    Some(out)
}

#[derive(Debug, Clone)]
pub struct TrendSink {
    pub count: u64,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
    scale: f64,
    hist: TrendHistogram,
}

impl TrendSink {
    pub fn new(is_time: bool) -> TrendSink {
        TrendSink {
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            scale: if is_time { TIME_SCALE } else { PLAIN_SCALE },
            hist: TrendHistogram::new(),
        }
    }

    /// Add one value. Negative values count in avg/min/max; percentiles
    /// treat them as 0 (an HdrHistogram holds non-negative integers).
    pub fn add(&mut self, value: f64) {
        if !value.is_finite() {
            return;
        }
        self.count += 1;
        self.sum += value;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        let scaled = (value.max(0.0) * self.scale).round() as u64;
        self.hist.record(scaled);
    }

    /// Add a duration in nanoseconds to a time trend.
    pub fn add_nanos(&mut self, nanos: u64) {
        let ms = nanos as f64 / 1e6;
        self.count += 1;
        self.sum += ms;
        self.min = self.min.min(ms);
        self.max = self.max.max(ms);
        self.hist.record(nanos);
    }

    /// A trend rebuilt from a histogram of scaled values alone (an
    /// `--out hdr` log): count, sum, min and max come from the histogram,
    /// so they are exact to its precision rather than exact.
    pub fn from_histogram(mut hist: Histogram<u64>, is_time: bool) -> TrendSink {
        // A deserialized histogram has a fixed range: without this,
        // merging a wider one into it (another shard's) failed, and
        // `merge` lost that histogram's values.
        hist.auto(true);
        let scale = if is_time { TIME_SCALE } else { PLAIN_SCALE };
        let count = hist.len();
        let (sum, min, max) = if count == 0 {
            (0.0, f64::INFINITY, f64::NEG_INFINITY)
        } else {
            (
                hist.mean() * count as f64 / scale,
                hist.min() as f64 / scale,
                hist.max() as f64 / scale,
            )
        };
        TrendSink {
            count,
            sum,
            min,
            max,
            scale,
            hist: TrendHistogram::from_wide(hist),
        }
    }

    /// The histogram of scaled values (nanoseconds for time trends,
    /// thousandths for plain ones).
    pub fn histogram(&self) -> &TrendHistogram {
        &self.hist
    }

    /// Whether values are milliseconds recorded as nanoseconds.
    pub fn is_time(&self) -> bool {
        self.scale == TIME_SCALE
    }

    /// Empty the sink, keeping the histogram's allocation for the next
    /// interval.
    pub fn reset(&mut self) {
        self.count = 0;
        self.sum = 0.0;
        self.min = f64::INFINITY;
        self.max = f64::NEG_INFINITY;
        self.hist.reset();
    }

    pub fn merge(&mut self, other: &TrendSink) {
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.hist.add(&other.hist);
    }

    pub fn avg(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    /// The value at percentile `p` (0-100), clamped to the exact min/max.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let v = self.hist.value_at_percentile(p) as f64 / self.scale;
        v.clamp(self.min, self.max)
    }

    pub fn median(&self) -> f64 {
        self.percentile(50.0)
    }

    pub fn min(&self) -> f64 {
        if self.count == 0 { 0.0 } else { self.min }
    }

    pub fn max(&self) -> f64 {
        if self.count == 0 { 0.0 } else { self.max }
    }
}

impl Sink {
    pub fn new(kind: MetricKind, is_time: bool) -> Sink {
        match kind {
            MetricKind::Counter => Sink::Counter { sum: 0.0, count: 0 },
            MetricKind::Gauge => Sink::Gauge {
                last: 0.0,
                min: f64::INFINITY,
                max: f64::NEG_INFINITY,
                at: 0,
            },
            MetricKind::Rate => Sink::Rate { trues: 0, total: 0 },
            MetricKind::Trend => Sink::Trend(TrendSink::new(is_time)),
        }
    }

    /// Record `value`; `at` orders gauge updates across threads.
    pub fn add(&mut self, value: f64, at: u64) {
        match self {
            Sink::Counter { sum, count } => {
                *sum += value;
                *count += 1;
            }
            Sink::Gauge {
                last,
                min,
                max,
                at: last_at,
            } => {
                if at >= *last_at {
                    *last = value;
                    *last_at = at;
                }
                *min = min.min(value);
                *max = max.max(value);
            }
            Sink::Rate { trues, total } => {
                *total += 1;
                if value != 0.0 {
                    *trues += 1;
                }
            }
            Sink::Trend(t) => t.add(value),
        }
    }

    pub fn merge(&mut self, other: &Sink) {
        match (self, other) {
            (Sink::Counter { sum, count }, Sink::Counter { sum: s, count: c }) => {
                *sum += s;
                *count += c;
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
                if *a >= *at {
                    *last = *l;
                    *at = *a;
                }
                *min = min.min(*mi);
                *max = max.max(*ma);
            }
            (Sink::Rate { trues, total }, Sink::Rate { trues: t, total: n }) => {
                *trues += t;
                *total += n;
            }
            (Sink::Trend(a), Sink::Trend(b)) => a.merge(b),
            // One metric id has one kind for the whole run.
            _ => {}
        }
    }

    /// Empty the sink for the next interval (a trend keeps its
    /// histogram's allocation).
    pub fn reset(&mut self) {
        match self {
            Sink::Trend(t) => t.reset(),
            Sink::Counter { sum, count } => {
                *sum = 0.0;
                *count = 0;
            }
            Sink::Gauge { last, min, max, at } => {
                *last = 0.0;
                *min = f64::INFINITY;
                *max = f64::NEG_INFINITY;
                *at = 0;
            }
            Sink::Rate { trues, total } => {
                *trues = 0;
                *total = 0;
            }
        }
    }

    /// How many samples went in.
    pub fn samples(&self) -> u64 {
        match self {
            Sink::Counter { count, .. } => *count,
            Sink::Gauge { min, .. } => u64::from(min.is_finite()),
            Sink::Rate { total, .. } => *total,
            Sink::Trend(t) => t.count,
        }
    }
}

#[cfg(test)]
mod properties;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trend_percentiles_are_within_hdr_precision() {
        let mut t = TrendSink::new(true);
        for ms in 1..=1000 {
            t.add(ms as f64);
        }
        assert_eq!(t.count, 1000);
        assert!((t.avg() - 500.5).abs() < 1e-9);
        for (p, want) in [(50.0, 500.0), (90.0, 900.0), (99.0, 990.0)] {
            let got = t.percentile(p);
            assert!((got - want).abs() / want < 0.001, "p{p}: {got} vs {want}");
        }
        assert_eq!(t.min(), 1.0);
        assert_eq!(t.max(), 1000.0);
    }

    #[test]
    fn merged_trends_equal_one_trend_of_all_values() {
        let (mut a, mut b, mut all) = (
            TrendSink::new(false),
            TrendSink::new(false),
            TrendSink::new(false),
        );
        for v in 0..500 {
            let x = (v * 37 % 211) as f64 * 1.5;
            if v % 2 == 0 { &mut a } else { &mut b }.add(x);
            all.add(x);
        }
        a.merge(&b);
        assert_eq!(a.count, all.count);
        assert_eq!(a.sum, all.sum);
        for p in [50.0, 90.0, 95.0, 99.0] {
            assert_eq!(a.percentile(p), all.percentile(p));
        }
    }

    use hdrhistogram::serialization::{V2DeflateSerializer, V2Serializer};

    /// What a user reads of a histogram, and its serialized bytes (the
    /// `--out hdr` log and the shard summary), for comparing against
    /// a `u64` one fed the same samples.
    #[derive(Debug, PartialEq)]
    pub(super) struct Readout {
        percentiles: Vec<u64>,
        len: u64,
        min: u64,
        max: u64,
        mean: f64,
        bins: Vec<(u64, u64)>,
        bytes: Vec<u8>,
    }

    pub(super) fn readout(h: &TrendHistogram) -> Readout {
        let mut bytes = Vec::new();
        h.serialize(&mut V2Serializer::new(), &mut bytes).unwrap();
        h.serialize(&mut V2DeflateSerializer::new(), &mut bytes)
            .unwrap();
        Readout {
            percentiles: PERCENTILES
                .iter()
                .map(|p| h.value_at_percentile(*p))
                .collect(),
            len: h.len(),
            min: h.min(),
            max: h.max(),
            mean: h.mean(),
            bins: h.recorded().collect(),
            bytes,
        }
    }

    /// The percentiles a readout takes (k6's usual ones and the ends).
    pub(super) const PERCENTILES: [f64; 10] =
        [0.0, 1.0, 25.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0];

    /// `h` read through the wide arm, which hands every read to
    /// hdrhistogram itself: the reference a narrow histogram must match.
    pub(super) fn reference(h: &Histogram<u64>) -> TrendHistogram {
        TrendHistogram::Wide(h.clone())
    }

    #[test]
    fn hdrhistogram_saturates_u32_counts_silently() {
        // Why the narrow histogram widens before it could overflow: the
        // crate clamps the bin and still counts the sample in its total,
        // so the bins no longer add up to it.
        let mut h = Histogram::<u32>::new(3).unwrap();
        h.record_n(1_000, u32::MAX).unwrap();
        h.record(1_000).unwrap();
        assert_eq!(h.count_at(1_000), u32::MAX);
        assert_eq!(h.len(), u64::from(u32::MAX) + 1);
        // The bins sum to one less than the total: the 100th percentile
        // is never reached and reads 0.
        assert_eq!(h.value_at_percentile(100.0), 0);
    }

    #[test]
    fn a_record_past_u32_counts_widens_exactly() {
        // A narrow histogram one sample short of the limit, built cheaply
        // with record_n, and the u64 one it must read as.
        let mut narrow = Histogram::<u32>::new(3).unwrap();
        let mut wide = Histogram::<u64>::new(3).unwrap();
        for (v, n) in [(0u64, 1u32), (1_500, 1), (2_000_000, u32::MAX - 5)] {
            narrow.record_n(v, n).unwrap();
            wide.record_n(v, u64::from(n)).unwrap();
        }
        let mut t = TrendSink::new(true);
        t.hist = TrendHistogram::Narrow(narrow);
        t.count = wide.len();
        assert_eq!(t.hist.len(), NARROW_MAX - 3);
        for ns in [2_000_000; 3] {
            t.add_nanos(ns);
            wide.record(ns).unwrap();
        }
        // At the limit, still narrow: every bin fits.
        assert!(!t.hist.is_wide());
        assert_eq!(readout(&t.hist), readout(&reference(&wide)));
        // The 2 ms bin at u32::MAX - 2: the third of these would take
        // it past u32::MAX.
        assert_eq!(wide.count_at(2_000_000), NARROW_MAX - 2);
        for ns in [2_000_000, 14_000_000_000, 2_000_000, 2_000_000] {
            t.add_nanos(ns);
            wide.record(ns).unwrap();
        }
        assert!(t.hist.is_wide());
        assert_eq!(t.hist.len(), NARROW_MAX + 4);
        assert_eq!(wide.count_at(2_000_000), NARROW_MAX + 1);
        assert_eq!(t.hist, reference(&wide));
        assert_eq!(readout(&t.hist), readout(&reference(&wide)));
        assert_eq!(t.count, wide.len());
        for p in [50.0, 99.0, 99.99999999] {
            assert_eq!(
                t.hist.value_at_percentile(p),
                wide.value_at_percentile(p),
                "p{p}"
            );
        }
        // The sink's own percentiles, as a u64 sink reads them.
        let mut want = t.clone();
        want.hist = reference(&wide);
        for p in [0.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            assert_eq!(t.percentile(p), want.percentile(p), "p{p}");
        }
    }

    #[test]
    fn a_merge_past_u32_counts_widens_exactly() {
        // Two interval aggregates of 3 billion samples each in one bin.
        let n = 3_000_000_000u32;
        let (mut a, mut b) = (
            Histogram::<u32>::new(3).unwrap(),
            Histogram::<u32>::new(3).unwrap(),
        );
        a.record_n(5_000_000, n).unwrap();
        a.record(12).unwrap();
        b.record_n(5_000_000, n).unwrap();
        b.record(900_000_000_000).unwrap();
        let mut want = Histogram::<u64>::new(3).unwrap();
        want.record_n(5_000_000, u64::from(n)).unwrap();
        want.record(12).unwrap();
        let mut wb = Histogram::<u64>::new(3).unwrap();
        wb.record_n(5_000_000, u64::from(n)).unwrap();
        wb.record(900_000_000_000).unwrap();
        want.add(&wb).unwrap();

        let mut got = TrendHistogram::Narrow(a.clone());
        got.add(&TrendHistogram::Narrow(b.clone()));
        assert!(got.is_wide());
        assert_eq!(got.len(), 2 * u64::from(n) + 2);
        assert_eq!(readout(&got), readout(&reference(&want)));

        // Wide into wide, narrow into wide, wide into narrow: the same.
        let mut more = want.clone();
        more.add(&wb).unwrap();
        let mut ww = got.clone();
        ww.add(&got.clone());
        let mut both = want.clone();
        both.add(&want).unwrap();
        assert_eq!(readout(&ww), readout(&reference(&both)));
        let mut wn = got.clone();
        wn.add(&TrendHistogram::Narrow(b.clone()));
        assert_eq!(readout(&wn), readout(&reference(&more)));
        let mut nw = TrendHistogram::Narrow(b.clone());
        nw.add(&got);
        assert!(nw.is_wide());
        let mut bw = wb.clone();
        bw.add(&want).unwrap();
        assert_eq!(readout(&nw), readout(&reference(&bw)));
    }

    #[test]
    fn narrow_and_wide_histograms_read_and_serialize_alike() {
        let mut t = TrendSink::new(true);
        let mut wide = Histogram::<u64>::new(3).unwrap();
        for i in 0..20_000u64 {
            let ns = (i * 7_919 % 10_007) * 1_000 + i * i;
            t.add_nanos(ns);
            wide.record(ns).unwrap();
        }
        assert!(!t.hist.is_wide());
        assert_eq!(readout(&t.hist), readout(&reference(&wide)));
        assert_eq!(t.hist, reference(&wide));
        // A decoded log's histogram (u64) comes back narrow, unchanged.
        let back = TrendSink::from_histogram(wide.clone(), true);
        assert!(!back.hist.is_wide());
        assert_eq!(readout(&back.hist), readout(&reference(&wide)));
        // A wide sink, reset, is narrow again and records as a new one.
        let mut w = TrendSink::new(true);
        w.hist = TrendHistogram::Wide(wide.clone());
        w.reset();
        assert!(!w.hist.is_wide());
        assert!(w.hist.is_empty());
        w.add_nanos(42);
        let mut one = Histogram::<u64>::new_from(&wide);
        one.record(42).unwrap();
        assert_eq!(readout(&w.hist), readout(&reference(&one)));
    }

    #[test]
    fn gauges_keep_the_latest_value_across_merges() {
        let mut a = Sink::new(MetricKind::Gauge, false);
        let mut b = Sink::new(MetricKind::Gauge, false);
        a.add(5.0, 10);
        b.add(3.0, 20);
        a.add(7.0, 5);
        a.merge(&b);
        match a {
            Sink::Gauge { last, min, max, .. } => assert_eq!((last, min, max), (3.0, 3.0, 7.0)),
            _ => unreachable!(),
        }
    }

    #[test]
    fn rates_count_non_zero_values() {
        let mut r = Sink::new(MetricKind::Rate, false);
        for v in [1.0, 0.0, 2.0, 0.0] {
            r.add(v, 0);
        }
        assert!(matches!(r, Sink::Rate { trues: 2, total: 4 }));
    }
}
