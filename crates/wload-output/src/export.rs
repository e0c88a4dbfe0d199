//! `--summary-export FILE`: the JSON layout of k6's `--summary-export`, so
//! that tooling reading k6's file reads ours: `root_group` with the checks
//! and nested groups,
//! and `metrics.<name>` with count/rate (counters), value/min/max (gauges),
//! passes/fails/value (rates) or avg/min/med/max/p(N) (trends, in ms).

use md5::{Digest, Md5};
use serde_json::{Map, Value, json};

use super::groups::GroupTotals;
use super::{Report, trend_stat};
use wload_metrics::Sink;

/// k6 identifies groups and checks by the MD5 of their path.
fn id(path: &str) -> String {
    Md5::digest(path.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A group as k6 exports it: its checks (with paths `<group path>::<check>`)
/// and its groups, recursively.
fn group_json(group: &GroupTotals) -> Value {
    let checks: Vec<Value> = group
        .checks
        .iter()
        .map(|c| {
            let path = format!("{}::{}", group.path, c.name);
            json!({
                "name": c.name,
                "path": path,
                "id": id(&path),
                "passes": c.passes,
                "fails": c.fails,
            })
        })
        .collect();
    json!({
        "name": group.name,
        "path": group.path,
        "id": id(&group.path),
        "groups": group.groups.iter().map(group_json).collect::<Vec<_>>(),
        "checks": checks,
    })
}

/// Build the export document.
pub fn to_json(report: &Report) -> Value {
    let mut metrics = Map::new();
    for (def, sink) in report.recorded() {
        let value = match &sink {
            Sink::Counter { sum, .. } => json!({
                "count": sum,
                "rate": report.per_second(*sum),
            }),
            Sink::Gauge { last, min, max, .. } => json!({
                "value": last,
                "min": min,
                "max": max,
            }),
            Sink::Rate { trues, total } => json!({
                "passes": trues,
                "fails": total - trues,
                "value": if *total == 0 { 0.0 } else { *trues as f64 / *total as f64 },
            }),
            Sink::Trend(t) => {
                let mut m = Map::new();
                for stat in &report.trend_stats {
                    m.insert(stat.clone(), json!(trend_stat(t, stat)));
                }
                Value::Object(m)
            }
        };
        metrics.insert(def.name.clone(), value);
    }
    // Thresholds go under their metric: `"thresholds": {"p(95)<200":
    // {"ok": true}}`; sub-metric thresholds under `name{tag:value}`.
    for o in &report.thresholds {
        let entry = metrics
            .entry(o.threshold.key.clone())
            .or_insert_with(|| json!({}));
        if let Some(obj) = entry.as_object_mut() {
            let th = obj.entry("thresholds").or_insert_with(|| json!({}));
            th[o.threshold.source.as_str()] = json!({ "ok": o.verdict.ok });
        }
    }

    json!({
        "root_group": group_json(&report.groups()),
        "metrics": metrics,
        "state": {
            "testRunDurationMs": report.elapsed.as_secs_f64() * 1000.0,
        },
    })
}
