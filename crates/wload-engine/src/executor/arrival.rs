//! The open-model loop shared by the arrival-rate executors: iteration
//! `i` starts at its scheduled instant on whichever VU is free, whatever
//! the VUs before it are doing. When none is free, a new VU is
//! initialised for later iterations (up to `maxVUs`) and this iteration is
//! dropped and counted in `dropped_iterations`, as in k6.
//!
//! Each started iteration carries how late it started against its
//! schedule, so its duration and its requests are also recorded as seen
//! from the schedule (`iteration_duration_corrected`,
//! `http_req_duration_corrected`): a server that stalls shows up in
//! those percentiles instead of vanishing into fewer samples (coordinated
//! omission, as wrk2 corrects it). A dropped iteration adds to
//! `iteration_duration_corrected` the time it would have waited for a VU
//! at least: until one became free again.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::{HardStop, Outcome, Scenario, Segment, Vu, iterate, join_all};
use wload_metrics::Builtin;

/// Free VUs, each waiting on its own channel for the scheduled instant of
/// its next iteration.
type Idle = Arc<Mutex<Vec<mpsc::Sender<Instant>>>>;
/// Scheduled instants of dropped iterations not yet accounted for.
type Dropped = Arc<Mutex<Vec<Instant>>>;

/// Longest the scheduler sleeps at once, so that it notices a stop.
const MAX_NAP: Duration = Duration::from_millis(50);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Run `sc` with iteration `i` due at `offset(i)` after the start
/// (`None`: past the end), for `total`, with up to `max_vus` VUs.
///
/// The schedule runs on a thread of its own with the OS's sleep (tens of
/// microseconds of precision, where tokio's timer has a millisecond), so
/// that lateness measures the system under test and not our clock.
pub async fn run_open(
    sc: Scenario,
    vus: Vec<Vu>,
    total: Duration,
    max_vus: u32,
    offset: impl Fn(u64) -> Option<Duration> + Send + 'static,
) {
    let _stop = sc.schedule_stop(total);
    let sc = Arc::new(sc);
    let idle: Idle = Arc::default();
    let dropped: Dropped = Arc::default();
    let mut tasks = tokio::task::JoinSet::new();
    let initial = vus.len() as u32;
    for vu in vus {
        tasks.spawn(worker(vu, sc.clone(), idle.clone(), dropped.clone()));
    }
    // Start the clock only when every pre-allocated VU is waiting.
    while (lock(&idle).len() as u32) < initial && !tasks.is_empty() {
        tokio::task::yield_now().await;
    }
    let runtime = tokio::runtime::Handle::current();
    let schedule = {
        let (sc, idle, dropped) = (sc.clone(), idle.clone(), dropped.clone());
        tokio::task::spawn_blocking(move || {
            schedule(&sc, &idle, &dropped, &runtime, initial, max_vus, offset)
        })
    };
    let added = schedule.await.unwrap_or_default();
    // No more iterations: idle VUs stop now, busy ones after theirs.
    sc.stop.stop_gracefully();
    for task in added {
        let _ = task.await;
    }
    join_all(&mut tasks, &sc.run).await;
}

/// The scheduler loop; returns the tasks of VUs it added.
fn schedule(
    sc: &Arc<Scenario>,
    idle: &Idle,
    dropped: &Dropped,
    runtime: &tokio::runtime::Handle,
    initial: u32,
    max_vus: u32,
    offset: impl Fn(u64) -> Option<Duration>,
) -> Vec<tokio::task::JoinHandle<()>> {
    // Wake within microseconds of the deadline, not the default 50 µs
    // timer slack.
    // SAFETY: prctl with PR_SET_TIMERSLACK only changes this thread's
    // timer slack; a failure leaves it as it was.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
    let rec = sc.factory.shared.recorder.clone();
    let tags = sc.factory.scenario.tags.clone();
    let mut live = initial;
    let mut added = Vec::new();
    let start = Instant::now();
    'schedule: for due in owned(offset, sc.segment) {
        let at = start + due;
        loop {
            if !sc.running() {
                break 'schedule;
            }
            let now = Instant::now();
            if now >= at {
                break;
            }
            std::thread::sleep((at - now).min(MAX_NAP));
        }
        if hand_over(idle, at) {
            continue 'schedule;
        }
        // None free: add a VU for later iterations, drop this one.
        if live < max_vus {
            live += 1;
            let (sc, idle, dropped) = (sc.clone(), idle.clone(), dropped.clone());
            added.push(runtime.spawn(async move {
                match sc.factory.create().await {
                    Ok(vu) => worker(vu, sc, idle, dropped).await,
                    Err(e) => sc.run.failures.report(0, &format!("{e:#}")),
                }
            }));
        }
        sc.run.progress.dropped.fetch_add(1, Ordering::Relaxed);
        rec.record(&tags, &[(Builtin::DroppedIterations.id(), 1.0)]);
        lock(dropped).push(at);
    }
    added
}

/// When each iteration of the schedule this segment owns is due, in order:
/// the segments of a split run take disjoint iterations of one schedule.
fn owned(
    offset: impl Fn(u64) -> Option<Duration>,
    segment: Segment,
) -> impl Iterator<Item = Duration> {
    (0u64..)
        .map_while(move |i| Some((i, offset(i)?)))
        .filter_map(move |(i, due)| segment.owns(i).then_some(due))
}

/// Hand the iteration due `at` to a free VU; false when none is free.
/// A VU that stopped since it offered itself (its channel closed) is
/// passed over.
fn hand_over(idle: &Idle, at: Instant) -> bool {
    loop {
        let next = lock(idle).pop();
        match next {
            Some(tx) => {
                if tx.try_send(at).is_ok() {
                    return true;
                }
            }
            None => return false,
        }
    }
}

/// One VU of an open-model scenario: offer itself as idle, run the
/// iteration it is handed, repeat until the scenario stops.
async fn worker(mut vu: Vu, sc: Arc<Scenario>, idle: Idle, dropped: Dropped) {
    let (tx, mut rx) = mpsc::channel::<Instant>(1);
    let rec = sc.factory.shared.recorder.clone();
    let tags = sc.factory.scenario.tags.clone();
    let mut hard = HardStop::new(&sc);
    loop {
        // Iterations dropped while every VU was busy waited at least
        // until now for one.
        let waited = std::mem::take(&mut *lock(&dropped));
        if !waited.is_empty() {
            let now = Instant::now();
            let samples: Vec<_> = waited
                .iter()
                .map(|at| {
                    (
                        Builtin::IterationDurationCorrected.id(),
                        now.duration_since(*at).as_nanos() as u64,
                    )
                })
                .collect();
            rec.record_nanos(&tags, &samples);
        }
        if !sc.running() {
            break;
        }
        lock(&idle).push(tx.clone());
        // An iteration already handed over runs even if the scenario is
        // stopping: it was scheduled within the duration.
        let at = tokio::select! {
            biased;
            at = rx.recv() => match at {
                Some(at) => at,
                None => break,
            },
            _ = sc.wait_stopping() => break,
        };
        let lateness = Instant::now().saturating_duration_since(at);
        sc.vu_active();
        let cut = std::future::pending();
        let outcome = iterate(&mut vu, &sc, &mut hard, Some(lateness), cut).await;
        sc.vu_idle();
        if outcome == Outcome::Interrupted {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_10ms(n: u64) -> impl Fn(u64) -> Option<Duration> {
        move |i| (i < n).then(|| Duration::from_millis(10 * i))
    }

    #[test]
    fn segments_take_disjoint_iterations_of_one_schedule() {
        let whole: Vec<Duration> = owned(every_10ms(10), Segment::FULL).collect();
        assert_eq!(whole.len(), 10);
        assert_eq!(whole[3], Duration::from_millis(30));
        let halves: Vec<Vec<Duration>> = ["0:1/2", "1/2:1"]
            .iter()
            .map(|s| owned(every_10ms(10), Segment::parse(s).unwrap()).collect())
            .collect();
        assert_eq!(halves[0].len() + halves[1].len(), 10);
        let mut both: Vec<Duration> = halves.concat();
        both.sort();
        assert_eq!(both, whole, "every iteration in exactly one segment");
    }

    #[test]
    fn an_iteration_goes_to_a_free_vu_or_is_refused() {
        let idle: Idle = Arc::default();
        let at = Instant::now();
        assert!(!hand_over(&idle, at), "no VU free");

        let (gone, closed) = mpsc::channel::<Instant>(1);
        drop(closed);
        let (free, mut waiting) = mpsc::channel::<Instant>(1);
        lock(&idle).push(free);
        lock(&idle).push(gone);
        assert!(hand_over(&idle, at), "a stopped VU is passed over");
        assert_eq!(waiting.try_recv().ok(), Some(at));
        assert!(lock(&idle).is_empty());
        assert!(!hand_over(&idle, at));
    }
}
