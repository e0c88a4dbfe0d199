//! The wire side of `--out prometheus-rw`: the remote-write 1.0 protobuf
//! messages (the subset of `prompb/types.proto` and `remote.proto` a
//! sender fills in, field numbers as there), the snappy block framing
//! the protocol asks for, and native histograms built from wload's
//! HdrHistograms.
//!
//! The messages are declared here with prost's derive instead of being
//! generated from the `.proto` files: no protoc, nothing fetched at build
//! time, and the few fields are easy to check against the spec.

use std::collections::BTreeMap;

use prost::Message;
use wload_metrics::TrendHistogram;

#[derive(Clone, PartialEq, Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TimeSeries {
    /// Sorted by name, `__name__` among them.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    pub histograms: Vec<Histogram>,
}

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// An integer native histogram (`count_int`, `zero_count_int`, deltas).
#[derive(Clone, PartialEq, Message)]
pub struct Histogram {
    #[prost(uint64, tag = "1")]
    pub count_int: u64,
    #[prost(double, tag = "3")]
    pub sum: f64,
    #[prost(sint32, tag = "4")]
    pub schema: i32,
    #[prost(double, tag = "5")]
    pub zero_threshold: f64,
    #[prost(uint64, tag = "6")]
    pub zero_count_int: u64,
    #[prost(message, repeated, tag = "11")]
    pub positive_spans: Vec<BucketSpan>,
    /// Each bucket's count minus the previous bucket's (the first's minus 0).
    #[prost(sint64, repeated, tag = "12")]
    pub positive_deltas: Vec<i64>,
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct BucketSpan {
    /// Gap to the previous span's end (the first span: its first index).
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    #[prost(uint32, tag = "2")]
    pub length: u32,
}

/// Prometheus' stale marker: the NaN a series ends with.
pub const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

/// The body of one push: protobuf, then snappy's block format (not its
/// framed stream format, which receivers refuse).
pub fn encode(request: &WriteRequest) -> Result<Vec<u8>, String> {
    let raw = request.encode_to_vec();
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .map_err(|e| format!("cannot compress a push of {} bytes: {e}", raw.len()))
}

/// Schema 3: eight buckets per power of two, each 9% wider than the one
/// below: the resolution k6's native histograms have (its bucket factor
/// 1.1 rounds to this schema), finer than the latency differences a
/// dashboard shows and coarser than the HdrHistogram it is built from.
pub const SCHEMA: i32 = 3;

/// Values at or below this count in the zero bucket (Prometheus' client
/// default: the smallest normal float32).
pub const ZERO_THRESHOLD: f64 = 2.938_735_877_055_719e-39;

/// A native histogram summed over a run: bucket index → count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NativeHistogram {
    pub count: u64,
    pub sum: f64,
    pub zero: u64,
    pub buckets: BTreeMap<i32, u64>,
}

impl NativeHistogram {
    /// Add `count` observations of `value`.
    pub fn observe(&mut self, value: f64, count: u64) {
        self.count += count;
        self.sum += value * count as f64;
        if value <= ZERO_THRESHOLD {
            self.zero += count;
        } else {
            *self.buckets.entry(bucket(value)).or_default() += count;
        }
    }

    /// Add one interval's HdrHistogram of values × `scale` (nanoseconds,
    /// thousandths), reported in units of `scale`: each of its buckets
    /// lands at its middle value. `sum` is the trend's exact sum, in the
    /// same units, which the buckets only approximate.
    pub fn add_hdr(&mut self, hdr: &TrendHistogram, scale: f64, sum: f64) {
        let before = self.sum;
        for (value, count) in hdr.recorded() {
            self.observe(hdr.median_equivalent(value) as f64 / scale, count);
        }
        self.sum = before + sum;
    }

    pub fn to_proto(&self, timestamp: i64) -> Histogram {
        let mut spans: Vec<BucketSpan> = Vec::new();
        let mut deltas = Vec::with_capacity(self.buckets.len());
        let (mut prev_index, mut prev_count) = (None::<i32>, 0u64);
        for (&index, &count) in &self.buckets {
            match prev_index {
                Some(p) if index == p + 1 => {
                    if let Some(last) = spans.last_mut() {
                        last.length += 1;
                    }
                }
                Some(p) => spans.push(BucketSpan {
                    offset: index - p - 1,
                    length: 1,
                }),
                None => spans.push(BucketSpan {
                    offset: index,
                    length: 1,
                }),
            }
            deltas.push(count as i64 - prev_count as i64);
            (prev_index, prev_count) = (Some(index), count);
        }
        Histogram {
            count_int: self.count,
            sum: self.sum,
            schema: SCHEMA,
            zero_threshold: ZERO_THRESHOLD,
            zero_count_int: self.zero,
            positive_spans: spans,
            positive_deltas: deltas,
            timestamp,
        }
    }
}

/// The index of the bucket holding `value` (> 0) at [`SCHEMA`]: bucket
/// `i` holds (2^((i-1)/8), 2^(i/8)], upper bound included, as in
/// Prometheus. Computed from the float's exponent and fraction so that
/// exact powers of two land where Prometheus puts them.
pub fn bucket(value: f64) -> i32 {
    let per_octave = 1i32 << SCHEMA;
    // value = frac × 2^exp with frac in [0.5, 1).
    let bits = value.to_bits();
    let raw_exp = ((bits >> 52) & 0x7ff) as i32;
    let (frac, exp) = if raw_exp == 0 {
        // Subnormal: scale into the normal range first.
        let scaled = value * f64::from_bits(0x4350_0000_0000_0000); // 2^54
        let b = scaled.to_bits();
        let e = ((b >> 52) & 0x7ff) as i32;
        (
            f64::from_bits((b & !(0x7ff << 52)) | (1022 << 52)),
            e - 1022 - 54,
        )
    } else {
        (
            f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52)),
            raw_exp - 1022,
        )
    };
    // The first bound in [0.5, 1) that is >= frac.
    let mut j = 0;
    while j < per_octave && upper(j) < frac {
        j += 1;
    }
    j + (exp - 1) * per_octave
}

/// The `j`-th bucket bound within an octave, in [0.5, 1].
fn upper(j: i32) -> f64 {
    (f64::from(j) / f64::from(1 << SCHEMA) - 1.0).exp2()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_their_upper_bound_as_in_prometheus() {
        // 1 is the upper bound of bucket 0; 2 of bucket 8; 0.5 of -8.
        assert_eq!(bucket(1.0), 0);
        assert_eq!(bucket(2.0), 8);
        assert_eq!(bucket(0.5), -8);
        assert_eq!(bucket(1.0001), 1);
        assert_eq!(bucket(1.09), 1);
        assert_eq!(bucket(1.0906), 2);
        assert_eq!(bucket(0.001), -79);
        assert!(bucket(f64::MIN_POSITIVE / 4.0) < bucket(f64::MIN_POSITIVE));
        for i in -100..100 {
            let upper = (f64::from(i) / 8.0).exp2();
            assert!(
                (bucket(upper * 1.000_001) - bucket(upper * 0.999_999)) == 1,
                "bucket {i}"
            );
        }
    }

    #[test]
    fn histograms_encode_as_spans_and_deltas() {
        let mut h = NativeHistogram::default();
        h.observe(0.0, 2);
        h.observe(1.0, 3); // bucket 0
        h.observe(1.05, 1); // bucket 1
        h.observe(2.0, 4); // bucket 8
        let p = h.to_proto(7);
        assert_eq!((p.count_int, p.zero_count_int), (10, 2));
        assert_eq!(
            p.positive_spans,
            vec![
                BucketSpan {
                    offset: 0,
                    length: 2
                },
                BucketSpan {
                    offset: 6,
                    length: 1
                }
            ]
        );
        assert_eq!(p.positive_deltas, vec![3, -2, 3]);
        assert!((p.sum - 12.05).abs() < 1e-9);
    }

    #[test]
    fn hdr_histograms_convert_with_their_count_and_exact_sum() {
        let mut trend = wload_metrics::TrendSink::new(true);
        for ns in [1_000_000u64, 2_000_000, 2_000_000, 500_000_000] {
            trend.add_nanos(ns);
        }
        let mut h = NativeHistogram::default();
        h.add_hdr(trend.histogram(), 1e9, 0.505);
        assert_eq!(h.count, 4);
        assert_eq!(h.buckets.values().sum::<u64>(), 4);
        assert_eq!(h.sum, 0.505);
        assert_eq!(h.buckets.get(&bucket(0.002)), Some(&2));
    }

    #[test]
    fn requests_round_trip_through_snappy_and_protobuf() {
        let req = WriteRequest {
            timeseries: vec![TimeSeries {
                labels: vec![Label {
                    name: "__name__".into(),
                    value: "k6_vus".into(),
                }],
                samples: vec![Sample {
                    value: 3.0,
                    timestamp: 1_700_000_000_000,
                }],
                histograms: vec![],
            }],
        };
        let body = encode(&req).unwrap();
        let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
        assert_eq!(WriteRequest::decode(raw.as_slice()).unwrap(), req);
    }
}
