//! Custom metrics: counters, gauges, rates and trends, summarised at the
//! end of the run like the built-in ones.
//!
//! Create handles in [`crate::Test::new`] and keep them: defining is a host
//! call, adding is cheap. Values of time metrics are milliseconds.

use std::time::Duration;

use crate::bindings::wload::test::metrics::{self as wit, MetricKind};
use crate::http::owned_fields;

fn define(name: &str, kind: MetricKind, is_time: bool) -> u32 {
    match wit::define(name, kind, is_time) {
        Ok(id) => id,
        Err(e) => panic!("cannot define metric {name:?}: {e}"),
    }
}

macro_rules! metric_type {
    ($(#[$doc:meta])* $name:ident, $kind:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name(u32);

        impl $name {
            /// Define (or look up) the metric `name`. Panics when the name
            /// is invalid or taken by a metric of another type.
            pub fn new(name: &str) -> Self {
                $name(define(name, $kind, false))
            }
            /// Like `new`, returning the engine's refusal instead of
            /// panicking.
            pub fn try_new(name: &str) -> Result<Self, String> {
                wit::define(name, $kind, false).map($name)
            }
        }
    };
}

metric_type!(
    /// A sum: `add(1.0)` per event. Summary shows count and rate.
    Counter,
    MetricKind::Counter
);
metric_type!(
    /// The last value set, with its min and max.
    Gauge,
    MetricKind::Gauge
);
metric_type!(
    /// The share of true outcomes.
    Rate,
    MetricKind::Rate
);
metric_type!(
    /// A distribution with avg, min, med, max and percentiles.
    Trend,
    MetricKind::Trend
);

impl Counter {
    pub fn add(&self, value: f64) {
        wit::add(self.0, value, &[]);
    }
    pub fn add_tagged(&self, value: f64, tags: &[(&str, &str)]) {
        wit::add(self.0, value, &owned_fields(tags));
    }
}

impl Gauge {
    pub fn set(&self, value: f64) {
        wit::add(self.0, value, &[]);
    }
    pub fn set_tagged(&self, value: f64, tags: &[(&str, &str)]) {
        wit::add(self.0, value, &owned_fields(tags));
    }
}

impl Rate {
    pub fn add(&self, ok: bool) {
        wit::add(self.0, if ok { 1.0 } else { 0.0 }, &[]);
    }
    pub fn add_tagged(&self, ok: bool, tags: &[(&str, &str)]) {
        wit::add(self.0, if ok { 1.0 } else { 0.0 }, &owned_fields(tags));
    }
}

impl Trend {
    /// A trend of durations, shown in the summary as times.
    pub fn time(name: &str) -> Self {
        Trend(define(name, MetricKind::Trend, true))
    }
    pub fn add(&self, value: f64) {
        wit::add(self.0, value, &[]);
    }
    pub fn add_tagged(&self, value: f64, tags: &[(&str, &str)]) {
        wit::add(self.0, value, &owned_fields(tags));
    }
    /// Add a duration (in milliseconds) to a time trend.
    pub fn add_duration(&self, d: Duration) {
        wit::add(self.0, d.as_secs_f64() * 1000.0, &[]);
    }
}
