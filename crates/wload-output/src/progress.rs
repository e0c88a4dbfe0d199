//! Live progress while the run goes, fed by the interval aggregates of
//! the aggregation thread (see [`super::live`]): on a terminal, a status
//! line and one bar per scenario, redrawn in place each interval (elapsed
//! / total, VUs, iterations, and over the last interval req/s, the
//! http_req_failed rate and the p95 of http_req_duration); otherwise (CI
//! logs) the same lines as plain text every ten seconds and at the end.
//! `--quiet` silences it. A run on `wload serve` hands each drawing to
//! its caller instead ([`ProgressFrames`]), and `wload run --server`
//! paints them with the same [`Painter`], so that a remote run shows what
//! a local one does.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use wload_metrics::{Builtin, Sink, TrendSink};
use wload_units::format::{duration_short, millis, number};

use super::stream::{IntervalView, ScenarioVus};

/// How often plain (non-terminal) progress is printed.
const PLAIN_EVERY: Duration = Duration::from_secs(10);
/// Width of a scenario's bar, in characters.
const BAR: usize = 24;

/// Live counters of a run, written by the executors and VUs and read by
/// the progress display and the aggregation thread.
#[derive(Debug, Default)]
pub struct Progress {
    pub completed: AtomicU64,
    pub failed: AtomicU64,
    pub interrupted: AtomicU64,
    pub dropped: AtomicU64,
    pub active_vus: AtomicU32,
    /// The most VUs active at once so far: the `vus` gauge of a run
    /// shorter than one sampling interval.
    pub peak_vus: AtomicU32,
}

/// What the outputs read of a running run. The engine's run control
/// implements it; the outputs only look, so they need nothing of the
/// engine's types.
pub trait RunView: Send + Sync {
    fn progress(&self) -> &Progress;
    /// Whether the run has begun stopping (gracefully or hard).
    fn stopping(&self) -> bool;
}

/// One scenario as planned, in the words of the run header and the
/// progress bars; the engine describes each of its scenarios so.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioPlan {
    pub name: String,
    /// What its executor does ("10 looping VUs for 30s").
    pub what: String,
    /// Details for the parenthesis after it ("" for none).
    pub details: String,
    /// The test entry point its VUs run.
    pub exec: String,
    pub start_time: Duration,
    /// How long it may run, gracefulStop not included.
    pub duration: Duration,
    pub graceful_stop: Duration,
    pub max_vus: u32,
}

/// One scenario as the display knows it: its plan, and what it did.
pub struct ScenarioProgress {
    pub plan: ScenarioPlan,
    /// Its VUs in an iteration or a loop, counted by the engine.
    pub active_vus: Arc<AtomicU32>,
    iterations: u64,
}

impl ScenarioProgress {
    pub fn new(plan: ScenarioPlan, active_vus: Arc<AtomicU32>) -> Self {
        ScenarioProgress {
            plan,
            active_vus,
            iterations: 0,
        }
    }
}

/// The last interval's figures of one scenario.
#[derive(Default, Clone)]
struct Window {
    requests: f64,
    failed: (u64, u64),
    duration: Option<TrendSink>,
}

/// Where a run's drawings go instead of stderr: each interval's lines,
/// and whether it is the last.
pub type ProgressFrames = Arc<dyn Fn(&[String], bool) + Send + Sync>;

/// Paints progress lines on stderr: redrawn in place on a terminal, plain
/// every ten seconds (and the last drawing) otherwise.
pub struct Painter {
    tty: bool,
    /// Lines of the last in-place drawing, to move back over.
    drawn: usize,
    next_plain: Duration,
}

impl Default for Painter {
    fn default() -> Self {
        Painter::new()
    }
}

impl Painter {
    pub fn new() -> Painter {
        Painter {
            tty: std::io::stderr().is_terminal(),
            drawn: 0,
            next_plain: PLAIN_EVERY,
        }
    }

    /// Whether a drawing at `elapsed` would be painted: always on a
    /// terminal, when due or `last` otherwise.
    fn due(&self, elapsed: Duration, last: bool) -> bool {
        self.tty || last || elapsed >= self.next_plain
    }

    /// Paint `lines`, `elapsed` into the run, if due.
    pub fn paint(&mut self, lines: &[String], elapsed: Duration, last: bool) {
        if !self.due(elapsed, last) {
            return;
        }
        while self.next_plain <= elapsed {
            self.next_plain += PLAIN_EVERY;
        }
        let mut out = String::new();
        if self.tty && self.drawn > 0 {
            let _ = write!(out, "\x1b[{}A", self.drawn);
        }
        for line in lines {
            if self.tty {
                let _ = writeln!(out, "\r\x1b[2K{line}");
            } else {
                let _ = writeln!(out, "{line}");
            }
        }
        self.drawn = lines.len();
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(out.as_bytes());
        let _ = err.flush();
    }
}

/// Where a [`Display`] draws.
enum Canvas {
    Stderr(Painter),
    Frames(ProgressFrames),
}

/// The progress display of a run.
pub struct Display {
    run: Arc<dyn RunView>,
    scenarios: Vec<ScenarioProgress>,
    started: Instant,
    total: Duration,
    max_vus: u32,
    quiet: bool,
    canvas: Canvas,
    /// The previous full interval, shown instead of a last one that is
    /// too short to give meaningful rates.
    previous: Option<(Vec<Window>, f64)>,
}

impl Display {
    pub fn new(
        run: Arc<dyn RunView>,
        scenarios: Vec<ScenarioProgress>,
        started: Instant,
        total: Duration,
        max_vus: u32,
        quiet: bool,
    ) -> Display {
        Display {
            run,
            scenarios,
            started,
            total,
            max_vus,
            quiet,
            canvas: Canvas::Stderr(Painter::new()),
            previous: None,
        }
    }

    /// Hand every drawing to `frames` instead of painting it (even when
    /// quiet: the caller shows it).
    pub fn into_frames(mut self, frames: ProgressFrames) -> Display {
        self.canvas = Canvas::Frames(frames);
        self.quiet = false;
        self
    }

    /// Each scenario's active VUs now, in the run's scenario order.
    pub fn scenario_vus(&self) -> Vec<ScenarioVus> {
        self.scenarios
            .iter()
            .map(|s| ScenarioVus {
                name: s.plan.name.clone(),
                active: s.active_vus.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Take in one interval's aggregates and redraw (on a terminal), or
    /// print plain lines when due or when `last`.
    pub fn update(&mut self, view: &IntervalView, last: bool) {
        let mut windows = self.take(view);
        let mut seconds = view.seconds();
        match &self.previous {
            Some((w, s)) if last && seconds < s / 2.0 => {
                (windows, seconds) = (w.clone(), *s);
            }
            _ => self.previous = Some((windows.clone(), seconds)),
        }
        if self.quiet {
            return;
        }
        let elapsed = self.started.elapsed();
        if let Canvas::Stderr(painter) = &self.canvas
            && !painter.due(elapsed, last)
        {
            return;
        }
        let lines = self.lines(elapsed, &windows, seconds);
        match &mut self.canvas {
            Canvas::Stderr(painter) => painter.paint(&lines, elapsed, last),
            Canvas::Frames(frames) => frames(&lines, last),
        }
    }

    /// Fold the interval into per-scenario windows and iteration totals.
    fn take(&mut self, view: &IntervalView) -> Vec<Window> {
        let mut windows: Vec<Window> = self.scenarios.iter().map(|_| Window::default()).collect();
        for ((id, tags), sink) in &view.interval.series.series {
            let Some(i) = tags
                .get("scenario")
                .and_then(|name| self.scenarios.iter().position(|s| s.plan.name == name))
            else {
                continue;
            };
            let w = &mut windows[i];
            match (*id, sink) {
                (id, Sink::Counter { sum, .. }) if id == Builtin::Iterations.id() => {
                    self.scenarios[i].iterations += *sum as u64;
                }
                (id, Sink::Counter { sum, .. }) if id == Builtin::HttpReqs.id() => {
                    w.requests += sum;
                }
                (id, Sink::Rate { trues, total }) if id == Builtin::HttpReqFailed.id() => {
                    w.failed.0 += trues;
                    w.failed.1 += total;
                }
                (id, Sink::Trend(t)) if id == Builtin::HttpReqDuration.id() => {
                    match &mut w.duration {
                        Some(d) => d.merge(t),
                        None => w.duration = Some(t.clone()),
                    }
                }
                _ => {}
            }
        }
        windows
    }

    fn lines(&self, elapsed: Duration, windows: &[Window], seconds: f64) -> Vec<String> {
        let p = self.run.progress();
        let mut lines = vec![format!(
            "running ({}/{}), {}/{} VUs, {} complete and {} interrupted iterations{}{}",
            clock(elapsed),
            clock(self.total),
            p.active_vus.load(Ordering::Relaxed),
            self.max_vus,
            p.completed.load(Ordering::Relaxed) + p.failed.load(Ordering::Relaxed),
            p.interrupted.load(Ordering::Relaxed),
            match p.dropped.load(Ordering::Relaxed) {
                0 => String::new(),
                n => format!(", {n} dropped"),
            },
            if self.run.stopping() {
                " (stopping)"
            } else {
                ""
            },
        )];
        let width = self
            .scenarios
            .iter()
            .map(|s| s.plan.name.len())
            .max()
            .unwrap_or(0);
        for (s, w) in self.scenarios.iter().zip(windows) {
            let plan = &s.plan;
            let own = elapsed.saturating_sub(plan.start_time).min(plan.duration);
            let done = if plan.duration.is_zero() {
                1.0
            } else {
                own.as_secs_f64() / plan.duration.as_secs_f64()
            };
            let rps = if seconds > 0.0 {
                w.requests / seconds
            } else {
                0.0
            };
            let errors = if w.failed.1 == 0 {
                0.0
            } else {
                w.failed.0 as f64 * 100.0 / w.failed.1 as f64
            };
            let p95 = w.duration.as_ref().map_or(0.0, |t| t.percentile(95.0));
            lines.push(format!(
                "{:<width$} {} {}/{} {}/{} VUs {} iters {} req/s {}% failed p95={}",
                plan.name,
                bar(done),
                clock(own),
                clock(plan.duration),
                s.active_vus.load(Ordering::Relaxed),
                plan.max_vus,
                s.iterations,
                number(rps, 1),
                number(errors, 2),
                millis(p95),
            ));
        }
        lines
    }
}

/// `[=========>--------------]` for a fraction done.
fn bar(done: f64) -> String {
    let filled = ((done.clamp(0.0, 1.0) * BAR as f64).round() as usize).min(BAR);
    let mut out = String::with_capacity(BAR + 2);
    out.push('[');
    for i in 0..BAR {
        out.push(match i.cmp(&filled) {
            std::cmp::Ordering::Less => '=',
            std::cmp::Ordering::Equal => '>',
            std::cmp::Ordering::Greater => '-',
        });
    }
    out.push(']');
    out
}

/// `0m05.1s`, k6's progress clock.
fn clock(d: Duration) -> String {
    let s = d.as_secs_f64();
    let m = (s / 60.0).floor();
    format!("{m}m{:04.1}s", s - m * 60.0)
}

/// The header printed before the run starts, like k6's.
pub fn header(
    test: &str,
    scenarios: &[ScenarioPlan],
    max_vus: u32,
    max_total: Duration,
    segment: Option<&str>,
) -> String {
    let n = scenarios.len();
    let mut out = format!("\n  execution: local\n     script: {test}\n");
    if let Some(segment) = segment {
        out.push_str(&format!("    segment: {segment}\n"));
    }
    out.push_str(&format!(
        "\n  scenarios: (100.00%) {n} scenario{}, {max_vus} max VUs, {} max duration (incl. graceful stop):\n",
        if n == 1 { "" } else { "s" },
        duration_short(max_total)
    ));
    for s in scenarios {
        let mut extras = Vec::new();
        if !s.details.is_empty() {
            extras.push(s.details.clone());
        }
        if s.exec != "default" {
            extras.push(format!("exec: {}", s.exec));
        }
        if !s.start_time.is_zero() {
            extras.push(format!("startTime: {}", duration_short(s.start_time)));
        }
        extras.push(format!("gracefulStop: {}", duration_short(s.graceful_stop)));
        out.push_str(&format!(
            "           * {}: {} ({})\n",
            s.name,
            s.what,
            extras.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_fill_with_progress() {
        assert_eq!(bar(0.0), format!("[>{}]", "-".repeat(BAR - 1)));
        assert_eq!(
            bar(0.5),
            format!("[{}>{}]", "=".repeat(BAR / 2), "-".repeat(BAR / 2 - 1))
        );
        assert_eq!(bar(1.0), format!("[{}]", "=".repeat(BAR)));
        assert_eq!(bar(7.0), bar(1.0));
        assert_eq!(clock(Duration::from_millis(65_100)), "1m05.1s");
    }
}
