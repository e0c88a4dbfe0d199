//! `constant-vus`: a fixed number of VUs loop over the test for a fixed
//! duration (what `--vus N --duration D` runs).

use std::time::Duration;

use super::{BoxFuture, Executor, Fields, Scenario, Segment, Vu, run_closed, zero_duration};
use wload_units::format::duration_short;

#[derive(Debug, Clone, PartialEq)]
pub struct ConstantVus {
    pub vus: u32,
    pub duration: Duration,
}

impl Executor for ConstantVus {
    fn parse(f: &mut Fields<'_>) -> Self {
        ConstantVus {
            vus: f.vus("vus", Some(1), 1),
            duration: f.duration("duration", None),
        }
    }

    fn validate(&self) -> Vec<(String, String)> {
        zero_duration("duration", self.duration)
            .into_iter()
            .collect()
    }

    fn initial_vus(&self, seg: &Segment) -> u32 {
        seg.scale_vus(self.vus)
    }

    fn max_duration(&self) -> Duration {
        self.duration
    }

    fn describe(&self) -> (String, String) {
        (
            format!(
                "{} looping VUs for {}",
                self.vus,
                duration_short(self.duration)
            ),
            String::new(),
        )
    }

    fn run<'a>(&'a self, sc: Scenario, vus: Vec<Vu>) -> BoxFuture<'a> {
        Box::pin(async move {
            let _stop = sc.schedule_stop(self.duration);
            run_closed(sc, vus, |_| true).await;
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
        let (e, errors) = read::<ConstantVus>(json!({"vus": 10, "duration": "30s"}));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(e.max_duration(), Duration::from_secs(30));
        assert_eq!(e.initial_vus(&Segment::FULL), 10);
        assert_eq!(e.max_vus(&Segment::FULL), 10);
        let half = Segment::parse("0:1/2").unwrap();
        assert_eq!(e.initial_vus(&half), 5);
        assert_eq!(e.describe().0, "10 looping VUs for 30s");
    }

    #[test]
    fn every_problem_is_reported() {
        let (_, errors) = read::<ConstantVus>(json!({"vus": 0}));
        assert_eq!(
            errors,
            [
                "scenarios.s.vus: must be a whole number of at least 1, not 0",
                "scenarios.s.duration: is required (a duration such as \"30s\")",
                "scenarios.s.duration: must be longer than 0s",
            ]
        );
    }
}
