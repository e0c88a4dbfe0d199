//! Stopping and watching a run: stop signals (graceful, then hard) for the
//! whole run and for each scenario, progress counters, and the log of
//! failed iterations.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use wload_output::progress::{Progress, RunView};

use crate::task::Owned;

use super::Failures;

/// Graceful ("start no new iterations") and hard ("interrupt running
/// ones") stop, observable from any task.
pub struct StopSignal {
    /// 0 running, 1 stopping gracefully, 2 stopped hard.
    level: watch::Sender<u8>,
    /// The same level, read by every VU between iterations without the
    /// channel's lock.
    now: AtomicU8,
}

impl Default for StopSignal {
    fn default() -> Self {
        StopSignal {
            level: watch::channel(0).0,
            now: AtomicU8::new(0),
        }
    }
}

impl StopSignal {
    fn raise(&self, to: u8) {
        // Set before the waiters wake, so that they see it.
        self.now.fetch_max(to, Ordering::SeqCst);
        self.level.send_if_modified(|level| {
            let raised = *level < to;
            *level = (*level).max(to);
            raised
        });
    }

    pub fn stop_gracefully(&self) {
        self.raise(1);
    }

    pub fn stop_now(&self) {
        self.raise(2);
    }

    pub fn stopping(&self) -> bool {
        self.now.load(Ordering::Acquire) >= 1
    }

    pub fn hard_stopped(&self) -> bool {
        self.now.load(Ordering::Acquire) >= 2
    }

    /// Resolves when stopping (gracefully or hard).
    pub async fn wait_stopping(&self) {
        let mut rx = self.level.subscribe();
        let _ = rx.wait_for(|level| *level >= 1).await;
    }

    /// Resolves when stopped hard.
    pub async fn wait_hard(&self) {
        let mut rx = self.level.subscribe();
        let _ = rx.wait_for(|level| *level >= 2).await;
    }

    /// Stop gracefully after `run_for`, then hard after `graceful` more,
    /// unless the returned handle is dropped first (the work ended early).
    pub fn schedule(self: &Arc<Self>, run_for: Duration, graceful: Duration) -> Owned<()> {
        let signal = self.clone();
        Owned::spawn(async move {
            tokio::time::sleep(run_for).await;
            signal.stop_gracefully();
            tokio::time::sleep(graceful).await;
            signal.stop_now();
        })
    }
}

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
