//! `externally-controlled`: looping VUs whose number the run's controller
//! changes while the run goes (`run::RunHandle::scale`, k6's REST `PATCH
//! /v1/status`), and which can be paused and resumed mid-run, the one
//! executor that can (`RunHandle::set_paused`). k6's options: `vus` (0
//! unless given), `maxVUs` (default `vus`, and at least 1 here),
//! `duration` (required; `0` runs until stopped).
//!
//! As in k6: all `maxVUs` VUs are initialised before the run; VU `i`
//! loops while `i` is below the active count and the scenario is not
//! paused; scaling down interrupts the iterations of the VUs it removes,
//! pausing lets running iterations finish; time spent paused does not
//! count towards `duration`; at the end of `duration` running iterations
//! are interrupted (the executor has no `gracefulStop`, and refuses one).
//! Unlike k6, `maxVUs` cannot be raised during the run: wload sizes its
//! VU pool before the run starts (k6 forbids lowering it below the start
//! value, which holds here too).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::{BoxFuture, Executor, Fields, HardStop, Outcome, Scenario, Segment, Vu, iterate};
use crate::stop::StopSignal;
use crate::task::Owned;
use wload_units::MAX_DURATION;
use wload_units::format::duration_short;

#[derive(Debug, Clone, PartialEq)]
pub struct ExternallyControlled {
    /// Active VUs at the start.
    pub vus: u32,
    /// VUs initialised before the run: the most that can be active.
    pub max_vus: u32,
    /// How long it runs, time paused not counted; zero: until stopped.
    pub duration: Duration,
}

impl Executor for ExternallyControlled {
    fn parse(f: &mut Fields<'_>) -> Self {
        // k6 starts with none active unless told; the one VU of a
        // default maxVUs is what lets such a run be scaled at all, since
        // maxVUs cannot grow during a wload run.
        let vus = f.vus("vus", Some(0), 0);
        ExternallyControlled {
            vus,
            max_vus: f.vus("maxVUs", Some(vus.max(1)), 1),
            duration: f.duration("duration", None),
        }
    }

    fn validate(&self) -> Vec<(String, String)> {
        let mut problems = Vec::new();
        if self.max_vus < self.vus {
            problems.push((
                "maxVUs".to_owned(),
                format!(
                    "{} is fewer than the {} active VUs (vus): it must be at least as many",
                    self.max_vus, self.vus
                ),
            ));
        }
        problems
    }

    fn initial_vus(&self, seg: &Segment) -> u32 {
        seg.scale_vus(self.max_vus)
    }

    fn max_duration(&self) -> Duration {
        if self.duration.is_zero() {
            MAX_DURATION
        } else {
            self.duration
        }
    }

    fn describe(&self) -> (String, String) {
        let duration = if self.duration.is_zero() {
            "infinite".to_owned()
        } else {
            duration_short(self.duration)
        };
        (
            format!(
                "Externally controlled execution with {} VUs, {} max VUs, {duration} duration",
                self.vus, self.max_vus
            ),
            String::new(),
        )
    }

    fn run<'a>(&'a self, sc: Scenario, vus: Vec<Vu>) -> BoxFuture<'a> {
        Box::pin(async move {
            let controls = sc
                .run
                .controls(&sc.factory.scenario.name)
                .unwrap_or_else(|| Controls::new(&sc.factory.scenario.name, self, sc.segment));
            let target = controls.start();
            let sc = Arc::new(sc);
            let mut tasks = tokio::task::JoinSet::new();
            for (index, vu) in vus.into_iter().enumerate() {
                tasks.spawn(controlled_vu(vu, index as u32, sc.clone(), target.clone()));
            }
            let _clock = (!self.duration.is_zero())
                .then(|| Owned::spawn(clock(self.duration, target, sc.stop.clone())));
            super::join_all(&mut tasks, &sc.run).await;
            controls.ended.store(true, Ordering::Relaxed);
        })
    }
}

/// What the VUs of a running scenario follow: how many are active (after
/// segmenting) and whether it is paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Target {
    vus: u32,
    paused: bool,
}

impl Target {
    /// Whether VU number `index` loops.
    fn runs(&self, index: u32) -> bool {
        !self.paused && index < self.vus
    }
}

/// The live configuration of one externally-controlled scenario, which
/// the run's handle changes: made when the run is planned, so that a
/// scale before the scenario starts (a run started paused) is kept for
/// its start, as k6 keeps it.
#[derive(Debug)]
pub struct Controls {
    pub scenario: String,
    segment: Segment,
    /// `maxVUs` as configured: it can neither fall below nor rise above.
    start_max_vus: u32,
    /// `(vus, maxVUs)` now, as the user gives them (before segmenting).
    config: Mutex<(u32, u32)>,
    target: watch::Sender<Target>,
    started: AtomicBool,
    ended: AtomicBool,
}

impl Controls {
    pub fn new(scenario: &str, config: &ExternallyControlled, segment: Segment) -> Arc<Controls> {
        Arc::new(Controls {
            scenario: scenario.to_owned(),
            segment,
            start_max_vus: config.max_vus,
            config: Mutex::new((config.vus, config.max_vus)),
            target: watch::channel(Target {
                vus: segment.scale_vus(config.vus),
                paused: false,
            })
            .0,
            started: AtomicBool::new(false),
            ended: AtomicBool::new(false),
        })
    }

    fn config(&self) -> std::sync::MutexGuard<'_, (u32, u32)> {
        self.config.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Mark it started; what its VUs follow from now on.
    fn start(&self) -> watch::Receiver<Target> {
        self.started.store(true, Ordering::Relaxed);
        self.target.subscribe()
    }

    /// `(vus, maxVUs)` now, as the user gave them.
    pub fn current(&self) -> (u32, u32) {
        *self.config()
    }

    /// Whether its VUs are paused.
    pub fn paused(&self) -> bool {
        self.target.borrow().paused
    }

    /// Change the active VUs and/or `maxVUs`, with k6's checks (its
    /// messages): more active VUs start looping at once (unless paused),
    /// fewer interrupt the iterations of those removed.
    pub fn scale(&self, vus: Option<u32>, max_vus: Option<u32>) -> Result<(), String> {
        let mut config = self.config();
        let (vus, max_vus) = (vus.unwrap_or(config.0), max_vus.unwrap_or(config.1));
        if max_vus < vus {
            return Err(format!(
                "invalid configuration supplied: the specified maxVUs ({max_vus}) should be more \
                 than or equal to the number of active VUs ({vus})"
            ));
        }
        if max_vus < self.start_max_vus {
            return Err(format!(
                "the new number of max VUs cannot be lower than the starting number of max VUs ({})",
                self.start_max_vus
            ));
        }
        if max_vus > self.start_max_vus {
            return Err(format!(
                "the number of max VUs cannot be raised above the starting number of max VUs ({}): \
                 wload initialises every VU before the run starts; set maxVUs as high as the run \
                 may need",
                self.start_max_vus
            ));
        }
        *config = (vus, max_vus);
        let scaled = self.segment.scale_vus(vus);
        self.target.send_modify(|t| t.vus = scaled);
        Ok(())
    }

    /// Pause or resume its VUs: paused, running iterations finish and no
    /// new one starts. Refused before the scenario starts, as in k6.
    pub fn set_paused(&self, paused: bool) -> Result<(), String> {
        if !self.started.load(Ordering::Relaxed) {
            return Err(
                "cannot pause the externally controlled executor before it has started".to_owned(),
            );
        }
        self.target.send_modify(|t| t.paused = paused);
        Ok(())
    }
}

/// VU number `index`: loop while the target includes it.
async fn controlled_vu(
    mut vu: Vu,
    index: u32,
    sc: Arc<Scenario>,
    mut target: watch::Receiver<Target>,
) -> Vu {
    let mut hard = HardStop::new(&sc);
    loop {
        tokio::select! {
            biased;
            _ = sc.wait_stopping() => break,
            r = target.wait_for(|t| t.runs(index)) => if r.is_err() { break },
        }
        sc.vu_active();
        while sc.running() && target.borrow().runs(index) {
            // Scaled down: interrupted now. Paused: the iteration ends
            // first (the loop's condition).
            let mut rx = target.clone();
            let cut = async move {
                let _ = rx.wait_for(|t| t.vus <= index).await;
            };
            if iterate(&mut vu, &sc, &mut hard, None, cut).await == Outcome::Interrupted
                && sc.hard_stopped()
            {
                break;
            }
        }
        sc.vu_idle();
        if !sc.running() {
            break;
        }
    }
    vu
}

/// Stop the scenario hard once it has run `duration`, time paused not
/// counted (k6's `GetCurrentTestRunDuration`).
async fn clock(duration: Duration, mut target: watch::Receiver<Target>, stop: Arc<StopSignal>) {
    let mut left = duration;
    loop {
        if target.wait_for(|t| !t.paused).await.is_err() {
            return;
        }
        let since = Instant::now();
        tokio::select! {
            _ = tokio::time::sleep(left) => break,
            r = target.wait_for(|t| t.paused) => {
                if r.is_err() {
                    return;
                }
                left = left.saturating_sub(since.elapsed());
            }
        }
    }
    stop.stop_now();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::read;
    use serde_json::json;

    #[test]
    fn options_plan_and_description() {
        let (e, errors) =
            read::<ExternallyControlled>(json!({"vus": 2, "maxVUs": 10, "duration": "1m"}));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            (e.initial_vus(&Segment::FULL), e.max_vus(&Segment::FULL)),
            (10, 10)
        );
        assert_eq!(e.max_duration(), Duration::from_secs(60));
        assert_eq!(
            e.describe().0,
            "Externally controlled execution with 2 VUs, 10 max VUs, 1m0s duration"
        );
        // maxVUs defaults to vus; a zero duration runs until stopped.
        let (e, errors) = read::<ExternallyControlled>(json!({"vus": 3, "duration": 0}));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(e.max_vus, 3);
        assert_eq!(e.max_duration(), MAX_DURATION);
        assert!(
            e.describe().0.ends_with("infinite duration"),
            "{:?}",
            e.describe()
        );
        // k6's default of no active VU, and one to scale up to.
        let (e, errors) = read::<ExternallyControlled>(json!({"duration": "1s"}));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!((e.vus, e.max_vus), (0, 1));
    }

    #[test]
    fn every_problem_is_reported() {
        let (_, errors) = read::<ExternallyControlled>(json!({"vus": 5, "maxVUs": 2}));
        assert_eq!(
            errors,
            [
                "scenarios.s.duration: is required (a duration such as \"30s\")",
                "scenarios.s.maxVUs: 2 is fewer than the 5 active VUs (vus): it must be at least as many",
            ]
        );
        let (_, errors) = read::<ExternallyControlled>(json!({"maxVUs": 0, "duration": "x"}));
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("scenarios.s.maxVUs: must be a whole number of at least 1"));
        assert!(errors[1].starts_with("scenarios.s.duration: invalid duration"));
    }

    fn controls(vus: u32, max_vus: u32) -> Arc<Controls> {
        let config = ExternallyControlled {
            vus,
            max_vus,
            duration: Duration::from_secs(1),
        };
        Controls::new("s", &config, Segment::FULL)
    }

    /// k6's rules of a live update, and wload's one more: maxVUs stays
    /// what it was at the start.
    #[test]
    fn scaling_follows_k6s_rules() {
        let c = controls(2, 10);
        assert_eq!(c.scale(Some(7), None), Ok(()));
        assert_eq!(c.current(), (7, 10));
        assert_eq!(c.target.borrow().vus, 7);
        assert_eq!(c.scale(Some(0), Some(10)), Ok(()));
        assert_eq!(c.target.borrow().vus, 0);
        let err = c.scale(Some(11), None).unwrap_err();
        assert!(
            err.contains(
                "maxVUs (10) should be more than or equal to the number of active VUs (11)"
            ),
            "{err}"
        );
        let err = c.scale(Some(1), Some(5)).unwrap_err();
        assert!(
            err.contains("cannot be lower than the starting number of max VUs (10)"),
            "{err}"
        );
        let err = c.scale(None, Some(20)).unwrap_err();
        assert!(
            err.contains("cannot be raised above the starting number of max VUs (10)"),
            "{err}"
        );
        // A refused change changes nothing.
        assert_eq!(c.current(), (0, 10));
        // Scaled to a segment's share.
        let config = ExternallyControlled {
            vus: 4,
            max_vus: 10,
            duration: Duration::ZERO,
        };
        let half = Controls::new("s", &config, Segment::parse("0:1/2").unwrap());
        assert_eq!(half.target.borrow().vus, 2);
        half.scale(Some(10), None).unwrap();
        assert_eq!(half.target.borrow().vus, 5);
    }

    #[test]
    fn pausing_is_refused_before_the_start() {
        let c = controls(1, 1);
        assert_eq!(
            c.set_paused(true),
            Err("cannot pause the externally controlled executor before it has started".into())
        );
        let rx = c.start();
        assert_eq!(c.set_paused(true), Ok(()));
        assert!(rx.borrow().paused && c.paused());
        assert_eq!(c.set_paused(false), Ok(()));
        assert!(!c.paused());
    }

    /// The clock stops while paused: 200 ms of run time with a 300 ms
    /// pause in the middle end 500 ms after the start.
    #[tokio::test]
    async fn time_paused_does_not_count() {
        let c = controls(1, 1);
        let rx = c.start();
        let stop = Arc::new(StopSignal::default());
        let started = Instant::now();
        let clock = Owned::spawn(clock(Duration::from_millis(200), rx, stop.clone()));
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.set_paused(true).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!stop.stopping(), "stopped while paused");
        c.set_paused(false).unwrap();
        let _ = clock.await;
        assert!(stop.hard_stopped());
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(500) && took < Duration::from_secs(1),
            "{took:?}"
        );
    }
}
