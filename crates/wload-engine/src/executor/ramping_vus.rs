//! `ramping-vus`: the number of looping VUs follows linear stages, like
//! k6's. All `max` VUs are initialised up front; a controller publishes
//! how many should be active, VU `i` runs while `i` is below that number.
//! A VU ramped down finishes its iteration, or is interrupted after
//! `gracefulRampDown`.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::{
    BoxFuture, DEFAULT_GRACEFUL_STOP, Executor, Fields, HardStop, Outcome, Scenario, Segment,
    Stage, Vu, iterate, join_all,
};
use wload_units::format::duration_short;

use crate::task::Owned;

#[derive(Debug, Clone, PartialEq)]
pub struct RampingVus {
    pub start_vus: u32,
    pub stages: Vec<Stage>,
    pub graceful_ramp_down: Duration,
}

/// How often the controller re-reads the plan.
const TICK: Duration = Duration::from_millis(5);

impl RampingVus {
    /// VUs the plan asks for `t` after the start (before segmenting).
    /// Within a stage from `a` to `b` over `d` the count steps by one at
    /// each `d / |b - a|`, as in k6.
    pub fn planned(&self, t: Duration) -> u32 {
        let mut from = self.start_vus;
        let mut offset = Duration::ZERO;
        for s in &self.stages {
            let to = s.target as u32;
            if t < offset + s.duration {
                let done = (t - offset).as_secs_f64() / s.duration.as_secs_f64();
                let span = f64::from(from.abs_diff(to));
                let step = (span * done).floor() as u32;
                return if to >= from { from + step } else { from - step };
            }
            offset += s.duration;
            from = to;
        }
        from
    }

    fn peak(&self) -> u32 {
        self.stages
            .iter()
            .map(|s| s.target as u32)
            .chain([self.start_vus])
            .max()
            .unwrap_or(0)
    }
}

impl Executor for RampingVus {
    fn parse(f: &mut Fields<'_>) -> Self {
        RampingVus {
            start_vus: f.vus("startVUs", Some(1), 0),
            stages: f.stages("stages"),
            graceful_ramp_down: f.duration("gracefulRampDown", Some(DEFAULT_GRACEFUL_STOP)),
        }
    }

    fn validate(&self) -> Vec<(String, String)> {
        let mut problems = Vec::new();
        for (i, s) in self.stages.iter().enumerate() {
            if s.target.fract() != 0.0 || s.target > f64::from(u32::MAX) {
                problems.push((
                    format!("stages[{i}].target"),
                    "must be a whole number of VUs".into(),
                ));
            }
        }
        if self.max_duration().is_zero() && !self.stages.is_empty() {
            problems.push(("stages".into(), "must last longer than 0s in total".into()));
        }
        problems
    }

    fn initial_vus(&self, seg: &Segment) -> u32 {
        seg.scale_vus(self.peak())
    }

    fn max_duration(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    fn describe(&self) -> (String, String) {
        (
            format!(
                "Up to {} looping VUs for {} over {} stages",
                self.peak(),
                duration_short(self.max_duration()),
                self.stages.len()
            ),
            format!(
                "gracefulRampDown: {}",
                duration_short(self.graceful_ramp_down)
            ),
        )
    }

    fn run<'a>(&'a self, sc: Scenario, vus: Vec<Vu>) -> BoxFuture<'a> {
        Box::pin(async move {
            let total = self.max_duration();
            let _stop = sc.schedule_stop(total);
            let seg = sc.segment;
            let (target_tx, target_rx) =
                watch::channel(seg.scale_vus(self.planned(Duration::ZERO)));
            let sc = Arc::new(sc);
            let mut tasks = tokio::task::JoinSet::new();
            for (index, vu) in vus.into_iter().enumerate() {
                tasks.spawn(ramped_vu(
                    vu,
                    index as u32,
                    sc.clone(),
                    target_rx.clone(),
                    self.graceful_ramp_down,
                ));
            }
            let started = Instant::now();
            let plan = self.clone();
            let _controller = Owned::spawn(async move {
                loop {
                    let t = started.elapsed();
                    target_tx.send_if_modified(|v| {
                        let want = seg.scale_vus(plan.planned(t));
                        std::mem::replace(v, want) != want
                    });
                    if t >= total {
                        break;
                    }
                    tokio::time::sleep(TICK).await;
                }
            });
            join_all(&mut tasks, &sc.run).await;
        })
    }
}

/// VU number `index`: iterate while the plan includes it.
async fn ramped_vu(
    mut vu: Vu,
    index: u32,
    sc: Arc<Scenario>,
    mut target: watch::Receiver<u32>,
    ramp_down: Duration,
) -> Vu {
    let mut hard = HardStop::new(&sc);
    loop {
        // Wait to be included in the plan.
        tokio::select! {
            biased;
            _ = sc.wait_stopping() => break,
            r = target.wait_for(|t| *t > index) => if r.is_err() { break },
        }
        sc.vu_active();
        while sc.running() && *target.borrow() > index {
            let mut rx = target.clone();
            let cut = async move {
                let _ = rx.wait_for(|t| *t <= index).await;
                tokio::time::sleep(ramp_down).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(start: u32, stages: &[(u64, u32)]) -> RampingVus {
        RampingVus {
            start_vus: start,
            stages: stages
                .iter()
                .map(|&(s, t)| Stage {
                    duration: Duration::from_secs(s),
                    target: f64::from(t),
                })
                .collect(),
            graceful_ramp_down: Duration::ZERO,
        }
    }

    #[test]
    fn the_plan_steps_linearly_like_k6() {
        let p = plan(0, &[(10, 10), (10, 10), (5, 0)]);
        let at = |ms: u64| p.planned(Duration::from_millis(ms));
        assert_eq!(at(0), 0);
        assert_eq!(at(999), 0);
        assert_eq!(at(1000), 1);
        assert_eq!(at(5500), 5);
        assert_eq!(at(10_000), 10);
        assert_eq!(at(15_000), 10);
        // Ramping down from 10 to 0 over 5 s: one VU less every 0.5 s.
        assert_eq!(at(20_000), 10);
        assert_eq!(at(20_499), 10);
        assert_eq!(at(20_500), 9);
        assert_eq!(at(24_999), 1);
        assert_eq!(at(25_000), 0);
        assert_eq!(at(99_000), 0);
        assert_eq!(p.peak(), 10);
        assert_eq!(p.max_duration(), Duration::from_secs(25));
    }
}
