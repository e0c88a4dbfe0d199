//! `per-vu-iterations`: each VU runs the same number of iterations, so the
//! total is `vus × iterations` however fast each VU is.

use std::time::Duration;

use super::shared_iterations::DEFAULT_MAX_DURATION;
use super::{Fields, Scenario, Segment, Vu, run_closed};
use wload_units::format::duration_short;

#[derive(Debug, Clone, PartialEq)]
pub struct PerVuIterations {
    pub vus: u32,
    pub iterations: u64,
    pub max_duration: Duration,
}

impl PerVuIterations {
    pub fn parse(f: &mut Fields<'_>) -> Self {
        let e = PerVuIterations {
            vus: f.vus("vus", Some(1), 1),
            iterations: f.count("iterations", Some(1), 1),
            max_duration: f.duration("maxDuration", Some(DEFAULT_MAX_DURATION)),
        };
        if e.max_duration.is_zero() {
            f.error("maxDuration", "must be longer than 0s");
        }
        e
    }

    pub fn initial_vus(&self, seg: &Segment) -> u32 {
        seg.scale_vus(self.vus)
    }

    pub fn max_vus(&self, seg: &Segment) -> u32 {
        self.initial_vus(seg)
    }

    pub fn max_duration(&self) -> Duration {
        self.max_duration
    }

    pub fn describe(&self) -> (String, String) {
        (
            format!(
                "{} iterations for each of {} VUs",
                self.iterations, self.vus
            ),
            format!("maxDuration: {}", duration_short(self.max_duration)),
        )
    }

    pub async fn run(&self, sc: Scenario, vus: Vec<Vu>) {
        let timer = sc.schedule_stop(self.max_duration);
        let per_vu = self.iterations;
        run_closed(sc, vus, move |vu| vu.iterations_started() < per_vu).await;
        timer.abort();
    }
}
