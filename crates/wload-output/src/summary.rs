//! The end-of-test summary for the terminal, in k6's layout: thresholds,
//! then checks (under their groups), then HTTP, execution, network and
//! custom metrics, with dotted name columns.

use std::fmt::Write;

use super::groups::GroupTotals;
use super::{Report, trend_stat};
use wload_metrics::threshold::Stat;
use wload_metrics::{MetricDef, MetricKind, Sink, ValueKind};
use wload_units::format::{bytes, millis, number};

/// Which metrics a section shows.
type Belongs = fn(&MetricDef) -> bool;

/// Sections of the summary, in k6's order: HTTP, execution, network, then
/// the test's own metrics.
const SECTIONS: [(&str, Belongs); 4] = [
    ("HTTP", |d| d.builtin && d.name.starts_with("http_")),
    ("EXECUTION", |d| {
        d.builtin
            && (d.name.starts_with("iteration")
                || d.name.starts_with("vus")
                || d.name == "dropped_iterations"
                || d.name == "group_duration")
    }),
    ("NETWORK", |d| d.builtin && d.name.starts_with("data_")),
    ("CUSTOM", |d| !d.builtin),
];

/// Checks of `group` at `indent`, then its groups (`█ name`) below them.
fn group_checks(out: &mut String, group: &GroupTotals, indent: usize) {
    let pad = " ".repeat(indent);
    for c in &group.checks {
        if c.fails == 0 {
            let _ = writeln!(out, "{pad}✓ {}", c.name);
        } else {
            let n = c.passes + c.fails;
            let _ = writeln!(out, "{pad}✗ {}", c.name);
            let _ = writeln!(
                out,
                "{pad}  ↳  {}% — ✓ {} / ✗ {}",
                number(c.passes as f64 * 100.0 / n as f64, 2),
                c.passes,
                c.fails
            );
        }
    }
    for g in &group.groups {
        if !out.ends_with("\n\n") {
            out.push('\n');
        }
        let _ = writeln!(out, "{pad}█ {}\n", g.name);
        group_checks(out, g, indent + 2);
    }
}

/// Render the summary.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let recorded = report.recorded();
    let width = recorded
        .iter()
        .map(|(d, _)| d.name.len())
        .chain(["checks_succeeded".len()])
        .max()
        .unwrap_or(20)
        + 6;

    if !report.thresholds.is_empty() {
        let _ = writeln!(out, "\n  █ THRESHOLDS\n");
        let mut last_key = "";
        for o in &report.thresholds {
            let t = &o.threshold;
            if t.key != last_key {
                if !last_key.is_empty() {
                    out.push('\n');
                }
                let _ = writeln!(out, "    {}", t.key);
                last_key = &t.key;
            }
            let mark = if o.verdict.ok { "✓" } else { "✗" };
            let detail = match (&o.note, o.verdict.observed) {
                (Some(note), _) => note.clone(),
                (None, None) => "no samples".to_owned(),
                (None, Some(v)) => {
                    let def = report.metrics.iter().find(|d| d.name == t.metric);
                    let shown = match def.map(|d| (d.kind, d.value)) {
                        Some((MetricKind::Rate, _)) => format!("{:.2}%", v * 100.0),
                        Some((_, ValueKind::Time))
                            if !matches!(t.stat, Stat::Count | Stat::Rate) =>
                        {
                            millis(v)
                        }
                        _ => number(v, 4),
                    };
                    format!("{}={shown}", stat_name(t.stat))
                }
            };
            let _ = writeln!(out, "    {mark} '{}' {detail}", t.source);
        }
    }

    let _ = writeln!(out, "\n  █ TOTAL RESULTS\n");

    let groups = report.groups();
    let (passes, fails) = groups.totals();
    if passes + fails > 0 {
        let total = passes + fails;
        let pct = |n: u64| n as f64 * 100.0 / total as f64;
        line(
            &mut out,
            width,
            "checks_total",
            &format!(
                "{total:<7} {}/s",
                number(report.per_second(total as f64), 2)
            ),
        );
        line(
            &mut out,
            width,
            "checks_succeeded",
            &format!(
                "{:<7} {passes} out of {total}",
                format!("{:.2}%", pct(passes))
            ),
        );
        line(
            &mut out,
            width,
            "checks_failed",
            &format!(
                "{:<7} {fails} out of {total}",
                format!("{:.2}%", pct(fails))
            ),
        );
        out.push('\n');
        group_checks(&mut out, &groups, 4);
        out.push('\n');
    }

    for (title, belongs) in SECTIONS {
        let rows: Vec<_> = recorded
            .iter()
            .filter(|(d, _)| belongs(d) && d.name != "checks")
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "    {title}");
        for (def, sink) in rows {
            line(&mut out, width, &def.name, &value(report, def, sink));
        }
        out.push('\n');
    }

    let (failures, other) = &report.failures;
    if !failures.is_empty() || *other > 0 || report.interrupted > 0 {
        let _ = writeln!(out, "    ITERATION ERRORS");
        for (message, count) in failures {
            let _ = writeln!(out, "    {count:>8} × {message}");
        }
        if *other > 0 {
            let _ = writeln!(out, "    {other:>8} × (other messages, not kept)");
        }
        if report.interrupted > 0 {
            let _ = writeln!(
                out,
                "    {:>8} × interrupted by the end of the run",
                report.interrupted
            );
        }
        out.push('\n');
    }
    out
}

fn stat_name(stat: Stat) -> String {
    match stat {
        Stat::Avg => "avg".into(),
        Stat::Min => "min".into(),
        Stat::Max => "max".into(),
        Stat::Med => "med".into(),
        Stat::Percentile(q) => format!("p({})", number(q, 3)),
        Stat::Count => "count".into(),
        Stat::Rate => "rate".into(),
        Stat::Value => "value".into(),
    }
}

fn line(out: &mut String, width: usize, name: &str, value: &str) {
    let dots = width.saturating_sub(name.len());
    let _ = writeln!(out, "    {name}{}: {value}", ".".repeat(dots));
}

/// The value column of one metric.
fn value(report: &Report, def: &MetricDef, sink: &Sink) -> String {
    let fmt = |v: f64| match def.value {
        ValueKind::Time => millis(v),
        ValueKind::Data => bytes(v),
        ValueKind::Default => number(v, 2),
    };
    match sink {
        Sink::Counter { sum, .. } => {
            let rate = report.per_second(*sum);
            match def.value {
                ValueKind::Data => format!("{:<7} {}/s", bytes(*sum), bytes(rate)),
                _ => format!("{:<7} {}/s", fmt(*sum), number(rate, 2)),
            }
        }
        Sink::Gauge { last, min, max, .. } => {
            format!("{:<7} min={:<7} max={}", fmt(*last), fmt(*min), fmt(*max))
        }
        Sink::Rate { trues, total } => {
            let pct = if *total == 0 {
                0.0
            } else {
                *trues as f64 * 100.0 / *total as f64
            };
            format!("{:<7} {trues} out of {total}", format!("{pct:.2}%"))
        }
        Sink::Trend(t) => report
            .trend_stats
            .iter()
            .map(|s| match s.as_str() {
                "count" => format!("{s}={:<9}", t.count),
                _ => format!("{s}={:<9}", fmt(trend_stat(t, s))),
            })
            .collect::<Vec<_>>()
            .join(" ")
            .trim_end()
            .to_owned(),
    }
}
