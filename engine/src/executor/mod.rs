//! Executors: how VUs are driven over time, one file per executor, each
//! with its config, its validation and its loop, as in k6.
//!
//! This module holds what they share: the [`RunControl`] that stops a run
//! (gracefully, then hard), progress counters, and [`vu_loop`], the loop
//! every executor runs per VU with its own "may another iteration start?"
//! rule. Executors measure nothing themselves: iterations are recorded by
//! [`vu::Vu`], requests by the host.

mod constant_vus;
mod failures;
pub mod shared_iterations;
pub mod vu;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

pub use constant_vus::ConstantVus;
pub use failures::Failures;
pub use shared_iterations::SharedIterations;
pub use vu::{Outcome, Vu};

/// k6's default `gracefulStop`.
pub const DEFAULT_GRACEFUL_STOP: Duration = Duration::from_secs(30);

/// One scenario's executor.
#[derive(Debug, Clone, PartialEq)]
pub enum Executor {
    ConstantVus(ConstantVus),
    SharedIterations(SharedIterations),
}

impl Executor {
    /// VUs this executor needs, all initialised before the run starts.
    pub fn max_vus(&self) -> u32 {
        match self {
            Executor::ConstantVus(e) => e.vus,
            Executor::SharedIterations(e) => e.vus,
        }
    }

    /// The longest the scenario can take before its graceful stop.
    pub fn max_duration(&self) -> Duration {
        match self {
            Executor::ConstantVus(e) => e.duration,
            Executor::SharedIterations(e) => e.max_duration,
        }
    }

    pub fn graceful_stop(&self) -> Duration {
        match self {
            Executor::ConstantVus(e) => e.graceful_stop,
            Executor::SharedIterations(e) => e.graceful_stop,
        }
    }

    /// One line for the run header, like k6's.
    pub fn describe(&self) -> String {
        match self {
            Executor::ConstantVus(e) => e.describe(),
            Executor::SharedIterations(e) => e.describe(),
        }
    }

    /// Drive `vus` until the executor is done or the run is stopped.
    pub async fn run(&self, vus: Vec<Vu>, ctl: Arc<RunControl>) {
        match self {
            Executor::ConstantVus(e) => e.run(vus, ctl).await,
            Executor::SharedIterations(e) => e.run(vus, ctl).await,
        }
    }
}

/// Live counters, read by the progress display.
#[derive(Debug, Default)]
pub struct Progress {
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    pub interrupted: AtomicU64,
    pub active_vus: AtomicU32,
}

/// Stopping a run: first no new iterations (graceful), then stop
/// everything now (hard).
pub struct RunControl {
    graceful: AtomicBool,
    /// Shared with the sandbox: guests trap at their next epoch check.
    hard: Arc<AtomicBool>,
    hard_tx: watch::Sender<bool>,
    pub progress: Progress,
    pub failures: Failures,
    /// Set when the user interrupted the run (Ctrl-C).
    pub aborted: AtomicBool,
}

impl RunControl {
    pub fn new(hard_stop: Arc<AtomicBool>) -> Arc<RunControl> {
        let (hard_tx, _) = watch::channel(false);
        Arc::new(RunControl {
            graceful: AtomicBool::new(false),
            hard: hard_stop,
            hard_tx,
            progress: Progress::default(),
            failures: Failures::default(),
            aborted: AtomicBool::new(false),
        })
    }

    /// Start no new iterations.
    pub fn stop_gracefully(&self) {
        self.graceful.store(true, Ordering::SeqCst);
    }

    /// Interrupt every iteration now.
    pub fn stop_now(&self) {
        self.graceful.store(true, Ordering::SeqCst);
        self.hard.store(true, Ordering::SeqCst);
        self.hard_tx.send_replace(true);
    }

    pub fn stopping(&self) -> bool {
        self.graceful.load(Ordering::Relaxed)
    }

    pub fn hard_stopped(&self) -> bool {
        self.hard.load(Ordering::Relaxed)
    }

    /// Resolves when the run is hard-stopped.
    pub async fn wait_hard_stop(&self) {
        let mut rx = self.hard_tx.subscribe();
        let _ = rx.wait_for(|stopped| *stopped).await;
    }

    /// Stop gracefully after `run_for`, then hard after `graceful`
    /// more. Returns the timer task, to abort when the run ends early.
    pub fn schedule_stop(
        self: &Arc<Self>,
        run_for: Duration,
        graceful: Duration,
    ) -> tokio::task::JoinHandle<()> {
        let ctl = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(run_for).await;
            ctl.stop_gracefully();
            tokio::time::sleep(graceful).await;
            ctl.stop_now();
        })
    }
}

/// The loop of one VU: iterate while `may_start` allows and the run is
/// not stopping; a hard stop interrupts the iteration in flight.
pub async fn vu_loop(mut vu: Vu, ctl: Arc<RunControl>, may_start: impl Fn() -> bool) -> Vu {
    ctl.progress.active_vus.fetch_add(1, Ordering::Relaxed);
    while !ctl.stopping() && may_start() {
        let outcome = tokio::select! {
            biased;
            _ = ctl.wait_hard_stop() => Outcome::Interrupted,
            o = vu.iterate(&ctl.failures) => o,
        };
        let p = &ctl.progress;
        match outcome {
            Outcome::Completed => p.completed.fetch_add(1, Ordering::Relaxed),
            Outcome::Failed(_) => p.failed.fetch_add(1, Ordering::Relaxed),
            Outcome::Interrupted => {
                p.interrupted.fetch_add(1, Ordering::Relaxed);
                break;
            }
        };
        if ctl.hard_stopped() {
            break;
        }
    }
    ctl.progress.active_vus.fetch_sub(1, Ordering::Relaxed);
    vu
}

/// Run one [`vu_loop`] task per VU and wait for all of them.
async fn run_all(
    vus: Vec<Vu>,
    ctl: &Arc<RunControl>,
    may_start: impl Fn() -> bool + Clone + Send + Sync + 'static,
) {
    let mut tasks = tokio::task::JoinSet::new();
    for vu in vus {
        tasks.spawn(vu_loop(vu, ctl.clone(), may_start.clone()));
    }
    while let Some(done) = tasks.join_next().await {
        if let Err(e) = done
            && e.is_panic()
        {
            ctl.failures.report(0, &format!("a VU task panicked: {e}"));
        }
    }
}

/// Parse a k6 duration: `"30s"`, `"1m30s"`, `"1h"`, `"500ms"`, `"1.5s"`,
/// or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    let err = || {
        format!("invalid duration {text:?}: expected e.g. \"30s\", \"1m30s\", \"500ms\" or \"2h\"")
    };
    if s.is_empty() {
        return Err(err());
    }
    if let Ok(secs) = s.parse::<f64>() {
        return if secs >= 0.0 && secs.is_finite() {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err(err())
        };
    }
    let mut total = 0.0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(err)?;
        if num_len == 0 {
            return Err(err());
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| err())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return Err(err()),
        };
        total += value * factor;
        rest = &rest[unit_len..];
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_k6() {
        let ok = |s: &str| parse_duration(s).unwrap();
        assert_eq!(ok("30s"), Duration::from_secs(30));
        assert_eq!(ok("1m30s"), Duration::from_secs(90));
        assert_eq!(ok("1h"), Duration::from_secs(3600));
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("1.5s"), Duration::from_millis(1500));
        assert_eq!(ok("10"), Duration::from_secs(10));
        for bad in ["", "10x", "s", "-1s", "1m-2s", "abc"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
