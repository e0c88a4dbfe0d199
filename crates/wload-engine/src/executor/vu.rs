//! One virtual user: a store, an instance of the test (or plugin), and the loop body
//! that runs one iteration and records it.
//!
//! A trap (panic, memory limit, guest timeout) fails the iteration and
//! poisons the instance; the VU then continues with a fresh instance from
//! the same `InstancePre`, keeping its id, iteration count and
//! connections.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use wasmtime::Store;

use super::Failures;
use crate::host::{self, RunShared, Stopped, VuScenario, VuState};
use crate::plugin::{Guest, GuestPre};
use crate::sandbox::Sandbox;
use wload_metrics::{Builtin, Recorder, Tags};

/// How an iteration ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Completed,
    /// Returned an error or trapped; counted in `iterations_failed`.
    Failed(String),
    /// Stopped by the engine at the end of the run; not counted.
    Interrupted,
}

pub struct Vu {
    pub id: u32,
    store: Store<VuState>,
    test: Guest,
    pre: Arc<GuestPre>,
    sandbox: Sandbox,
    exec: String,
    /// Tags of the iteration metrics.
    tags: Tags,
}

impl Vu {
    /// Instantiate the VU `id` of `scenario`.
    pub async fn new(
        id: u32,
        scenario: Arc<VuScenario>,
        exec: &str,
        pre: Arc<GuestPre>,
        sandbox: Sandbox,
        shared: Arc<RunShared>,
    ) -> Result<Vu> {
        let state = VuState::new(shared, &sandbox, id, scenario);
        let tags = state.tags().clone();
        let mut store = host::new_store(&sandbox.engine, state);
        let test = pre
            .instantiate_async(&mut store)
            .await
            .with_context(|| format!("cannot start VU {id}"))?;
        Ok(Vu {
            id,
            store,
            test,
            pre,
            sandbox,
            exec: exec.to_owned(),
            tags,
        })
    }

    /// Run one iteration and record `iterations` and `iteration_duration`
    /// (and, when the executor has a schedule, how late the iteration
    /// started: `iteration_duration_corrected`).
    pub async fn iterate(&mut self, failures: &Failures, lateness: Option<Duration>) -> Outcome {
        let started = Instant::now();
        let state = self.store.data_mut();
        state.running_since = started;
        state.lateness = lateness;
        state.leave_groups();
        let result = self.test.call_iteration(&mut self.store, &self.exec).await;
        let elapsed = started.elapsed();
        let outcome = match result {
            Ok(Ok(())) => Outcome::Completed,
            Ok(Err(message)) => Outcome::Failed(message),
            Err(trap) => {
                let outcome = explain_trap(self.store.data_mut(), &trap);
                if let Err(e) = self.renew().await {
                    // Keep the old (poisoned) instance; the next iteration
                    // fails fast and reports the same.
                    failures.report(self.id, &format!("{e:#}"));
                }
                outcome
            }
        };
        let state = self.store.data_mut();
        state.iteration += 1;
        let rec = &state.shared.recorder;
        match &outcome {
            Outcome::Interrupted => {}
            Outcome::Completed => record_iteration(rec, &self.tags, elapsed, lateness, false),
            Outcome::Failed(message) => {
                record_iteration(rec, &self.tags, elapsed, lateness, true);
                failures.report(self.id, message);
            }
        }
        outcome
    }

    /// Give the VU a fresh instance after an iteration was abandoned
    /// mid-call (interrupted): the old one may hold half-done state.
    pub async fn reset(&mut self, failures: &Failures) {
        if let Err(e) = self.renew().await {
            failures.report(self.id, &format!("{e:#}"));
        }
    }

    /// Replace a trapped instance with a fresh one, keeping the VU's
    /// identity, iteration count and connections.
    async fn renew(&mut self) -> Result<()> {
        let old = self.store.data_mut();
        let mut state = VuState::new(
            old.shared.clone(),
            &self.sandbox,
            self.id,
            old.scenario.clone(),
        );
        state.iteration = old.iteration;
        state.conns = std::mem::take(&mut old.conns);
        // Assigning drops the old store, which frees its pool slot before
        // the new instance takes one.
        self.store = host::new_store(&self.sandbox.engine, state);
        self.test = self
            .pre
            .instantiate_async(&mut self.store)
            .await
            .with_context(|| format!("cannot restart VU {} after a trap", self.id))?;
        Ok(())
    }

    /// Iterations this VU started (in its scenario).
    pub fn iterations_started(&self) -> u64 {
        self.store.data().iteration
    }

    /// Open connections this VU keeps.
    pub fn connections(&self) -> usize {
        self.store.data().conns.len()
    }
}

/// Turn a trap into a message a test author can act on, using what the
/// engine knows about why the guest stopped.
pub fn explain_trap(state: &mut VuState, trap: &wasmtime::Error) -> Outcome {
    match state.stopped.take() {
        Some(Stopped::HardStop) => return Outcome::Interrupted,
        Some(Stopped::GuestTimeout(limit)) => {
            return Outcome::Failed(format!(
                "the guest ran for {}s without waiting on HTTP or sleep and was stopped \
                 (an endless loop?); raise --guest-timeout if the test really computes this long",
                limit.as_secs_f64()
            ));
        }
        None => {}
    }
    if state.limiter.hit {
        return Outcome::Failed(format!(
            "the VU ran out of memory: its instance reached the --vu-memory limit of {} MiB",
            state.limiter.limit >> 20
        ));
    }
    if let Some(panic) = state.panic_message.take() {
        // Rust's panic messages put the location on a line of its own.
        let one_line = panic.split_whitespace().collect::<Vec<_>>().join(" ");
        return Outcome::Failed(format!("panic: {one_line}"));
    }
    // The outer error is wasmtime's "error while executing at wasm
    // backtrace"; what happened is the root cause: a trap of the guest's
    // own, or the error a host call returned (a bad argument).
    let cause = trap.root_cause().to_string();
    let first = cause.lines().next().unwrap_or("trap");
    if trap.downcast_ref::<wasmtime::Trap>().is_some() {
        Outcome::Failed(format!("the guest trapped: {first}"))
    } else {
        Outcome::Failed(format!("a host call failed: {first}"))
    }
}

fn record_iteration(
    rec: &Recorder,
    tags: &Tags,
    elapsed: Duration,
    lateness: Option<Duration>,
    failed: bool,
) {
    let counts = [
        (Builtin::Iterations.id(), 1.0),
        (Builtin::IterationsFailed.id(), 1.0),
    ];
    let elapsed = elapsed.as_nanos() as u64;
    let times = [
        (Builtin::IterationDuration.id(), elapsed),
        (
            Builtin::IterationDurationCorrected.id(),
            elapsed + lateness.map_or(0, |l| l.as_nanos() as u64),
        ),
    ];
    // One lock and one series lookup for the whole iteration.
    rec.record_all(
        tags,
        &counts[..if failed { 2 } else { 1 }],
        &times[..if lateness.is_some() { 2 } else { 1 }],
    );
}
