//! `shared-iterations`: a fixed number of iterations shared by the VUs;
//! fast VUs do more of them. The total is exact: each iteration is claimed
//! from one atomic counter before it starts (what `--iterations N` runs).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{Fields, Scenario, Segment, Vu, run_closed};
use wload_units::format::duration_short;

/// k6's default `maxDuration` for iteration-based executors.
pub const DEFAULT_MAX_DURATION: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, PartialEq)]
pub struct SharedIterations {
    pub vus: u32,
    pub iterations: u64,
    pub max_duration: Duration,
}

impl SharedIterations {
    pub fn parse(f: &mut Fields<'_>) -> Self {
        let e = SharedIterations {
            vus: f.vus("vus", Some(1), 1),
            iterations: f.count("iterations", Some(1), 1),
            max_duration: f.duration("maxDuration", Some(DEFAULT_MAX_DURATION)),
        };
        if u64::from(e.vus) > e.iterations {
            f.error(
                "vus",
                format!(
                    "{} VUs for {} iterations: vus must not exceed iterations (the extra VUs would never run)",
                    e.vus, e.iterations
                ),
            );
        }
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
                "{} iterations shared among {} VUs",
                self.iterations, self.vus
            ),
            format!("maxDuration: {}", duration_short(self.max_duration)),
        )
    }

    pub async fn run(&self, sc: Scenario, vus: Vec<Vu>) {
        let timer = sc.schedule_stop(self.max_duration);
        let total = sc.segment.scale(self.iterations);
        let claimed = Arc::new(AtomicU64::new(0));
        run_closed(sc, vus, move |_| {
            claimed.fetch_add(1, Ordering::Relaxed) < total
        })
        .await;
        timer.abort();
    }
}
