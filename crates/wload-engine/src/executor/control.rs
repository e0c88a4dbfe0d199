//! Stopping, pausing and watching a run: stop signals (graceful, then
//! hard) for the whole run and for each scenario, the pause (k6's
//! `--paused` start, and mid-run for externally-controlled scenarios),
//! progress counters, the log of failed iterations, and [`RunHandle`],
//! through which whoever started the run (a service: `wload serve`)
//! stops, pauses, resumes and scales it as k6's REST `PATCH /v1/status`
//! does, and reads its [`RunStatus`].

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;
use tokio::sync::watch;

use wload_output::progress::{Progress, RunView};

use super::externally_controlled::Controls;
use super::{ExecutorConfig, Failures, ScenarioConfig, Segment};
pub use crate::stop::StopSignal;

/// What the whole run shares: its stop signal, progress and failures.
pub struct RunControl {
    pub stop: Arc<StopSignal>,
    /// Shared with the sandbox: guests trap at their next epoch check.
    sandbox_stop: Arc<AtomicBool>,
    pub progress: Progress,
    pub failures: Failures,
    /// Set when the user interrupted the run (Ctrl-C, or its handle).
    pub aborted: AtomicBool,
    /// Stops asked for through the run's handle so far: the first is
    /// graceful, the next hard, as signals (`run::watch_interrupts`).
    stop_requests: watch::Sender<u32>,
    /// Paused: waiting to start (`paused`), or paused mid-run.
    paused: watch::Sender<bool>,
    /// The scenarios were started (the clock runs).
    started: AtomicBool,
    /// Every scenario ended.
    ended: AtomicBool,
    /// VUs initialised for the run (k6's `vus-max`): 0 until they are.
    pub vus_max: AtomicU32,
    /// The scenarios, sorted as k6 sorts its executors (start time, then
    /// name), once planned.
    scenarios: OnceLock<Vec<ScenarioControl>>,
}

/// One scenario as the handle sees it.
struct ScenarioControl {
    name: String,
    kind: &'static str,
    /// Set for externally-controlled scenarios, the pausable ones.
    controls: Option<Arc<Controls>>,
}

impl RunControl {
    pub fn new(sandbox_stop: Arc<AtomicBool>) -> Arc<RunControl> {
        Arc::new(RunControl {
            stop: Arc::new(StopSignal::default()),
            sandbox_stop,
            progress: Progress::default(),
            failures: Failures::default(),
            aborted: AtomicBool::new(false),
            stop_requests: watch::channel(0).0,
            paused: watch::channel(false).0,
            started: AtomicBool::new(false),
            ended: AtomicBool::new(false),
            vus_max: AtomicU32::new(0),
            scenarios: OnceLock::new(),
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

    /// Know the run's scenarios: the handle pauses and scales them. A
    /// run is planned once; a second call changes nothing.
    pub fn plan(&self, scenarios: &[ScenarioConfig], segment: Segment, paused: bool) {
        let mut sorted: Vec<&ScenarioConfig> = scenarios.iter().collect();
        sorted.sort_by(|a, b| (a.start_time, &a.name).cmp(&(b.start_time, &b.name)));
        let list = sorted
            .into_iter()
            .map(|s| ScenarioControl {
                name: s.name.clone(),
                kind: s.executor.kind(),
                controls: match &s.executor {
                    ExecutorConfig::ExternallyControlled(e) => {
                        Some(Controls::new(&s.name, e, segment))
                    }
                    _ => None,
                },
            })
            .collect();
        if self.scenarios.set(list).is_ok() {
            self.paused.send_replace(paused);
        }
    }

    /// The live controls of the externally-controlled scenario `name`.
    pub fn controls(&self, name: &str) -> Option<Arc<Controls>> {
        self.scenarios
            .get()?
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| s.controls.clone())
    }

    /// Ask for a stop, as a signal does: the first graceful, the next
    /// hard (the run's interrupt watcher acts on it).
    pub fn request_stop(&self) {
        self.stop_requests.send_modify(|n| *n = n.saturating_add(1));
    }

    /// Resolves when at least `n` stops were asked for through the handle.
    pub async fn wait_stop_requests(&self, n: u32) {
        let mut rx = self.stop_requests.subscribe();
        let _ = rx.wait_for(|asked| *asked >= n).await;
    }

    pub fn paused(&self) -> bool {
        *self.paused.borrow()
    }

    /// Resolves when the run is not paused, or stopping.
    pub async fn wait_resumed(&self) {
        let mut rx = self.paused.subscribe();
        tokio::select! {
            _ = rx.wait_for(|paused| !paused) => {}
            _ = self.stop.wait_stopping() => {}
        }
    }

    /// The scenarios start now: from here on a pause is a mid-run pause.
    pub fn mark_started(&self) {
        self.started.store(true, Ordering::SeqCst);
    }

    /// Every scenario ended.
    pub fn mark_ended(&self) {
        self.ended.store(true, Ordering::SeqCst);
    }

    /// k6's `ExecutionScheduler.SetPaused`: before the start, a run
    /// started paused is resumed (started); after it, every scenario must
    /// be pausable (externally-controlled) and is paused or resumed.
    pub fn set_paused(&self, pause: bool) -> Result<(), String> {
        let paused = self.paused();
        if !self.started.load(Ordering::SeqCst) && paused {
            if pause {
                return Err("execution is already paused".to_owned());
            }
            self.paused.send_replace(false);
            return Ok(());
        }
        let scenarios = self.scenarios.get().map(Vec::as_slice).unwrap_or_default();
        let mut pausable = Vec::with_capacity(scenarios.len());
        for s in scenarios {
            match &s.controls {
                Some(c) => pausable.push(c),
                None => {
                    return Err(format!(
                        "{} executor '{}' doesn't support pause and resume operations after its start",
                        s.kind, s.name
                    ));
                }
            }
        }
        match (pause, paused) {
            (true, true) => return Err("test execution was already paused".to_owned()),
            (false, false) => return Err("test execution wasn't paused".to_owned()),
            _ => {}
        }
        for c in pausable {
            c.set_paused(pause)?;
        }
        self.paused.send_replace(pause);
        Ok(())
    }

    /// k6's live update of the first externally-controlled scenario (by
    /// start time, then name): its active VUs and/or maxVUs.
    pub fn scale(&self, vus: Option<u32>, vus_max: Option<u32>) -> Result<(), String> {
        if vus.is_none() && vus_max.is_none() {
            return Ok(());
        }
        let controls = self
            .scenarios
            .get()
            .and_then(|list| list.iter().find_map(|s| s.controls.clone()))
            .ok_or_else(|| {
                "an externally-controlled executor needs to be configured for live configuration \
                 updates"
                    .to_owned()
            })?;
        controls.scale(vus, vus_max)
    }

    /// The run now, as k6's `GET /v1/status` shows it.
    pub fn status(&self) -> RunStatus {
        let started = self.started.load(Ordering::SeqCst);
        let ended = self.ended.load(Ordering::SeqCst);
        RunStatus {
            paused: self.paused(),
            vus: self.progress.active_vus.load(Ordering::Relaxed),
            vus_max: self.vus_max.load(Ordering::Relaxed),
            stopped: self.stopping() || ended,
            running: started && !ended,
        }
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

/// A run's status, with the field names of k6's `/v1/status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RunStatus {
    /// Paused: waiting to start, or paused mid-run.
    pub paused: bool,
    /// VUs active now (in an iteration or looping).
    pub vus: u32,
    /// VUs initialised for the run.
    #[serde(rename = "vus-max")]
    pub vus_max: u32,
    /// Stopping or stopped: asked to stop, or every scenario ended.
    pub stopped: bool,
    /// The scenarios started and have not all ended.
    pub running: bool,
}

/// The controls of one run, for whoever started it: made by the caller
/// ([`RunHandle::new`]), given to the run in `RunOptions::handle`, and
/// attached by the engine to the run's [`RunControl`] once its options
/// are known (before setup). Clones share the one run.
///
/// Before it is attached, [`RunHandle::stop`] is kept for the run (which
/// then stops as soon as it is attached) and pausing or scaling are
/// refused: the run is still loading its test and options.
#[derive(Clone, Default)]
pub struct RunHandle(Arc<Mutex<Attached>>);

#[derive(Default)]
struct Attached {
    run: Option<Arc<RunControl>>,
    /// Stops asked for before the run was attached.
    early_stops: u32,
}

/// Why a change before the run is attached is refused.
const NOT_READY: &str = "the run is still starting: its test and options are being loaded";

impl RunHandle {
    pub fn new() -> RunHandle {
        RunHandle::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Attached> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn run(&self) -> Option<Arc<RunControl>> {
        self.lock().run.clone()
    }

    /// Attach the run (the engine does, once its control exists); stops
    /// asked for until now are passed on.
    pub(crate) fn attach(&self, run: &Arc<RunControl>) {
        let mut attached = self.lock();
        attached.run = Some(run.clone());
        for _ in 0..std::mem::take(&mut attached.early_stops) {
            run.request_stop();
        }
    }

    /// Whether the run has attached itself (pausing and scaling work
    /// from then on).
    pub fn is_attached(&self) -> bool {
        self.lock().run.is_some()
    }

    /// Stop the run: the first call stops it gracefully (no new
    /// iterations; running ones finish within the longest gracefulStop,
    /// then teardown and the summary), a second one at once, as Ctrl-C
    /// does. The run ends with exit code 105.
    pub fn stop(&self) {
        let mut attached = self.lock();
        match &attached.run {
            Some(run) => run.request_stop(),
            None => attached.early_stops = attached.early_stops.saturating_add(1),
        }
    }

    /// Pause or resume (k6's `PATCH /v1/status {"paused": …}`): a run
    /// started paused (`paused`, `--paused`) is started by
    /// `set_paused(false)`; mid-run, only runs whose scenarios are all
    /// externally-controlled can be paused (their running iterations
    /// finish) and resumed.
    pub fn set_paused(&self, paused: bool) -> Result<(), String> {
        self.run().ok_or(NOT_READY)?.set_paused(paused)
    }

    /// Change the active VUs and/or maxVUs of the run's first
    /// externally-controlled scenario (k6's `PATCH /v1/status {"vus": …,
    /// "vus-max": …}`), before or during its run.
    pub fn scale(&self, vus: Option<u32>, vus_max: Option<u32>) -> Result<(), String> {
        self.run().ok_or(NOT_READY)?.scale(vus, vus_max)
    }

    /// The run's status; all zero and false before it is attached, except
    /// `stopped` once a stop was asked for.
    pub fn status(&self) -> RunStatus {
        let attached = self.lock();
        match &attached.run {
            Some(run) => run.status(),
            None => RunStatus {
                stopped: attached.early_stops > 0,
                ..RunStatus::default()
            },
        }
    }
}

impl std::fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RunHandle").field(&self.status()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config;
    use serde_json::json;

    fn planned(options: serde_json::Value, paused: bool) -> Arc<RunControl> {
        let map = options.as_object().cloned().unwrap_or_default();
        let options = config::resolve(&map).unwrap();
        let ctl = RunControl::new(Arc::new(AtomicBool::new(false)));
        ctl.plan(&options.scenarios, Segment::FULL, paused);
        ctl
    }

    #[test]
    fn the_status_has_k6s_field_names() {
        let status = RunStatus {
            paused: true,
            vus: 3,
            vus_max: 10,
            stopped: false,
            running: true,
        };
        assert_eq!(
            serde_json::to_value(status).unwrap(),
            json!({"paused": true, "vus": 3, "vus-max": 10, "stopped": false, "running": true})
        );
    }

    /// A run started paused is started by a resume, whatever its
    /// executors; pausing it again before it started is refused.
    #[test]
    fn a_run_started_paused_is_started_by_a_resume() {
        let ctl = planned(json!({"vus": 2, "duration": "1s"}), true);
        assert!(ctl.status().paused);
        assert_eq!(
            ctl.set_paused(true),
            Err("execution is already paused".into())
        );
        assert_eq!(ctl.set_paused(false), Ok(()));
        assert!(!ctl.paused());
        ctl.mark_started();
        assert_eq!(
            ctl.set_paused(true),
            Err("constant-vus executor 'default' doesn't support pause and resume operations after its start".into())
        );
    }

    /// Mid-run pause needs every scenario pausable, with k6's messages.
    #[test]
    fn only_externally_controlled_runs_pause_mid_run() {
        let mixed = planned(
            json!({"scenarios": {
                "a": {"executor": "externally-controlled", "vus": 1, "duration": "1s"},
                "b": {"executor": "shared-iterations", "iterations": 2},
            }}),
            false,
        );
        mixed.mark_started();
        assert_eq!(
            mixed.set_paused(true),
            Err("shared-iterations executor 'b' doesn't support pause and resume operations after its start".into())
        );
        let ctl = planned(
            json!({"scenarios": {"a": {"executor": "externally-controlled", "vus": 1, "duration": "1s"}}}),
            false,
        );
        // Before the scenario started: refused by the executor, as in k6.
        ctl.mark_started();
        assert_eq!(
            ctl.set_paused(true),
            Err("cannot pause the externally controlled executor before it has started".into())
        );
        assert_eq!(
            ctl.set_paused(false),
            Err("test execution wasn't paused".into())
        );
    }

    #[test]
    fn scaling_needs_an_externally_controlled_scenario() {
        let ctl = planned(json!({"vus": 2, "duration": "1s"}), false);
        assert_eq!(
            ctl.scale(Some(3), None),
            Err("an externally-controlled executor needs to be configured for live configuration updates".into())
        );
        // The first by start time, then name: "b" starts earlier.
        let ctl = planned(
            json!({"scenarios": {
                "a": {"executor": "externally-controlled", "vus": 1, "maxVUs": 5, "duration": "1s", "startTime": "1s"},
                "b": {"executor": "externally-controlled", "vus": 1, "maxVUs": 5, "duration": "1s"},
            }}),
            false,
        );
        assert_eq!(ctl.scale(Some(4), None), Ok(()));
        assert_eq!(ctl.controls("b").map(|c| c.current()), Some((4, 5)));
        assert_eq!(ctl.controls("a").map(|c| c.current()), Some((1, 5)));
    }

    /// Stops asked before the run is attached are kept for it; changes
    /// are refused until then.
    #[test]
    fn a_handle_keeps_an_early_stop_for_its_run() {
        let handle = RunHandle::new();
        assert_eq!(handle.status(), RunStatus::default());
        assert_eq!(handle.set_paused(false), Err(NOT_READY.into()));
        assert_eq!(handle.scale(Some(1), None), Err(NOT_READY.into()));
        handle.stop();
        assert!(handle.status().stopped);
        let ctl = planned(json!({"vus": 1, "duration": "1s"}), false);
        handle.clone().attach(&ctl);
        assert_eq!(*ctl.stop_requests.borrow(), 1);
        handle.stop();
        assert_eq!(*ctl.stop_requests.borrow(), 2);
    }
}
