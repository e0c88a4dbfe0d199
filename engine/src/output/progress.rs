//! Live progress while the run goes: one line updated in place on a
//! terminal, a plain line every ten seconds otherwise (CI logs). It also
//! samples the `vus` gauge each second, as k6 does.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::executor::vu::untagged;
use crate::executor::{RunControl, ScenarioConfig, Segment};
use crate::metrics::{Builtin, Recorder};

use super::format::duration_short;

/// Runs until aborted.
pub async fn run(
    ctl: Arc<RunControl>,
    rec: Arc<Recorder>,
    total: Duration,
    max_vus: u32,
    quiet: bool,
) {
    let tty = std::io::stderr().is_terminal();
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let tags = untagged();
    let mut n = 0u64;
    loop {
        tick.tick().await;
        let p = &ctl.progress;
        let active = p.active_vus.load(Ordering::Relaxed);
        rec.record(&tags, &[(Builtin::Vus.id(), f64::from(active))]);
        n += 1;
        if quiet || (!tty && !n.is_multiple_of(10)) {
            continue;
        }
        let line = format!(
            "running ({}/{}), {active}/{max_vus} VUs, {} complete and {} interrupted iterations{}{}",
            clock(started.elapsed()),
            clock(total),
            p.completed.load(Ordering::Relaxed) + p.failed.load(Ordering::Relaxed),
            p.interrupted.load(Ordering::Relaxed),
            match p.dropped.load(Ordering::Relaxed) {
                0 => String::new(),
                n => format!(", {n} dropped"),
            },
            if ctl.stopping() { " (stopping)" } else { "" },
        );
        let mut err = std::io::stderr().lock();
        if tty {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }
}

/// `WLOAD_VUS_TRACE=FILE`: write `milliseconds active_vus` every 100 ms,
/// for checking how closely an executor follows its plan (see
/// `bench/executors.sh`). Runs until aborted.
pub async fn trace_vus(ctl: Arc<RunControl>, path: std::path::PathBuf) {
    let Ok(file) = std::fs::File::create(&path) else {
        eprintln!("WARN cannot write the VU trace to {}", path.display());
        return;
    };
    let mut out = std::io::LineWriter::new(file);
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        let active = ctl.progress.active_vus.load(Ordering::Relaxed);
        if writeln!(out, "{} {active}", started.elapsed().as_millis()).is_err() {
            return;
        }
    }
}

/// Clear the in-place line before the summary prints.
pub fn finish(quiet: bool) {
    if !quiet && std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K");
    }
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
    scenarios: &[ScenarioConfig],
    max_vus: u32,
    max_total: Duration,
    seg: &Segment,
) -> String {
    let n = scenarios.len();
    let mut out = format!("\n  execution: local\n     script: {test}\n");
    if !seg.is_full() {
        out.push_str(&format!("    segment: {seg}\n"));
    }
    out.push_str(&format!(
        "\n  scenarios: (100.00%) {n} scenario{}, {max_vus} max VUs, {} max duration (incl. graceful stop):\n",
        if n == 1 { "" } else { "s" },
        duration_short(max_total)
    ));
    for s in scenarios {
        let (what, details) = s.executor.describe();
        let mut extras = Vec::new();
        if !details.is_empty() {
            extras.push(details);
        }
        if s.exec != "default" {
            extras.push(format!("exec: {}", s.exec));
        }
        if !s.start_time.is_zero() {
            extras.push(format!("startTime: {}", duration_short(s.start_time)));
        }
        extras.push(format!("gracefulStop: {}", duration_short(s.graceful_stop)));
        out.push_str(&format!(
            "           * {}: {what} ({})\n",
            s.name,
            extras.join(", ")
        ));
    }
    out
}
