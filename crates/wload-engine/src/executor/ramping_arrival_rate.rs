//! `ramping-arrival-rate`: the arrival rate follows linear stages from
//! `startRate`, in iterations per `timeUnit`, started on schedule (open
//! model). Iteration `i` is due when the integral of the rate reaches
//! `i`, solved per stage, so the count over the stages is exact.

use std::time::Duration;

use super::arrival::run_open;
use super::constant_arrival_rate::{open_model_problems, rate_problem};
use super::{BoxFuture, Executor, Fields, Scenario, Segment, Stage, Vu};
use wload_units::format::{duration_short, number, per_unit};

#[derive(Debug, Clone, PartialEq)]
pub struct RampingArrivalRate {
    pub start_rate: f64,
    pub time_unit: Duration,
    pub stages: Vec<Stage>,
    pub pre_allocated_vus: u32,
    pub max_vus: u32,
}

impl RampingArrivalRate {
    /// When iteration `i` is due: the time at which the number of
    /// iterations the rate has produced since the start exceeds `i`.
    pub fn offset(&self, i: u64) -> Option<Duration> {
        let unit = self.time_unit.as_secs_f64();
        let mut need = i as f64;
        let mut from = self.start_rate / unit;
        let mut offset = 0.0;
        for s in &self.stages {
            let d = s.duration.as_secs_f64();
            let to = s.target / unit;
            let produced = (from + to) / 2.0 * d;
            if need < produced {
                // need = from·τ + (to − from)·τ² / (2d), for τ in [0, d).
                let a = (to - from) / (2.0 * d);
                let tau = if a.abs() < 1e-12 {
                    need / from
                } else {
                    (-from + (from * from + 4.0 * a * need).max(0.0).sqrt()) / (2.0 * a)
                };
                // `try_`: the validation keeps rates finite, but a panic
                // is never the answer; a NaN ends the schedule instead.
                return Duration::try_from_secs_f64(offset + tau.clamp(0.0, d)).ok();
            }
            need -= produced;
            offset += d;
            from = to;
        }
        None
    }
}

impl Executor for RampingArrivalRate {
    fn parse(f: &mut Fields<'_>) -> Self {
        let start_rate = f.non_negative("startRate", 0.0);
        let time_unit = f.duration("timeUnit", Some(Duration::from_secs(1)));
        let stages = f.stages("stages");
        let pre_allocated_vus = f.vus("preAllocatedVUs", None, 0);
        let max_vus = f.vus("maxVUs", Some(pre_allocated_vus), 0);
        RampingArrivalRate {
            start_rate,
            time_unit,
            stages,
            pre_allocated_vus,
            max_vus,
        }
    }

    fn validate(&self) -> Vec<(String, String)> {
        let mut problems =
            open_model_problems(self.time_unit, self.pre_allocated_vus, self.max_vus);
        problems.extend(rate_problem("startRate", self.start_rate, self.time_unit));
        for (i, s) in self.stages.iter().enumerate() {
            problems.extend(rate_problem(
                &format!("stages[{i}].target"),
                s.target,
                self.time_unit,
            ));
        }
        if self.max_duration().is_zero() && !self.stages.is_empty() {
            problems.push(("stages".into(), "must last longer than 0s in total".into()));
        }
        problems
    }

    fn initial_vus(&self, seg: &Segment) -> u32 {
        seg.scale_vus(self.pre_allocated_vus)
    }

    fn max_vus(&self, seg: &Segment) -> u32 {
        seg.scale_vus(self.max_vus)
    }

    fn max_duration(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    fn describe(&self) -> (String, String) {
        let peak = self
            .stages
            .iter()
            .map(|s| s.target)
            .fold(self.start_rate, f64::max);
        (
            format!(
                "Up to {} iterations/{} for {} over {} stages",
                number(peak, 2),
                per_unit(self.time_unit),
                duration_short(self.max_duration()),
                self.stages.len()
            ),
            format!("maxVUs: {}-{}", self.pre_allocated_vus, self.max_vus),
        )
    }

    fn run<'a>(&'a self, sc: Scenario, vus: Vec<Vu>) -> BoxFuture<'a> {
        let max = self.max_vus(&sc.segment);
        let plan = self.clone();
        Box::pin(run_open(sc, vus, self.max_duration(), max, move |i| {
            plan.offset(i)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(secs: u64, target: f64) -> Stage {
        Stage {
            duration: Duration::from_secs(secs),
            target,
        }
    }

    #[test]
    fn the_schedule_integrates_the_rate() {
        // 0 → 100/s over 10 s (500 iterations), 100/s for 5 s (500 more),
        // 100 → 0/s over 10 s (500 more).
        let e = RampingArrivalRate {
            start_rate: 0.0,
            time_unit: Duration::from_secs(1),
            stages: vec![stage(10, 100.0), stage(5, 100.0), stage(10, 0.0)],
            pre_allocated_vus: 1,
            max_vus: 1,
        };
        let count = (0..).take_while(|&i| e.offset(i).is_some()).count();
        assert!((1499..=1500).contains(&count), "{count}");
        // Half way up the first ramp (rate 50/s) 125 iterations are done.
        let t = e.offset(125).unwrap().as_secs_f64();
        assert!((t - 5.0).abs() < 1e-9, "{t}");
        let t = e.offset(750).unwrap().as_secs_f64();
        assert!((t - 12.5).abs() < 1e-9, "{t}");
        // Offsets never go backwards.
        let offs: Vec<_> = (0..count as u64).map(|i| e.offset(i).unwrap()).collect();
        assert!(offs.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn a_constant_stage_matches_constant_arrival_rate() {
        let e = RampingArrivalRate {
            start_rate: 60.0,
            time_unit: Duration::from_secs(60),
            stages: vec![stage(30, 60.0)],
            pre_allocated_vus: 1,
            max_vus: 1,
        };
        assert_eq!(e.offset(1), Some(Duration::from_secs(1)));
        assert_eq!((0..).take_while(|&i| e.offset(i).is_some()).count(), 30);
    }

    #[test]
    fn rates_too_fast_are_refused_and_never_panic() {
        // 1e300 per nanosecond is infinite per second: the schedule's
        // square root became NaN and Duration::from_secs_f64 panicked.
        let e = RampingArrivalRate {
            start_rate: 0.0,
            time_unit: Duration::from_nanos(1),
            stages: vec![stage(10, 1e300)],
            pre_allocated_vus: 1,
            max_vus: 1,
        };
        assert_eq!(e.offset(0), Some(Duration::ZERO));
        assert_eq!(e.offset(1), None);
        let problems = e.validate();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].0, "stages[0].target");
        let e = RampingArrivalRate {
            start_rate: 2e9,
            time_unit: Duration::from_secs(1),
            stages: vec![stage(10, 1e9)],
            pre_allocated_vus: 1,
            max_vus: 1,
        };
        let keys: Vec<_> = e.validate().into_iter().map(|p| p.0).collect();
        assert_eq!(keys, ["startRate"]);
    }
}
