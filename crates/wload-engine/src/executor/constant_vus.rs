//! `constant-vus`: a fixed number of VUs loop over the test for a fixed
//! duration (what `--vus N --duration D` runs).

use std::time::Duration;

use super::{Fields, Scenario, Segment, Vu, run_closed};
use wload_units::format::duration_short;

#[derive(Debug, Clone, PartialEq)]
pub struct ConstantVus {
    pub vus: u32,
    pub duration: Duration,
}

impl ConstantVus {
    pub fn parse(f: &mut Fields<'_>) -> Self {
        let e = ConstantVus {
            vus: f.vus("vus", Some(1), 1),
            duration: f.duration("duration", None),
        };
        if e.duration.is_zero() {
            f.error("duration", "must be longer than 0s");
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
        self.duration
    }

    pub fn describe(&self) -> (String, String) {
        (
            format!(
                "{} looping VUs for {}",
                self.vus,
                duration_short(self.duration)
            ),
            String::new(),
        )
    }

    pub async fn run(&self, sc: Scenario, vus: Vec<Vu>) {
        let timer = sc.schedule_stop(self.duration);
        run_closed(sc, vus, |_| true).await;
        timer.abort();
    }
}
