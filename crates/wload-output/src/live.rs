//! The run's aggregation thread: once per output interval (`--out-interval`,
//! default 1s) it samples the `vus` gauge, drains the recorder into that
//! interval's aggregates, writes them to the `--out` files and hands them
//! to the progress display. It is a plain thread, not a task on the async
//! runtime, so that encoding and writing never delay a VU; the recording
//! threads only wait for the swap of their shard (see `metrics::shard`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, anyhow};

use super::progress::{Display, RunView};
use super::stream::{IntervalView, Outputs, unix_seconds};
use wload_metrics::{Builtin, Recorder, untagged};

/// The running aggregation thread.
pub struct Live {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<Result<()>>,
}

impl Live {
    /// Start aggregating now (the run's clock starts now too).
    pub fn start(
        recorder: Arc<Recorder>,
        run: Arc<dyn RunView>,
        mut outputs: Outputs,
        mut display: Display,
        interval: Duration,
    ) -> Result<Live> {
        let (stop, stopped) = mpsc::channel::<()>();
        // Interval times are given since the run's start, not the recorder's.
        let offset = recorder.elapsed();
        let started = Instant::now();
        let thread = std::thread::Builder::new()
            .name("wload-aggregate".into())
            .spawn(move || {
                let vus = untagged();
                let mut metrics = recorder.registry().all();
                let mut ticks = 1u32;
                let mut sampled = false;
                loop {
                    let next = started + interval * ticks;
                    let wait = next.saturating_duration_since(Instant::now());
                    let last = !matches!(
                        stopped.recv_timeout(wait),
                        Err(mpsc::RecvTimeoutError::Timeout)
                    );
                    // Skip ticks missed while writing took long.
                    ticks = (ticks + 1).max(
                        (started.elapsed().as_nanos() / interval.as_nanos().max(1)) as u32 + 1,
                    );
                    // The `vus` gauge, sampled each interval as k6 does each
                    // second; a run shorter than one interval gets its peak
                    // (at the end, every VU is idle).
                    let p = run.progress();
                    let active = match (last, sampled) {
                        (false, _) => Some(p.active_vus.load(Ordering::Relaxed)),
                        (true, false) => Some(p.peak_vus.load(Ordering::Relaxed)),
                        (true, true) => None,
                    };
                    if let Some(n) = active {
                        recorder.record(&vus, &[(Builtin::Vus.id(), f64::from(n))]);
                        sampled = true;
                    }
                    let scenario_vus = display.scenario_vus();
                    let drained = recorder.drain();
                    // Guests may define metrics during the run.
                    if drained
                        .series
                        .series
                        .keys()
                        .any(|(id, _)| *id as usize >= metrics.len())
                    {
                        metrics = recorder.registry().all();
                    }
                    let start = drained.start.saturating_sub(offset).as_secs_f64();
                    let end = drained.end.saturating_sub(offset).as_secs_f64();
                    let view = IntervalView {
                        scenario_vus: &scenario_vus,
                        interval: &drained,
                        start,
                        end,
                        time: unix_seconds(SystemTime::now()),
                        metrics: &metrics,
                    };
                    outputs.write(&view);
                    display.update(&view, last);
                    if last {
                        return outputs.finish();
                    }
                }
            })
            .context("cannot start the aggregation thread")?;
        Ok(Live { stop, thread })
    }

    /// Drain the last (partial) interval, print the final progress, close
    /// the outputs.
    pub fn finish(self) -> Result<()> {
        let _ = self.stop.send(());
        self.thread
            .join()
            .map_err(|_| anyhow!("the aggregation thread panicked"))?
    }
}
