//! `shared-iterations`: a fixed number of iterations shared by the VUs;
//! fast VUs do more of them. The total is exact: each iteration is claimed
//! from one atomic counter before it starts (what `--iterations N` runs).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{RunControl, Vu, run_all};

/// k6's default `maxDuration` for iteration-based executors.
pub const DEFAULT_MAX_DURATION: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, PartialEq)]
pub struct SharedIterations {
    pub vus: u32,
    pub iterations: u64,
    pub max_duration: Duration,
    pub graceful_stop: Duration,
}

impl SharedIterations {
    /// Every problem at once, one per line.
    pub fn validate(&self) -> Result<(), Vec<String>> {
        let mut errors = Vec::new();
        if self.vus == 0 {
            errors.push("vus must be at least 1".to_owned());
        }
        if self.iterations == 0 {
            errors.push("iterations must be at least 1".to_owned());
        }
        if u64::from(self.vus) > self.iterations && self.iterations > 0 {
            errors.push(format!(
                "vus ({}) must not exceed iterations ({}): the extra VUs would never run",
                self.vus, self.iterations
            ));
        }
        if self.max_duration.is_zero() {
            errors.push("maxDuration must be longer than 0s".to_owned());
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "{} iterations shared among {} VUs (maxDuration: {}, gracefulStop: {})",
            self.iterations,
            self.vus,
            crate::output::format::duration_short(self.max_duration),
            crate::output::format::duration_short(self.graceful_stop)
        )
    }

    pub async fn run(&self, vus: Vec<Vu>, ctl: Arc<RunControl>) {
        let timer = ctl.schedule_stop(self.max_duration, self.graceful_stop);
        let claimed = Arc::new(AtomicU64::new(0));
        let total = self.iterations;
        run_all(vus, &ctl, move || {
            claimed.fetch_add(1, Ordering::Relaxed) < total
        })
        .await;
        timer.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_reports_every_problem() {
        let e = SharedIterations {
            vus: 0,
            iterations: 0,
            max_duration: Duration::ZERO,
            graceful_stop: Duration::ZERO,
        };
        assert_eq!(e.validate().unwrap_err().len(), 3);
        let e = SharedIterations {
            vus: 5,
            iterations: 2,
            max_duration: DEFAULT_MAX_DURATION,
            graceful_stop: Duration::ZERO,
        };
        assert!(e.validate().unwrap_err()[0].contains("must not exceed"));
    }
}
