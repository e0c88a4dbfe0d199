//! Stopping and watching a run: stop signals (graceful, then hard) for the
//! whole run and for each scenario, progress counters, and the log of
//! failed iterations.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wload_output::progress::{Progress, RunView};

use super::Failures;
pub use crate::stop::StopSignal;

/// What the whole run shares: its stop signal, progress and failures.
pub struct RunControl {
    pub stop: Arc<StopSignal>,
    /// Shared with the sandbox: guests trap at their next epoch check.
    sandbox_stop: Arc<AtomicBool>,
    pub progress: Progress,
    pub failures: Failures,
    /// Set when the user interrupted the run (Ctrl-C).
    pub aborted: AtomicBool,
}

impl RunControl {
    pub fn new(sandbox_stop: Arc<AtomicBool>) -> Arc<RunControl> {
        Arc::new(RunControl {
            stop: Arc::new(StopSignal::default()),
            sandbox_stop,
            progress: Progress::default(),
            failures: Failures::default(),
            aborted: AtomicBool::new(false),
        })
    }

    pub fn stop_gracefully(&self) {
        self.stop.stop_gracefully();
    }

    /// Interrupt every iteration of every scenario now.
    pub fn stop_now(&self) {
        self.sandbox_stop.store(true, Ordering::SeqCst);
        self.stop.stop_now();
    }

    pub fn stopping(&self) -> bool {
        self.stop.stopping()
    }

    pub fn hard_stopped(&self) -> bool {
        self.stop.hard_stopped()
    }
}

impl RunView for RunControl {
    fn progress(&self) -> &Progress {
        &self.progress
    }

    fn stopping(&self) -> bool {
        self.stop.stopping()
    }
}
