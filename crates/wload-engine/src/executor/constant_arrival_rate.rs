//! `constant-arrival-rate`: `rate` iterations per `timeUnit`, started on
//! schedule whatever the response times (an open model, as wrk2's
//! constant throughput). Iteration `i` is due at `i · timeUnit / rate`, so
//! the count over the duration is exact.

use std::time::Duration;

use super::arrival::run_open;
use super::{Fields, Scenario, Segment, Vu};
use wload_units::format::{duration_short, number, per_unit};

#[derive(Debug, Clone, PartialEq)]
pub struct ConstantArrivalRate {
    pub rate: f64,
    pub time_unit: Duration,
    pub duration: Duration,
    pub pre_allocated_vus: u32,
    pub max_vus: u32,
}

impl ConstantArrivalRate {
    pub fn parse(f: &mut Fields<'_>) -> Self {
        let rate = f.positive("rate", None);
        let time_unit = f.duration("timeUnit", Some(Duration::from_secs(1)));
        let duration = f.duration("duration", None);
        let pre_allocated_vus = f.vus("preAllocatedVUs", None, 0);
        let max_vus = f.vus("maxVUs", Some(pre_allocated_vus), 0);
        check_open_model(f, time_unit, pre_allocated_vus, max_vus);
        if duration.is_zero() {
            f.error("duration", "must be longer than 0s");
        }
        ConstantArrivalRate {
            rate,
            time_unit,
            duration,
            pre_allocated_vus,
            max_vus,
        }
    }

    /// When iteration `i` is due, if within the duration.
    pub fn offset(&self, i: u64) -> Option<Duration> {
        let secs = i as f64 * self.time_unit.as_secs_f64() / self.rate;
        (secs < self.duration.as_secs_f64()).then(|| Duration::from_secs_f64(secs))
    }

    pub fn initial_vus(&self, seg: &Segment) -> u32 {
        seg.scale_vus(self.pre_allocated_vus)
    }

    pub fn max_vus(&self, seg: &Segment) -> u32 {
        seg.scale_vus(self.max_vus)
    }

    pub fn max_duration(&self) -> Duration {
        self.duration
    }

    pub fn describe(&self) -> (String, String) {
        (
            format!(
                "{} iterations/{} for {}",
                number(self.rate, 2),
                per_unit(self.time_unit),
                duration_short(self.duration)
            ),
            format!("maxVUs: {}-{}", self.pre_allocated_vus, self.max_vus),
        )
    }

    pub async fn run(&self, sc: Scenario, vus: Vec<Vu>) {
        let max = self.max_vus(&sc.segment);
        let plan = self.clone();
        run_open(sc, vus, self.duration, max, move |i| plan.offset(i)).await;
    }
}

/// Checks both arrival-rate executors share.
pub fn check_open_model(f: &mut Fields<'_>, time_unit: Duration, pre_allocated: u32, max_vus: u32) {
    if time_unit.is_zero() {
        f.error("timeUnit", "must be longer than 0s");
    }
    if max_vus < pre_allocated {
        f.error(
            "maxVUs",
            format!("({max_vus}) must be at least preAllocatedVUs ({pre_allocated})"),
        );
    }
    if max_vus == 0 {
        f.error(
            "maxVUs",
            "must be at least 1 (set preAllocatedVUs or maxVUs)",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_exact() {
        let e = ConstantArrivalRate {
            rate: 5000.0,
            time_unit: Duration::from_secs(1),
            duration: Duration::from_secs(10),
            pre_allocated_vus: 10,
            max_vus: 10,
        };
        let count = (0..).take_while(|&i| e.offset(i).is_some()).count();
        assert_eq!(count, 50_000);
        assert_eq!(e.offset(5000), Some(Duration::from_secs(1)));
        let per_minute = ConstantArrivalRate {
            rate: 30.0,
            time_unit: Duration::from_secs(60),
            ..e
        };
        assert_eq!(per_minute.offset(1), Some(Duration::from_secs(2)));
        assert_eq!(
            (0..)
                .take_while(|&i| per_minute.offset(i).is_some())
                .count(),
            5
        );
    }
}
