//! Executors: how VUs are driven over time, one file per executor behind
//! the [`Executor`] trait, each with its config (parsed from k6's options
//! format), its validation and its loop, as in k6.
//!
//! This module holds what they share: [`ScenarioConfig`] (the options
//! every executor has: startTime, gracefulStop, exec, env, tags),
//! [`Scenario`] (what a running scenario gets: its VUs, a factory for
//! more, its stop signal) and the loop bodies. Executors measure nothing
//! themselves: iterations are recorded by [`vu::Vu`], requests by the host.

mod arrival;
mod constant_arrival_rate;
mod constant_vus;
pub mod control;
pub mod externally_controlled;
mod failures;
pub mod fields;
mod per_vu_iterations;
mod ramping_arrival_rate;
mod ramping_vus;
pub mod segment;
pub mod shared_iterations;
pub mod vu;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

pub use constant_arrival_rate::ConstantArrivalRate;
pub use constant_vus::ConstantVus;
pub use control::{RunControl, RunHandle, RunStatus, StopSignal};
pub use externally_controlled::ExternallyControlled;
pub use failures::Failures;
pub use fields::{Fields, Stage};
pub use per_vu_iterations::PerVuIterations;
pub use ramping_arrival_rate::RampingArrivalRate;
pub use ramping_vus::RampingVus;
pub use segment::Segment;
pub use shared_iterations::SharedIterations;
pub use vu::{Outcome, Vu};

use wload_output::progress::ScenarioPlan;

use crate::host::{RunShared, VuScenario};
use crate::plugin::GuestPre;
use crate::sandbox::Sandbox;
use crate::task::Owned;

/// k6's default `gracefulStop`.
pub const DEFAULT_GRACEFUL_STOP: Duration = Duration::from_secs(30);

/// The executors, by k6 name.
pub const EXECUTORS: [&str; 7] = [
    "shared-iterations",
    "per-vu-iterations",
    "constant-vus",
    "ramping-vus",
    "constant-arrival-rate",
    "ramping-arrival-rate",
    "externally-controlled",
];

/// What every executor is, as k6's `lib.ExecutorConfig` and `lib.Executor`
/// together: its options (read by [`Executor::parse`], checked by
/// [`Executor::validate`]), the VUs it needs planned before the run, its
/// description for the run header, and its run loop. One file per
/// executor implements it; [`ExecutorConfig`] holds the one a scenario
/// names.
pub trait Executor: std::fmt::Debug + Send + Sync {
    /// Read its own options from a scenario object. Type errors (a
    /// string where a number goes) are reported to `f`; the value read
    /// has defaults in their place, so that [`Executor::validate`] can
    /// still find every other problem.
    fn parse(f: &mut Fields<'_>) -> Self
    where
        Self: Sized;

    /// Every problem with the options read, each as (option, message),
    /// all at once: a bad configuration is refused with all its mistakes.
    fn validate(&self) -> Vec<(String, String)>;

    /// VUs initialised before the run starts.
    fn initial_vus(&self, seg: &Segment) -> u32;

    /// The most VUs this executor may use: its initial ones, unless it
    /// adds VUs while running (the arrival-rate executors, up to
    /// `maxVUs`).
    fn max_vus(&self, seg: &Segment) -> u32 {
        self.initial_vus(seg)
    }

    /// The longest the scenario runs before its graceful stop.
    fn max_duration(&self) -> Duration;

    /// For the run header, like k6's: what it does, and details for the
    /// parenthesis after it ("" for none).
    fn describe(&self) -> (String, String);

    /// Drive `vus` (the [`Executor::initial_vus`] made before the run)
    /// until the scenario is done or stopped.
    fn run<'a>(&'a self, sc: Scenario, vus: Vec<Vu>) -> BoxFuture<'a>;
}

/// The problem of a duration option that must be longer than 0s, if it
/// is not (for [`Executor::validate`]).
fn zero_duration(key: &str, value: Duration) -> Option<(String, String)> {
    value
        .is_zero()
        .then(|| (key.to_owned(), "must be longer than 0s".to_owned()))
}

/// The future of an executor's run loop.
pub type BoxFuture<'a> = std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// One scenario's executor and its own options: the seven executors, by
/// name, as plain data (compared and cloned by the configuration's
/// tests). It dereferences to the [`Executor`] in hand.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecutorConfig {
    SharedIterations(SharedIterations),
    PerVuIterations(PerVuIterations),
    ConstantVus(ConstantVus),
    RampingVus(RampingVus),
    ConstantArrivalRate(ConstantArrivalRate),
    RampingArrivalRate(RampingArrivalRate),
    ExternallyControlled(ExternallyControlled),
}

impl ExecutorConfig {
    /// Read the executor named `kind` from a scenario object; `None` when
    /// no executor has that name.
    fn parse(kind: &str, f: &mut Fields<'_>) -> Option<ExecutorConfig> {
        use ExecutorConfig as E;
        Some(match kind {
            "shared-iterations" => E::SharedIterations(Executor::parse(f)),
            "per-vu-iterations" => E::PerVuIterations(Executor::parse(f)),
            "constant-vus" => E::ConstantVus(Executor::parse(f)),
            "ramping-vus" => E::RampingVus(Executor::parse(f)),
            "constant-arrival-rate" => E::ConstantArrivalRate(Executor::parse(f)),
            "ramping-arrival-rate" => E::RampingArrivalRate(Executor::parse(f)),
            "externally-controlled" => E::ExternallyControlled(Executor::parse(f)),
            _ => return None,
        })
    }

    /// Its k6 name.
    pub fn kind(&self) -> &'static str {
        use ExecutorConfig as E;
        let index = match self {
            E::SharedIterations(_) => 0,
            E::PerVuIterations(_) => 1,
            E::ConstantVus(_) => 2,
            E::RampingVus(_) => 3,
            E::ConstantArrivalRate(_) => 4,
            E::RampingArrivalRate(_) => 5,
            E::ExternallyControlled(_) => 6,
        };
        EXECUTORS[index]
    }
}

impl std::ops::Deref for ExecutorConfig {
    type Target = dyn Executor;

    fn deref(&self) -> &(dyn Executor + 'static) {
        match self {
            ExecutorConfig::SharedIterations(e) => e,
            ExecutorConfig::PerVuIterations(e) => e,
            ExecutorConfig::ConstantVus(e) => e,
            ExecutorConfig::RampingVus(e) => e,
            ExecutorConfig::ConstantArrivalRate(e) => e,
            ExecutorConfig::RampingArrivalRate(e) => e,
            ExecutorConfig::ExternallyControlled(e) => e,
        }
    }
}

/// A scenario: an executor plus the options every executor has.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioConfig {
    pub name: String,
    pub executor: ExecutorConfig,
    pub start_time: Duration,
    pub graceful_stop: Duration,
    /// The test entry point its VUs run.
    pub exec: String,
    pub env: BTreeMap<String, String>,
    pub tags: BTreeMap<String, String>,
}

impl ScenarioConfig {
    /// Parse `scenarios.<name>`; problems go to `errors`.
    pub fn parse(name: &str, value: &Value, errors: &mut Vec<String>) -> Option<ScenarioConfig> {
        let path = format!("scenarios.{name}");
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            errors.push(format!(
                "{path}: invalid scenario name; use letters, digits, '_' and '-'"
            ));
        }
        let Some(map) = value.as_object() else {
            errors.push(format!("{path}: must be an object with an \"executor\""));
            return None;
        };
        let mut f = Fields::new(path.clone(), map, errors);
        let kind = f.string("executor", "");
        let start_time = f.duration("startTime", Some(Duration::ZERO));
        let mut graceful_stop = f.duration("gracefulStop", Some(DEFAULT_GRACEFUL_STOP));
        let exec = f.string("exec", "default");
        let env = f.string_map("env");
        let tags = f.string_map("tags");
        let Some(executor) = ExecutorConfig::parse(&kind, &mut f) else {
            let what = if kind.is_empty() {
                "is required".to_owned()
            } else {
                format!("{kind:?} is not an executor")
            };
            f.error(
                "executor",
                format!("{what}; accepted: {}", EXECUTORS.join(", ")),
            );
            return None;
        };
        for (key, message) in executor.validate() {
            f.error(&key, message);
        }
        // As in k6: its duration's end interrupts running iterations.
        if let ExecutorConfig::ExternallyControlled(_) = executor {
            if map.contains_key("gracefulStop") {
                f.error(
                    "gracefulStop",
                    "is not supported by the externally controlled executor",
                );
            }
            graceful_stop = Duration::ZERO;
        }
        f.finish(&kind);
        Some(ScenarioConfig {
            name: name.to_owned(),
            executor,
            start_time,
            graceful_stop,
            exec,
            env,
            tags,
        })
    }

    /// This scenario as the run header and the progress display show it.
    pub fn plan(&self, seg: &Segment) -> ScenarioPlan {
        let (what, details) = self.executor.describe();
        ScenarioPlan {
            name: self.name.clone(),
            what,
            details,
            exec: self.exec.clone(),
            start_time: self.start_time,
            duration: self.executor.max_duration(),
            graceful_stop: self.graceful_stop,
            max_vus: self.executor.max_vus(seg),
        }
    }

    /// When this scenario is over at the latest, graceful stop included.
    pub fn end(&self) -> Duration {
        self.start_time + self.executor.max_duration() + self.graceful_stop
    }
}

/// Makes the VUs of one scenario: the pre-allocated ones before the run,
/// more during it (arrival-rate executors).
#[derive(Clone)]
pub struct VuFactory {
    pub pre: Arc<GuestPre>,
    pub sandbox: Sandbox,
    pub shared: Arc<RunShared>,
    pub scenario: Arc<VuScenario>,
    pub exec: String,
    /// VU ids are unique across the run.
    pub next_id: Arc<AtomicU32>,
}

impl VuFactory {
    pub async fn create(&self) -> Result<Vu> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        Vu::new(
            id,
            self.scenario.clone(),
            &self.exec,
            self.pre.clone(),
            self.sandbox.clone(),
            self.shared.clone(),
        )
        .await
    }
}

/// What a running scenario shares with its VU tasks (its VUs themselves
/// are handed to the executor separately: they move into the tasks).
pub struct Scenario {
    pub factory: VuFactory,
    pub run: Arc<RunControl>,
    /// This scenario's own stop: its duration, then its gracefulStop.
    pub stop: Arc<StopSignal>,
    pub graceful_stop: Duration,
    pub segment: Segment,
    /// This scenario's VUs in an iteration or a loop (the progress
    /// display's per-scenario count; the run's total is in `run.progress`).
    pub active_vus: Arc<AtomicU32>,
}

impl Scenario {
    /// A VU of this scenario became active (counted here and run-wide).
    pub fn vu_active(&self) {
        let p = &self.run.progress;
        let now = p.active_vus.fetch_add(1, Ordering::Relaxed) + 1;
        // A load first: the shared line is only written on a new peak.
        if now > p.peak_vus.load(Ordering::Relaxed) {
            p.peak_vus.fetch_max(now, Ordering::Relaxed);
        }
        self.active_vus.fetch_add(1, Ordering::Relaxed);
    }

    /// A VU of this scenario stopped being active.
    pub fn vu_idle(&self) {
        self.run.progress.active_vus.fetch_sub(1, Ordering::Relaxed);
        self.active_vus.fetch_sub(1, Ordering::Relaxed);
    }

    /// Neither the run nor this scenario is stopping.
    pub fn running(&self) -> bool {
        !self.stop.stopping() && !self.run.stopping()
    }

    /// Resolves when the run or the scenario starts stopping.
    pub async fn wait_stopping(&self) {
        tokio::select! {
            _ = self.stop.wait_stopping() => {}
            _ = self.run.stop.wait_stopping() => {}
        }
    }

    /// Resolves when the run or the scenario is stopped hard.
    pub async fn wait_hard(&self) {
        tokio::select! {
            _ = self.stop.wait_hard() => {}
            _ = self.run.stop.wait_hard() => {}
        }
    }

    /// Whether an interruption just seen was a hard stop (rather than a
    /// ramp-down cut).
    pub fn hard_stopped(&self) -> bool {
        self.stop.hard_stopped() || self.run.hard_stopped()
    }

    /// Stop gracefully after `run_for`, hard `graceful_stop` later.
    pub fn schedule_stop(&self, run_for: Duration) -> Owned<()> {
        self.stop.schedule(run_for, self.graceful_stop)
    }
}

/// Run the scenario `config` with `vus` after its start time.
pub async fn run_scenario(config: &ScenarioConfig, scenario: Scenario, vus: Vec<Vu>) {
    if !config.start_time.is_zero() {
        tokio::select! {
            _ = tokio::time::sleep(config.start_time) => {}
            _ = scenario.run.stop.wait_hard() => return,
        }
        if scenario.run.stopping() {
            return;
        }
    }
    config.executor.run(scenario, vus).await;
}

/// Run one iteration of `vu`, interrupted by a hard stop of the run or the
/// scenario, or when `cut` resolves; count it in the progress.
pub async fn iterate(
    vu: &mut Vu,
    sc: &Scenario,
    hard: &mut HardStop,
    lateness: Option<Duration>,
    cut: impl Future<Output = ()>,
) -> Outcome {
    // The iteration first: a request it waits on sees the hard stop
    // itself, and is recorded as interrupted before the call ends; a
    // guest that computes or sleeps is cut by the stop below.
    let outcome = tokio::select! {
        biased;
        o = vu.iterate(&sc.run.failures, lateness) => o,
        _ = &mut *hard => Outcome::Interrupted,
        _ = cut => Outcome::Interrupted,
    };
    let p = &sc.run.progress;
    match &outcome {
        Outcome::Completed => p.completed.fetch_add(1, Ordering::Relaxed),
        Outcome::Failed(_) => p.failed.fetch_add(1, Ordering::Relaxed),
        Outcome::Interrupted => {
            // The call was abandoned mid-way: the instance is not reusable.
            vu.reset(&sc.run.failures).await;
            p.interrupted.fetch_add(1, Ordering::Relaxed)
        }
    };
    outcome
}

/// A VU's wait for the hard stop of its scenario or run, made once per VU
/// and polled by each of its iterations: subscribing to both stop
/// channels and registering with (and leaving) their shared `Notify` on
/// every iteration cost measurable time at tens of thousands of
/// iterations per second, under a lock all VUs share. Even polling the
/// registered wait takes that lock, so once the wait holds this task's
/// waker, a poll only reads the stop flags: a stop wakes that waker, and
/// the poll it causes sees the flag.
/// Only a hard stop wakes the registered wait ([`StopSignal::wait_hard`]),
/// which is what makes skipping it sound.
pub struct HardStop {
    /// The scenario's stop and the run's.
    signals: [Arc<StopSignal>; 2],
    wait: std::pin::Pin<Box<dyn Future<Output = ()> + Send>>,
    registered: Option<std::task::Waker>,
    stopped: bool,
}

impl HardStop {
    pub fn new(sc: &Arc<Scenario>) -> HardStop {
        HardStop::of([sc.stop.clone(), sc.run.stop.clone()])
    }

    fn of(signals: [Arc<StopSignal>; 2]) -> HardStop {
        let [a, b] = signals.clone();
        HardStop {
            signals,
            wait: Box::pin(async move {
                tokio::select! {
                    _ = a.wait_hard() => {}
                    _ = b.wait_hard() => {}
                }
            }),
            registered: None,
            stopped: false,
        }
    }

    fn hard_stopped(&self) -> bool {
        self.signals.iter().any(|s| s.hard_stopped())
    }
}

impl Future for HardStop {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        let this = &mut *self;
        // Stays ready once stopped, for every later iteration.
        if !this.stopped {
            let armed = this
                .registered
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()));
            if armed && !this.hard_stopped() {
                return std::task::Poll::Pending;
            }
            if this.wait.as_mut().poll(cx).is_ready() {
                this.stopped = true;
            } else {
                this.registered = Some(cx.waker().clone());
            }
        }
        if this.stopped {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    }
}

/// The closed-model loop: iterate while the scenario runs and `may_start`
/// allows.
pub async fn vu_loop(mut vu: Vu, sc: Arc<Scenario>, may_start: impl Fn(&Vu) -> bool) -> Vu {
    sc.vu_active();
    let mut hard = HardStop::new(&sc);
    while sc.running() && may_start(&vu) {
        let cut = std::future::pending();
        if iterate(&mut vu, &sc, &mut hard, None, cut).await == Outcome::Interrupted {
            break;
        }
    }
    sc.vu_idle();
    vu
}

/// Run one [`vu_loop`] task per VU of `sc` and wait for all of them.
pub async fn run_closed(
    sc: Scenario,
    vus: Vec<Vu>,
    may_start: impl Fn(&Vu) -> bool + Clone + Send + Sync + 'static,
) {
    let sc = Arc::new(sc);
    let mut tasks = tokio::task::JoinSet::new();
    for vu in vus {
        tasks.spawn(vu_loop(vu, sc.clone(), may_start.clone()));
    }
    join_all(&mut tasks, &sc.run).await;
}

/// Wait for every task, reporting panics as failures.
pub async fn join_all<T: 'static>(tasks: &mut tokio::task::JoinSet<T>, run: &RunControl) {
    while let Some(done) = tasks.join_next().await {
        if let Err(e) = done
            && e.is_panic()
        {
            run.failures.report(0, &format!("a VU task panicked: {e}"));
        }
    }
}

/// Scenario env merged for the host: the scenario's own variables.
pub fn scenario_env(config: &ScenarioConfig) -> HashMap<String, String> {
    config
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Read an executor's options as a scenario would, for the executors'
/// own tests: the executor and every problem found, as the user sees them.
#[cfg(test)]
fn read<E: Executor>(options: Value) -> (E, Vec<String>) {
    let map = options.as_object().cloned().unwrap_or_default();
    let mut errors = Vec::new();
    let mut f = Fields::new("scenarios.s".into(), &map, &mut errors);
    let e = E::parse(&mut f);
    for (key, message) in e.validate() {
        f.error(&key, message);
    }
    (e, errors)
}

#[cfg(test)]
mod hard_stop_tests {
    use super::*;
    use std::pin::Pin;
    use std::sync::atomic::AtomicUsize;
    use std::task::{Context, Poll, Wake, Waker};

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A VU waits for the hard stop across a graceful stop: the graceful
    /// one must not use up the wake-up the hard one owes it (it did, and a
    /// VU blocked on a silent server outlived its gracefulStop).
    #[test]
    fn the_hard_stop_wakes_a_waiter_after_a_graceful_stop() {
        let (scenario, run) = (
            Arc::new(StopSignal::default()),
            Arc::new(StopSignal::default()),
        );
        let mut hard = HardStop::of([scenario.clone(), run.clone()]);
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut hard).poll(&mut cx).is_pending());
        scenario.stop_gracefully();
        // Whether or not that woke the task, it polls again.
        assert!(Pin::new(&mut hard).poll(&mut cx).is_pending());
        let before = count.0.load(Ordering::SeqCst);
        scenario.stop_now();
        assert!(
            count.0.load(Ordering::SeqCst) > before,
            "the hard stop did not wake the waiting task"
        );
        assert_eq!(Pin::new(&mut hard).poll(&mut cx), Poll::Ready(()));
        // And the run's hard stop alone does too.
        let (scenario, run) = (
            Arc::new(StopSignal::default()),
            Arc::new(StopSignal::default()),
        );
        let mut hard = HardStop::of([scenario, run.clone()]);
        assert!(Pin::new(&mut hard).poll(&mut cx).is_pending());
        run.stop_gracefully();
        assert!(Pin::new(&mut hard).poll(&mut cx).is_pending());
        let before = count.0.load(Ordering::SeqCst);
        run.stop_now();
        assert!(count.0.load(Ordering::SeqCst) > before);
        assert_eq!(Pin::new(&mut hard).poll(&mut cx), Poll::Ready(()));
    }
}
