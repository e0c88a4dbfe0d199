//! `per-vu-iterations`: each VU runs the same number of iterations, so the
//! total is `vus × iterations` however fast each VU is.

use std::time::Duration;

use super::shared_iterations::DEFAULT_MAX_DURATION;
use super::{BoxFuture, Executor, Fields, Scenario, Segment, Vu, run_closed, zero_duration};
use wload_units::format::duration_short;

#[derive(Debug, Clone, PartialEq)]
pub struct PerVuIterations {
    pub vus: u32,
    pub iterations: u64,
    pub max_duration: Duration,
}

impl Executor for PerVuIterations {
    fn parse(f: &mut Fields<'_>) -> Self {
        PerVuIterations {
            vus: f.vus("vus", Some(1), 1),
            iterations: f.count("iterations", Some(1), 1),
            max_duration: f.duration("maxDuration", Some(DEFAULT_MAX_DURATION)),
        }
    }

    fn validate(&self) -> Vec<(String, String)> {
        zero_duration("maxDuration", self.max_duration)
            .into_iter()
            .collect()
    }

    fn initial_vus(&self, seg: &Segment) -> u32 {
        seg.scale_vus(self.vus)
    }

    fn max_duration(&self) -> Duration {
        self.max_duration
    }

    fn describe(&self) -> (String, String) {
        (
            format!(
                "{} iterations for each of {} VUs",
                self.iterations, self.vus
            ),
            format!("maxDuration: {}", duration_short(self.max_duration)),
        )
    }

    fn run<'a>(&'a self, sc: Scenario, vus: Vec<Vu>) -> BoxFuture<'a> {
        Box::pin(async move {
            let _stop = sc.schedule_stop(self.max_duration);
            let per_vu = self.iterations;
            run_closed(sc, vus, move |vu| vu.iterations_started() < per_vu).await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::read;
    use serde_json::json;

    #[test]
    fn options_plan_and_description() {
        let (e, errors) =
            read::<PerVuIterations>(json!({"vus": 4, "iterations": 5, "maxDuration": "1m"}));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(e.max_duration(), Duration::from_secs(60));
        assert_eq!(e.initial_vus(&Segment::FULL), 4);
        assert_eq!(e.max_vus(&Segment::parse("1/2:1").unwrap()), 2);
        assert_eq!(e.describe().0, "5 iterations for each of 4 VUs");
    }

    #[test]
    fn every_problem_is_reported() {
        let (_, errors) =
            read::<PerVuIterations>(json!({"vus": "x", "iterations": 0, "maxDuration": "0s"}));
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].starts_with("scenarios.s.vus:"));
        assert!(errors[1].starts_with("scenarios.s.iterations:"));
        assert_eq!(errors[2], "scenarios.s.maxDuration: must be longer than 0s");
    }
}
