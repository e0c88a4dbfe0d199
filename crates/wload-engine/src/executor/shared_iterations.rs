//! `shared-iterations`: a fixed number of iterations shared by the VUs;
//! fast VUs do more of them. The total is exact: each iteration is claimed
//! from one atomic counter before it starts (what `--iterations N` runs).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{BoxFuture, Executor, Fields, Scenario, Segment, Vu, run_closed, zero_duration};
use wload_units::format::duration_short;

/// k6's default `maxDuration` for iteration-based executors.
pub const DEFAULT_MAX_DURATION: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, PartialEq)]
pub struct SharedIterations {
    pub vus: u32,
    pub iterations: u64,
    pub max_duration: Duration,
}

impl Executor for SharedIterations {
    fn parse(f: &mut Fields<'_>) -> Self {
        SharedIterations {
            vus: f.vus("vus", Some(1), 1),
            iterations: f.count("iterations", Some(1), 1),
            max_duration: f.duration("maxDuration", Some(DEFAULT_MAX_DURATION)),
        }
    }

    fn validate(&self) -> Vec<(String, String)> {
        let mut problems = Vec::new();
        if u64::from(self.vus) > self.iterations {
            problems.push((
                "vus".into(),
                format!(
                    "{} VUs for {} iterations: vus must not exceed iterations (the extra VUs would never run)",
                    self.vus, self.iterations
                ),
            ));
        }
        problems.extend(zero_duration("maxDuration", self.max_duration));
        problems
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
                "{} iterations shared among {} VUs",
                self.iterations, self.vus
            ),
            format!("maxDuration: {}", duration_short(self.max_duration)),
        )
    }

    fn run<'a>(&'a self, sc: Scenario, vus: Vec<Vu>) -> BoxFuture<'a> {
        Box::pin(async move {
            let _stop = sc.schedule_stop(self.max_duration);
            let claims = Claims::new(sc.segment.scale(self.iterations));
            run_closed(sc, vus, move |_| claims.claim()).await;
        })
    }
}

/// The iterations left to share: each VU claims one before it starts it,
/// so the total is exact however the VUs race.
#[derive(Clone)]
struct Claims {
    claimed: Arc<AtomicU64>,
    total: u64,
}

impl Claims {
    fn new(total: u64) -> Claims {
        Claims {
            claimed: Arc::new(AtomicU64::new(0)),
            total,
        }
    }

    /// Whether the caller may start one more iteration.
    fn claim(&self) -> bool {
        self.claimed.fetch_add(1, Ordering::Relaxed) < self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::read;
    use serde_json::json;

    #[test]
    fn options_plan_and_description() {
        let (e, errors) = read::<SharedIterations>(json!({"vus": 3, "iterations": 10}));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(e.max_duration(), DEFAULT_MAX_DURATION);
        assert_eq!(e.initial_vus(&Segment::FULL), 3);
        assert_eq!(
            e.describe(),
            (
                "10 iterations shared among 3 VUs".to_owned(),
                "maxDuration: 10m0s".to_owned()
            )
        );
    }

    #[test]
    fn every_problem_is_reported() {
        let (_, errors) =
            read::<SharedIterations>(json!({"vus": 5, "iterations": 2, "maxDuration": 0}));
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("scenarios.s.vus: 5 VUs for 2 iterations"));
        assert_eq!(errors[1], "scenarios.s.maxDuration: must be longer than 0s");
    }

    #[test]
    fn claims_hand_out_exactly_the_total_across_threads() {
        let claims = Claims::new(1000);
        let granted: usize = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    let claims = claims.clone();
                    s.spawn(move || (0..600).filter(|_| claims.claim()).count())
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).sum()
        });
        assert_eq!(granted, 1000);
        assert!(!claims.claim());
    }
}
