//! `constant-arrival-rate`: `rate` iterations per `timeUnit`, started on
//! schedule whatever the response times (an open model, as wrk2's
//! constant throughput). Iteration `i` is due at `i · timeUnit / rate`, so
//! the count over the duration is exact.

use std::time::Duration;

use super::arrival::run_open;
use super::{BoxFuture, Executor, Fields, Scenario, Segment, Vu, zero_duration};
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
    /// When iteration `i` is due, if within the duration.
    pub fn offset(&self, i: u64) -> Option<Duration> {
        let secs = i as f64 * self.time_unit.as_secs_f64() / self.rate;
        // `try_`: a panic is never the answer, even for a rate that the
        // validation let through; NaN and infinity are simply never due.
        Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|at| *at < self.duration)
    }
}

impl Executor for ConstantArrivalRate {
    fn parse(f: &mut Fields<'_>) -> Self {
        let rate = f.positive("rate", None);
        let time_unit = f.duration("timeUnit", Some(Duration::from_secs(1)));
        let duration = f.duration("duration", None);
        let pre_allocated_vus = f.vus("preAllocatedVUs", None, 0);
        let max_vus = f.vus("maxVUs", Some(pre_allocated_vus), 0);
        ConstantArrivalRate {
            rate,
            time_unit,
            duration,
            pre_allocated_vus,
            max_vus,
        }
    }

    fn validate(&self) -> Vec<(String, String)> {
        let mut problems =
            open_model_problems(self.time_unit, self.pre_allocated_vus, self.max_vus);
        problems.extend(rate_problem("rate", self.rate, self.time_unit));
        problems.extend(zero_duration("duration", self.duration));
        problems
    }

    fn initial_vus(&self, seg: &Segment) -> u32 {
        seg.scale_vus(self.pre_allocated_vus)
    }

    fn max_vus(&self, seg: &Segment) -> u32 {
        seg.scale_vus(self.max_vus)
    }

    fn max_duration(&self) -> Duration {
        self.duration
    }

    fn describe(&self) -> (String, String) {
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

    fn run<'a>(&'a self, sc: Scenario, vus: Vec<Vu>) -> BoxFuture<'a> {
        let max = self.max_vus(&sc.segment);
        let plan = self.clone();
        Box::pin(run_open(sc, vus, self.duration, max, move |i| {
            plan.offset(i)
        }))
    }
}

/// The fastest arrival rate: one iteration per nanosecond. The schedule
/// counts in nanoseconds, so a faster rate could not be kept anyway, and
/// bounding it keeps the schedule's arithmetic finite (a rate of 1e300
/// per 1ns is infinite per second, and its offsets NaN).
pub const MAX_RATE_PER_SECOND: f64 = 1e9;

/// The problem of a rate (`rate`, `startRate`, a stage's `target`, per
/// `time_unit`) faster than [`MAX_RATE_PER_SECOND`], if it is.
pub fn rate_problem(key: &str, rate: f64, time_unit: Duration) -> Option<(String, String)> {
    let unit = time_unit.as_secs_f64();
    // A zero timeUnit is reported on its own.
    // Huge rates in exponent form: `number` would print all 300 digits.
    let shown = if rate < 1e15 {
        number(rate, 2)
    } else {
        format!("{rate:e}")
    };
    // Rates read are finite and at least 0, so the quotient is never NaN
    // (infinite at most, which is too fast).
    (unit > 0.0 && rate / unit > MAX_RATE_PER_SECOND).then(|| {
        (
            key.to_owned(),
            format!(
                "{shown} per {} is faster than the maximum of 1e9 iterations per second (one per nanosecond)",
                duration_short(time_unit)
            ),
        )
    })
}

/// Checks both arrival-rate executors share.
pub fn open_model_problems(
    time_unit: Duration,
    pre_allocated: u32,
    max_vus: u32,
) -> Vec<(String, String)> {
    let mut problems: Vec<_> = zero_duration("timeUnit", time_unit).into_iter().collect();
    if max_vus < pre_allocated {
        problems.push((
            "maxVUs".into(),
            format!("({max_vus}) must be at least preAllocatedVUs ({pre_allocated})"),
        ));
    }
    if max_vus == 0 {
        problems.push((
            "maxVUs".into(),
            "must be at least 1 (set preAllocatedVUs or maxVUs)".into(),
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::read;
    use serde_json::json;

    #[test]
    fn every_problem_is_reported() {
        let (_, errors) = read::<ConstantArrivalRate>(json!({
            "rate": 10, "timeUnit": "0s", "duration": "10s",
            "preAllocatedVUs": 5, "maxVUs": 2,
        }));
        assert_eq!(
            errors,
            [
                "scenarios.s.timeUnit: must be longer than 0s",
                "scenarios.s.maxVUs: (2) must be at least preAllocatedVUs (5)",
            ]
        );
        let (e, errors) = read::<ConstantArrivalRate>(json!({
            "rate": 10, "duration": "10s", "preAllocatedVUs": 5, "maxVUs": 20,
        }));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(e.initial_vus(&Segment::FULL), 5);
        assert_eq!(e.max_vus(&Segment::FULL), 20);
        assert_eq!(e.describe().1, "maxVUs: 5-20");
    }

    #[test]
    fn a_rate_faster_than_one_per_nanosecond_is_refused() {
        let (_, errors) = read::<ConstantArrivalRate>(json!({
            "rate": 1e300, "timeUnit": "1ns", "duration": "10s", "preAllocatedVUs": 1,
        }));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("scenarios.s.rate: 1e300 per 1ns is faster")
                && errors[0].ends_with(
                    "is faster than the maximum of 1e9 iterations per second (one per nanosecond)"
                ),
            "{errors:?}"
        );
        let (_, errors) = read::<ConstantArrivalRate>(json!({
            "rate": 1e9, "timeUnit": "1s", "duration": "10s", "preAllocatedVUs": 1,
        }));
        assert!(errors.is_empty(), "{errors:?}");
    }

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
