//! Sinks: the running aggregate of one series (a metric with one tag set).
//!
//! Counters, gauges and rates keep a few numbers. Trends keep an exact
//! count/sum/min/max plus an HdrHistogram (3 significant digits) for
//! percentiles, so that sinks merge without loss, unlike a sample list.

use hdrhistogram::Histogram;

use super::MetricKind;

/// Trend values are recorded into the histogram as integers of this many
/// units per value unit: time trends are in milliseconds, so nanoseconds;
/// plain trends keep three decimals.
pub const TIME_SCALE: f64 = 1_000_000.0;
pub const PLAIN_SCALE: f64 = 1_000.0;

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

#[derive(Debug, Clone)]
pub struct TrendSink {
    pub count: u64,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
    scale: f64,
    hist: Histogram<u64>,
}

impl TrendSink {
    pub fn new(is_time: bool) -> TrendSink {
        TrendSink {
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            scale: if is_time { TIME_SCALE } else { PLAIN_SCALE },
            // Auto-resizing: memory grows with the largest value seen.
            hist: Histogram::new(3).expect("3 significant digits is a valid histogram"),
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
        self.record_scaled(scaled);
    }

    /// Add a duration in nanoseconds to a time trend.
    pub fn add_nanos(&mut self, nanos: u64) {
        let ms = nanos as f64 / 1e6;
        self.count += 1;
        self.sum += ms;
        self.min = self.min.min(ms);
        self.max = self.max.max(ms);
        self.record_scaled(nanos);
    }

    fn record_scaled(&mut self, v: u64) {
        // `record` grows the auto-resizing histogram; `saturating_record`
        // would clamp to its current range.
        if self.hist.record(v).is_err() {
            self.hist.saturating_record(v);
        }
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
            hist,
        }
    }

    /// The histogram of scaled values (nanoseconds for time trends,
    /// thousandths for plain ones).
    pub fn histogram(&self) -> &Histogram<u64> {
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
        // Both auto-resize, so adding cannot fail for lack of range.
        let _ = self.hist.add(&other.hist);
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
