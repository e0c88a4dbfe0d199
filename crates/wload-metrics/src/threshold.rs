//! Thresholds in k6's syntax: pass/fail criteria on metrics, such as
//! `http_req_duration: ["p(95)<200"]` or, on a sub-metric,
//! `checks{check:login ok}: ["rate>0.99"]`, in the short form or the long
//! one (`{"threshold": "...", "abortOnFail": true, "delayAbortEval":
//! "10s"}`). A run whose thresholds fail exits with 99, as k6's does.

use std::time::Duration;

use serde_json::Value;

use super::{MetricDef, Sink, Snapshot};
use wload_units::duration_value;

/// The statistic a threshold tests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    Avg,
    Min,
    Max,
    Med,
    Percentile(f64),
    Count,
    Rate,
    Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

/// One threshold on one metric or sub-metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The key as written: `http_req_duration{status:200}`.
    pub key: String,
    pub metric: String,
    /// Sub-metric tag filter: every pair must match.
    pub filter: Vec<(String, String)>,
    /// The expression as written: `p(95)<200`.
    pub source: String,
    pub stat: Stat,
    pub op: Op,
    pub value: f64,
    pub abort_on_fail: bool,
    pub delay_abort_eval: Duration,
}

/// A threshold's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub ok: bool,
    /// The statistic's value, `None` when the metric had no samples.
    pub observed: Option<f64>,
}

/// Parse an options object's `thresholds`; every problem is reported.
pub fn parse_all(value: &Value, errors: &mut Vec<String>) -> Vec<Threshold> {
    let Some(map) = value.as_object() else {
        errors.push("thresholds: must be an object of metric name → list of thresholds".to_owned());
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, list) in map {
        let (metric, filter) = match parse_key(key) {
            Ok(k) => k,
            Err(e) => {
                errors.push(format!("thresholds.{key}: {e}"));
                continue;
            }
        };
        let items: Vec<&Value> = match list {
            Value::Array(items) => items.iter().collect(),
            Value::String(_) | Value::Object(_) => vec![list],
            other => {
                errors.push(format!(
                    "thresholds.{key}: must be a list of thresholds, not {other}"
                ));
                continue;
            }
        };
        for item in items {
            match parse_item(item) {
                Ok((source, stat, op, v, abort, delay)) => out.push(Threshold {
                    key: key.clone(),
                    metric: metric.clone(),
                    filter: filter.clone(),
                    source,
                    stat,
                    op,
                    value: v,
                    abort_on_fail: abort,
                    delay_abort_eval: delay,
                }),
                Err(e) => errors.push(format!("thresholds.{key}: {e}")),
            }
        }
    }
    out
}

/// `name` or `name{tag:value,tag2:value2}`.
fn parse_key(key: &str) -> Result<(String, Vec<(String, String)>), String> {
    let Some(open) = key.find('{') else {
        return Ok((key.trim().to_owned(), Vec::new()));
    };
    let inner = key[open + 1..]
        .strip_suffix('}')
        .ok_or("a sub-metric must end with '}': name{tag:value}")?;
    let mut filter = Vec::new();
    for pair in inner.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = pair
            .split_once(':')
            .ok_or_else(|| format!("invalid tag filter {pair:?}: expected tag:value"))?;
        filter.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    if filter.is_empty() {
        return Err("empty tag filter: use name{tag:value}".to_owned());
    }
    Ok((key[..open].trim().to_owned(), filter))
}

type Parsed = (String, Stat, Op, f64, bool, Duration);

fn parse_item(item: &Value) -> Result<Parsed, String> {
    match item {
        Value::String(s) => {
            let (stat, op, v) = parse_expr(s)?;
            Ok((s.clone(), stat, op, v, false, Duration::ZERO))
        }
        Value::Object(m) => {
            for k in m.keys() {
                if !["threshold", "abortOnFail", "delayAbortEval"].contains(&k.as_str()) {
                    return Err(format!(
                        "unknown key {k:?}; accepted: threshold, abortOnFail, delayAbortEval"
                    ));
                }
            }
            let s = m
                .get("threshold")
                .and_then(Value::as_str)
                .ok_or("the long form needs \"threshold\": \"p(95)<200\"")?;
            let (stat, op, v) = parse_expr(s)?;
            let abort = match m.get("abortOnFail") {
                None => false,
                Some(Value::Bool(b)) => *b,
                Some(other) => {
                    return Err(format!("abortOnFail must be true or false, not {other}"));
                }
            };
            let delay = match m.get("delayAbortEval") {
                None => Duration::ZERO,
                Some(v) => duration_value(v).map_err(|e| format!("delayAbortEval: {e}"))?,
            };
            Ok((s.to_owned(), stat, op, v, abort, delay))
        }
        other => Err(format!(
            "a threshold is a string like \"p(95)<200\" or an object, not {other}"
        )),
    }
}

/// `p(95)<200`, `avg <= 1.5`, `rate>0.99`, `count==0`.
pub fn parse_expr(expr: &str) -> Result<(Stat, Op, f64), String> {
    let bad = |why: &str| {
        format!(
            "invalid threshold {expr:?}: {why}; expected STAT OP NUMBER with STAT one of avg, min, max, med, \
             p(N), count, rate, value and OP one of <, <=, >, >=, ==, !="
        )
    };
    let s = expr.trim();
    let at = s
        .find(['<', '>', '=', '!'])
        .ok_or_else(|| bad("no comparison"))?;
    let (lhs, rest) = s.split_at(at);
    let (op, rhs) = if let Some(r) = rest.strip_prefix("<=") {
        (Op::Le, r)
    } else if let Some(r) = rest.strip_prefix(">=") {
        (Op::Ge, r)
    } else if let Some(r) = rest.strip_prefix("===").or_else(|| rest.strip_prefix("==")) {
        (Op::Eq, r)
    } else if let Some(r) = rest.strip_prefix("!=") {
        (Op::Ne, r)
    } else if let Some(r) = rest.strip_prefix('<') {
        (Op::Lt, r)
    } else if let Some(r) = rest.strip_prefix('>') {
        (Op::Gt, r)
    } else {
        return Err(bad("unknown comparison"));
    };
    let value: f64 = rhs
        .trim()
        .parse()
        .map_err(|_| bad("the right side is not a number"))?;
    let stat = match lhs.trim() {
        "avg" => Stat::Avg,
        "min" => Stat::Min,
        "max" => Stat::Max,
        "med" => Stat::Med,
        "count" => Stat::Count,
        "rate" => Stat::Rate,
        "value" => Stat::Value,
        p => {
            let q = p
                .strip_prefix("p(")
                .and_then(|r| r.strip_suffix(')'))
                .and_then(|n| n.trim().parse::<f64>().ok())
                .filter(|q| (0.0..=100.0).contains(q))
                .ok_or_else(|| bad(&format!("unknown statistic {p:?}")))?;
            Stat::Percentile(q)
        }
    };
    Ok((stat, op, value))
}

impl Threshold {
    /// Check that the statistic exists for the metric's kind.
    pub fn check_kind(&self, def: &MetricDef) -> Result<(), String> {
        use super::MetricKind::*;
        let fits = matches!(
            (def.kind, self.stat),
            (
                Trend,
                Stat::Avg | Stat::Min | Stat::Max | Stat::Med | Stat::Percentile(_)
            ) | (Counter, Stat::Count | Stat::Rate)
                | (Rate, Stat::Rate)
                | (Gauge, Stat::Value)
        );
        if fits {
            Ok(())
        } else {
            let accepted = match def.kind {
                Trend => "avg, min, max, med, p(N)",
                Counter => "count, rate",
                Rate => "rate",
                Gauge => "value",
            };
            Err(format!(
                "thresholds.{}: {:?} does not apply to {}, a {}; use {accepted}",
                self.key,
                self.source,
                def.name,
                def.kind.as_str()
            ))
        }
    }

    /// Evaluate against `snapshot` (metric `id`), with `elapsed` for
    /// counter rates.
    pub fn evaluate(&self, snapshot: &Snapshot, id: u32, elapsed: Duration) -> Verdict {
        let mut merged: Option<Sink> = None;
        for (tags, sink) in snapshot.series_of(id) {
            if self
                .filter
                .iter()
                .all(|(k, v)| tags.get(k) == Some(v.as_str()))
            {
                match &mut merged {
                    Some(m) => m.merge(sink),
                    None => merged = Some(sink.clone()),
                }
            }
        }
        let observed = merged
            .filter(|s| s.samples() > 0)
            .map(|sink| match (&sink, self.stat) {
                (Sink::Trend(t), Stat::Avg) => t.avg(),
                (Sink::Trend(t), Stat::Min) => t.min(),
                (Sink::Trend(t), Stat::Max) => t.max(),
                (Sink::Trend(t), Stat::Med) => t.median(),
                (Sink::Trend(t), Stat::Percentile(q)) => t.percentile(q),
                (Sink::Counter { sum, .. }, Stat::Count) => *sum,
                (Sink::Counter { sum, .. }, Stat::Rate) => {
                    let secs = elapsed.as_secs_f64();
                    if secs > 0.0 { sum / secs } else { 0.0 }
                }
                (Sink::Rate { trues, total }, Stat::Rate) => *trues as f64 / *total as f64,
                (Sink::Gauge { last, .. }, Stat::Value) => *last,
                _ => f64::NAN,
            });
        match observed {
            // No samples: nothing crossed the threshold (as in k6).
            None => Verdict {
                ok: true,
                observed: None,
            },
            Some(v) => Verdict {
                ok: self.op.holds(v, self.value),
                observed: Some(v),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_form_parses() {
        assert_eq!(
            parse_expr("p(95)<200").unwrap(),
            (Stat::Percentile(95.0), Op::Lt, 200.0)
        );
        assert_eq!(
            parse_expr("p(99.9)<=500").unwrap(),
            (Stat::Percentile(99.9), Op::Le, 500.0)
        );
        assert_eq!(parse_expr(" avg > 1.5 ").unwrap(), (Stat::Avg, Op::Gt, 1.5));
        assert_eq!(parse_expr("med>=3").unwrap(), (Stat::Med, Op::Ge, 3.0));
        assert_eq!(parse_expr("min==0").unwrap(), (Stat::Min, Op::Eq, 0.0));
        assert_eq!(parse_expr("max===0").unwrap(), (Stat::Max, Op::Eq, 0.0));
        assert_eq!(parse_expr("count!=0").unwrap(), (Stat::Count, Op::Ne, 0.0));
        assert_eq!(parse_expr("rate<0.01").unwrap(), (Stat::Rate, Op::Lt, 0.01));
        assert_eq!(parse_expr("value<10").unwrap(), (Stat::Value, Op::Lt, 10.0));
        let mut errors = Vec::new();
        let t = parse_all(
            &json!({
                "http_req_duration{status:200}": ["p(95)<200", {"threshold": "avg<100", "abortOnFail": true, "delayAbortEval": "10s"}],
                "checks{check:login ok}": "rate>0.99"
            }),
            &mut errors,
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(t.len(), 3);
        let long = t.iter().find(|t| t.source == "avg<100").unwrap();
        assert!(long.abort_on_fail);
        assert_eq!(long.delay_abort_eval, Duration::from_secs(10));
        assert_eq!(long.filter, vec![("status".to_owned(), "200".to_owned())]);
        let checks = t.iter().find(|t| t.metric == "checks").unwrap();
        assert_eq!(
            checks.filter,
            vec![("check".to_owned(), "login ok".to_owned())]
        );
    }

    #[test]
    fn invalid_forms_are_refused_with_the_reason() {
        for (expr, why) in [
            ("p95<200", "unknown statistic"),
            ("p(101)<1", "unknown statistic"),
            ("avg 200", "no comparison"),
            ("avg<fast", "not a number"),
            ("avg=<3", "unknown comparison"),
            ("stddev<1", "unknown statistic"),
        ] {
            let err = parse_expr(expr).unwrap_err();
            assert!(err.contains(why), "{expr}: {err}");
        }
        let mut errors = Vec::new();
        parse_all(
            &json!({
                "a{status": ["avg<1"],
                "b{}": ["avg<1"],
                "c": [{"threshold": "avg<1", "abortOnFail": "yes"}],
                "d": [{"threshold": "avg<1", "delayAbortEval": "soon"}],
                "e": [{"treshold": "avg<1"}],
                "f": 5
            }),
            &mut errors,
        );
        assert_eq!(errors.len(), 6, "{errors:#?}");
    }
}

/// A threshold with its verdict, for the outputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub threshold: Threshold,
    pub verdict: Verdict,
    /// Why it failed without a value (a metric never defined).
    pub note: Option<String>,
}

/// Evaluate every threshold against a snapshot.
pub fn evaluate_all(
    thresholds: &[Threshold],
    snapshot: &Snapshot,
    registry: &super::Registry,
    elapsed: Duration,
) -> Vec<Outcome> {
    thresholds
        .iter()
        .map(|t| match registry.id_of(&t.metric) {
            Some(id) => Outcome {
                threshold: t.clone(),
                verdict: t.evaluate(snapshot, id, elapsed),
                note: None,
            },
            // A name no metric ever had is almost certainly a typo: fail.
            None => Outcome {
                threshold: t.clone(),
                verdict: Verdict {
                    ok: false,
                    observed: None,
                },
                note: Some(format!("no metric named {:?} was defined", t.metric)),
            },
        })
        .collect()
}

/// Problems with thresholds on metrics known before the run (built-ins):
/// a statistic that does not apply to the metric's type.
pub fn check_known(thresholds: &[Threshold], registry: &super::Registry) -> Vec<String> {
    thresholds
        .iter()
        .filter_map(|t| {
            let def = registry.get(registry.id_of(&t.metric)?)?;
            t.check_kind(&def).err()
        })
        .collect()
}
