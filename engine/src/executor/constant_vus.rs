//! `constant-vus`: a fixed number of VUs loop over the test for a fixed
//! duration (what `--vus N --duration D` runs).

use std::sync::Arc;
use std::time::Duration;

use super::{RunControl, Vu, run_all};

#[derive(Debug, Clone, PartialEq)]
pub struct ConstantVus {
    pub vus: u32,
    pub duration: Duration,
    pub graceful_stop: Duration,
}

impl ConstantVus {
    /// Every problem at once, one per line.
    pub fn validate(&self) -> Result<(), Vec<String>> {
        let mut errors = Vec::new();
        if self.vus == 0 {
            errors.push("vus must be at least 1".to_owned());
        }
        if self.duration.is_zero() {
            errors.push("duration must be longer than 0s".to_owned());
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "{} looping VUs for {} (gracefulStop: {})",
            self.vus,
            crate::output::format::duration_short(self.duration),
            crate::output::format::duration_short(self.graceful_stop)
        )
    }

    pub async fn run(&self, vus: Vec<Vu>, ctl: Arc<RunControl>) {
        let timer = ctl.schedule_stop(self.duration, self.graceful_stop);
        run_all(vus, &ctl, || true).await;
        timer.abort();
    }
}
