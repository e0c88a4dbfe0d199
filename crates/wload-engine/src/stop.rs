//! Stop signals, graceful ("start no new iterations") then hard
//! ("interrupt running ones"), for the whole run and for each scenario.
//! A module of its own because both sides of a VU read them: the
//! executors between iterations, and the host's HTTP calls, which record
//! a request the hard stop cuts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::task::Owned;

/// Graceful ("start no new iterations") and hard ("interrupt running
/// ones") stop, observable from any task.
///
/// The two levels have channels of their own: a task waiting for the
/// hard stop ([`crate::executor::HardStop`]) must be woken by it alone. When both
/// shared one channel, the graceful stop's wake-up was taken by a waiter
/// that then did not wait again, and the hard stop never woke it: a VU
/// blocked on a server that never answered outlived its gracefulStop.
#[derive(Debug)]
pub struct StopSignal {
    graceful: watch::Sender<bool>,
    hard: watch::Sender<bool>,
    /// 0 running, 1 stopping gracefully, 2 stopped hard: read by every VU
    /// between iterations without the channels' locks.
    now: AtomicU8,
}

impl Default for StopSignal {
    fn default() -> Self {
        StopSignal {
            graceful: watch::channel(false).0,
            hard: watch::channel(false).0,
            now: AtomicU8::new(0),
        }
    }
}

impl StopSignal {
    fn raise(&self, to: u8) {
        // Set before the waiters wake, so that they see it.
        self.now.fetch_max(to, Ordering::SeqCst);
        let set = |tx: &watch::Sender<bool>| {
            tx.send_if_modified(|on| !std::mem::replace(on, true));
        };
        set(&self.graceful);
        if to >= 2 {
            set(&self.hard);
        }
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
        let mut rx = self.graceful.subscribe();
        let _ = rx.wait_for(|on| *on).await;
    }

    /// Resolves when stopped hard; nothing else wakes it.
    pub async fn wait_hard(&self) {
        let mut rx = self.hard.subscribe();
        let _ = rx.wait_for(|on| *on).await;
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
