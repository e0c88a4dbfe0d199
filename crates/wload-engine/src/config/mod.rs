//! Options: k6's options object, from four sources merged with k6's
//! precedence — command-line flags > `WLOAD_*` environment variables >
//! `--config FILE` > the test's own `options()` — and turned into
//! scenarios.
//!
//! Every source is first put in the one form k6 users know (the JSON of
//! `export const options`), so a k6 options object is accepted as it is.
//! Keys wload does not run are reported by name, never ignored silently;
//! invalid ones stop the run before any VU starts, all reported at once.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use wload_http::ClientConfig;
use wload_http::egress::{HostPattern, IpNet};
use wload_metrics::threshold::{self, Threshold};
use wload_units::{duration_value, size_value};

use crate::executor::{ScenarioConfig, Segment};
use crate::run::{ExitError, exit};

/// The shortcut options that describe a default scenario.
const SHORTCUTS: [&str; 4] = ["vus", "duration", "iterations", "stages"];

/// k6's default setup and teardown timeouts.
const DEFAULT_SETUP_TIMEOUT: Duration = Duration::from_secs(60);

/// k6's HTTP options, where given (`None`: the client's default).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HttpOptions {
    pub discard_response_bodies: Option<bool>,
    pub insecure_skip_tls_verify: Option<bool>,
    pub no_connection_reuse: Option<bool>,
    pub no_vu_connection_reuse: Option<bool>,
    pub batch: Option<u32>,
    pub batch_per_host: Option<u32>,
    pub max_redirects: Option<u32>,
    pub user_agent: Option<String>,
    /// `maxResponseBodySize`, in bytes (wload's own; k6 has no limit).
    pub max_response_body_size: Option<u64>,
    /// k6's `blacklistIPs`: networks no request may connect to.
    pub blacklist_ips: Vec<IpNet>,
    /// k6's `blockHostnames`: names no request may look up.
    pub block_hostnames: Vec<HostPattern>,
}

impl HttpOptions {
    fn parse(options: &Map<String, Value>, errors: &mut Vec<String>) -> HttpOptions {
        let flag = |key: &str, errors: &mut Vec<String>| {
            options.get(key).and_then(|v| match v.as_bool() {
                Some(b) => Some(b),
                None => {
                    errors.push(format!("{key}: must be true or false, not {v}"));
                    None
                }
            })
        };
        let count = |key: &str, min: u64, errors: &mut Vec<String>| {
            options.get(key).and_then(|v| {
                match v
                    .as_u64()
                    .filter(|n| *n >= min)
                    .and_then(|n| u32::try_from(n).ok())
                {
                    Some(n) => Some(n),
                    None => {
                        errors.push(format!(
                            "{key}: must be a whole number of at least {min}, not {v}"
                        ));
                        None
                    }
                }
            })
        };
        HttpOptions {
            discard_response_bodies: flag("discardResponseBodies", errors),
            insecure_skip_tls_verify: flag("insecureSkipTLSVerify", errors),
            no_connection_reuse: flag("noConnectionReuse", errors),
            no_vu_connection_reuse: flag("noVUConnectionReuse", errors),
            batch: count("batch", 1, errors),
            batch_per_host: count("batchPerHost", 1, errors),
            max_redirects: count("maxRedirects", 0, errors),
            max_response_body_size: options.get("maxResponseBodySize").and_then(
                |v| match size_value(v) {
                    Ok(0) => {
                        errors.push(
                            "maxResponseBodySize: must be at least 1 byte (to keep no body, \
                             use discardResponseBodies)"
                                .to_owned(),
                        );
                        None
                    }
                    Ok(n) => Some(n),
                    Err(e) => {
                        errors.push(format!("maxResponseBodySize: {e}"));
                        None
                    }
                },
            ),
            user_agent: options.get("userAgent").and_then(|v| match v.as_str() {
                Some(s) => Some(s.to_owned()),
                None => {
                    errors.push(format!("userAgent: must be a string, not {v}"));
                    None
                }
            }),
            blacklist_ips: list(
                options,
                "blacklistIPs",
                IpNet::parse,
                r#"["10.0.0.0/8", "192.168.0.0/16"]"#,
                errors,
            ),
            block_hostnames: list(
                options,
                "blockHostnames",
                HostPattern::parse,
                r#"["*.example.com", "api.internal"]"#,
                errors,
            ),
        }
    }

    /// Apply the given options over `config`.
    pub fn apply(&self, config: &mut ClientConfig) {
        if let Some(v) = self.discard_response_bodies {
            config.discard_bodies = v;
        }
        if let Some(v) = self.insecure_skip_tls_verify {
            config.tls.insecure_skip_verify = v;
        }
        if let Some(v) = self.no_connection_reuse {
            config.no_connection_reuse = v;
        }
        if let Some(v) = self.no_vu_connection_reuse {
            config.no_vu_connection_reuse = v;
        }
        if let Some(v) = self.batch {
            config.batch = v as usize;
        }
        if let Some(v) = self.batch_per_host {
            config.batch_per_host = v as usize;
        }
        if let Some(v) = self.max_redirects {
            config.max_redirects = v;
        }
        if let Some(v) = &self.user_agent {
            config.user_agent = v.clone();
        }
        if let Some(v) = self.max_response_body_size {
            config.max_body_size = v;
        }
        // Over the policy the run started with (a tenant's): these only
        // add denials, so a test can narrow that policy, never widen it.
        if !self.blacklist_ips.is_empty() || !self.block_hostnames.is_empty() {
            let mut policy = config.egress.as_deref().cloned().unwrap_or_default();
            policy.narrow(&self.blacklist_ips, &self.block_hostnames);
            config.egress = Some(Arc::new(policy));
        }
    }
}

/// A list option of strings, each read by `parse`; every bad entry is
/// named by its index.
fn list<T>(
    options: &Map<String, Value>,
    key: &str,
    parse: fn(&str) -> Result<T, String>,
    example: &str,
    errors: &mut Vec<String>,
) -> Vec<T> {
    match options.get(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, v)| match v.as_str() {
                Some(s) => parse(s.trim())
                    .map_err(|e| errors.push(format!("{key}[{i}]: {e}")))
                    .ok(),
                None => {
                    errors.push(format!("{key}[{i}]: must be a string, not {v}"));
                    None
                }
            })
            .collect(),
        Some(other) => {
            errors.push(format!("{key}: must be a list like {example}, not {other}"));
            Vec::new()
        }
    }
}

/// Resolved options of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub scenarios: Vec<ScenarioConfig>,
    pub http: HttpOptions,
    pub thresholds: Vec<Threshold>,
    /// `summaryTrendStats`: the trend statistics of the summary.
    pub trend_stats: Vec<String>,
    pub setup_timeout: Duration,
    pub teardown_timeout: Duration,
    /// Tags on every sample (`tags`, `--tag`).
    pub tags: BTreeMap<String, String>,
    /// `rps`: requests per second for the whole run (`None`: no limit;
    /// k6's 0 means none too).
    pub rps: Option<f64>,
    /// `paused`: start paused, waiting for a resume (k6's `--paused`).
    pub paused: bool,
    /// Keys given but not supported by this version, each with a reason.
    pub unsupported: Vec<String>,
}

/// The options set by `WLOAD_*` environment variables, as a k6 options
/// object: `WLOAD_VUS`, `WLOAD_DURATION`, `WLOAD_ITERATIONS`,
/// `WLOAD_STAGES` (`30s:10,1m:0`), `WLOAD_MAX_RESPONSE_BODY_SIZE`,
/// `WLOAD_BLACKLIST_IPS` and `WLOAD_BLOCK_HOSTNAMES` (comma-separated). Only their syntax is checked here,
/// every problem at once; their values are checked with the other
/// options' (so `WLOAD_DURATION=1e300` is refused by [`resolve`]).
pub fn env_layer(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Map<String, Value>, Vec<String>> {
    let mut out = Map::new();
    let mut errors = Vec::new();
    for (key, value) in vars {
        let value = value.trim().to_owned();
        match key.as_str() {
            "WLOAD_VUS" | "WLOAD_ITERATIONS" => match value.parse::<u64>() {
                Ok(n) => {
                    let option = if key == "WLOAD_VUS" {
                        "vus"
                    } else {
                        "iterations"
                    };
                    out.insert(option.into(), json!(n));
                }
                Err(_) => errors.push(format!("{key}={value:?} is not a whole number")),
            },
            "WLOAD_DURATION" => {
                out.insert("duration".into(), json!(value));
            }
            "WLOAD_MAX_RESPONSE_BODY_SIZE" => {
                out.insert("maxResponseBodySize".into(), json!(value));
            }
            // Comma-separated, as k6's K6_BLACKLIST_IPS and
            // K6_BLOCK_HOSTNAMES; each entry is checked with the options.
            "WLOAD_BLACKLIST_IPS" | "WLOAD_BLOCK_HOSTNAMES" => {
                let option = if key == "WLOAD_BLACKLIST_IPS" {
                    "blacklistIPs"
                } else {
                    "blockHostnames"
                };
                let entries: Vec<&str> = value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect();
                out.insert(option.into(), json!(entries));
            }
            // A number, checked with the other options' values.
            "WLOAD_RPS" => {
                out.insert("rps".into(), number_or_text(&value));
            }
            "WLOAD_PAUSED" => match value.as_str() {
                "true" | "1" => {
                    out.insert("paused".into(), json!(true));
                }
                "false" | "0" | "" => {
                    out.insert("paused".into(), json!(false));
                }
                _ => errors.push(format!("{key}={value:?} is not true or false")),
            },
            "WLOAD_STAGES" => {
                match value
                    .split(',')
                    .map(stage_arg)
                    .collect::<Result<Vec<_>, _>>()
                {
                    Ok(stages) => {
                        out.insert("stages".into(), Value::Array(stages));
                    }
                    Err(e) => errors.push(format!("WLOAD_STAGES: {e}")),
                }
            }
            _ => {}
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// A flag's or variable's text as an options value: the number it spells
/// (a whole one as such, so that a message shows it as written), else the
/// text itself, for the option's check to name.
pub fn number_or_text(text: &str) -> Value {
    let t = text.trim();
    if let Ok(n) = t.parse::<i64>() {
        return json!(n);
    }
    match t.parse::<f64>() {
        Ok(n) if n.is_finite() => json!(n),
        _ => json!(text),
    }
}

/// `--stage 30s:100`: a ramping-vus stage. Only the syntax is checked
/// here; the duration is checked with the other options', so that a bad
/// one is an invalid option (exit code 104) named with all the others.
pub fn stage_arg(text: &str) -> Result<Value, String> {
    let (duration, target) = text.split_once(':').ok_or_else(|| {
        format!("invalid stage {text:?}: expected DURATION:TARGET such as 30s:100")
    })?;
    let target: u32 = target
        .trim()
        .parse()
        .map_err(|_| format!("invalid stage {text:?}: the target must be a whole number of VUs"))?;
    Ok(json!({ "duration": duration.trim(), "target": target }))
}

/// `--config FILE`: a k6 options object in JSON, or TOML for `.toml`.
/// A file that is not one is invalid options (exit code 104), as in k6.
pub fn file_layer(path: &Path) -> Result<Map<String, Value>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the config file {}", path.display()))?;
    let invalid = |message: String| ExitError {
        code: exit::INVALID_CONFIG,
        message,
    };
    let value: Value = if path.extension().is_some_and(|e| e == "toml") {
        let t: toml::Value = toml::from_str(&text)
            .map_err(|e| invalid(format!("{} is not valid TOML: {e}", path.display())))?;
        serde_json::to_value(t).context("cannot convert TOML options")?
    } else {
        // Numbers beyond f64 (1e400) are refused here, by serde_json.
        serde_json::from_str(&text)
            .map_err(|e| invalid(format!("{} is not valid JSON: {e}", path.display())))?
    };
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(invalid(format!(
            "{} must hold an options object like {{\"vus\": 10, \"duration\": \"30s\"}}",
            path.display()
        ))
        .into()),
    }
}

/// The test's `options()` JSON ("" for none).
pub fn test_layer(json: &str) -> Result<Map<String, Value>> {
    if json.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str(json).context("the test's options() is not valid JSON")? {
        Value::Object(map) => Ok(map),
        _ => bail!(
            "the test's options() must be a JSON object like {{\"vus\": 10, \"duration\": \"30s\"}}"
        ),
    }
}

/// Merge layers, lowest precedence first, key by key — except that the
/// shape of the load comes whole from the highest layer that gives one: a
/// layer that sets `scenarios` replaces the shortcuts of the layers below
/// it, and one that sets `duration`, `iterations` or `stages` replaces
/// their `scenarios` and those three (so `--stage` on the command line
/// overrides a test's `duration`). `vus` alone only sets the VU count.
pub fn merge(layers: &[&Map<String, Value>]) -> Map<String, Value> {
    let mut out = Map::new();
    for layer in layers {
        if layer.contains_key("scenarios") {
            for k in SHORTCUTS {
                out.remove(k);
            }
        }
        if SHORTCUTS[1..].iter().any(|k| layer.contains_key(*k)) {
            out.remove("scenarios");
            for k in &SHORTCUTS[1..] {
                out.remove(*k);
            }
        }
        for (k, v) in layer.iter() {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// Turn a merged options object into scenarios and run settings.
pub fn resolve(options: &Map<String, Value>) -> Result<Options, Vec<String>> {
    let mut errors = Vec::new();
    let mut unsupported = Vec::new();
    let mut scenarios = Vec::new();
    if let Some(value) = options.get("scenarios") {
        for k in SHORTCUTS[1..].iter().filter(|k| options.contains_key(**k)) {
            errors.push(format!(
                "{k}: cannot be combined with scenarios in the same options; use one or the other"
            ));
        }
        if options.contains_key("vus") {
            unsupported.push("vus (scenarios set their own VUs)".to_owned());
        }
        match value.as_object() {
            Some(map) if !map.is_empty() => {
                for (name, scenario) in map {
                    if let Some(s) = ScenarioConfig::parse(name, scenario, &mut errors) {
                        scenarios.push(s);
                    }
                }
            }
            _ => errors.push(
                "scenarios: must be an object of named scenarios, each with an \"executor\""
                    .to_owned(),
            ),
        }
    } else if let Some(s) = default_scenario(options, &mut errors) {
        scenarios.push(s);
    }
    // The run counts VUs in a u32, one more for the probe instance: a
    // larger total would wrap around instead of being refused.
    let total_vus: u64 = scenarios
        .iter()
        .map(|s| u64::from(s.executor.max_vus(&Segment::FULL)))
        .sum();
    if total_vus >= u64::from(u32::MAX) {
        errors.push(format!(
            "scenarios: {total_vus} VUs in all, more than the maximum of {}",
            u32::MAX - 1
        ));
    }

    let timeout = |key: &str, errors: &mut Vec<String>| match options.get(key) {
        None => DEFAULT_SETUP_TIMEOUT,
        Some(v) => duration_value(v).unwrap_or_else(|e| {
            errors.push(format!("{key}: {e}"));
            DEFAULT_SETUP_TIMEOUT
        }),
    };
    let setup_timeout = timeout("setupTimeout", &mut errors);
    let teardown_timeout = timeout("teardownTimeout", &mut errors);

    let mut tags = BTreeMap::new();
    match options.get("tags") {
        None => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                match v.as_str() {
                    Some(s) => {
                        tags.insert(k.clone(), s.to_owned());
                    }
                    None => errors.push(format!("tags.{k}: must be a string")),
                }
            }
        }
        Some(other) => errors.push(format!("tags: must be an object of strings, not {other}")),
    }

    let http = HttpOptions::parse(options, &mut errors);
    let rps = match options.get("rps").filter(|v| !v.is_null()) {
        None => None,
        Some(v) => match v.as_f64() {
            Some(0.0) => None,
            Some(n) if n > 0.0 && n <= crate::rate::MAX_RPS => Some(n),
            _ => {
                errors.push(format!(
                    "rps: must be a number of requests per second from 0 (no limit) to 1e9, not {v}"
                ));
                None
            }
        },
    };
    let paused = match options.get("paused").filter(|v| !v.is_null()) {
        None => false,
        Some(v) => v.as_bool().unwrap_or_else(|| {
            errors.push(format!("paused: must be true or false, not {v}"));
            false
        }),
    };
    let thresholds = options
        .get("thresholds")
        .map(|t| threshold::parse_all(t, &mut errors))
        .unwrap_or_default();
    let trend_stats = match options.get("summaryTrendStats") {
        None => wload_output::default_trend_stats(),
        Some(Value::Array(items)) => {
            let list: Vec<String> = items
                .iter()
                .map(|v| v.as_str().unwrap_or("").to_owned())
                .collect();
            wload_output::parse_trend_stats(&list).unwrap_or_else(|e| {
                errors.push(format!("summaryTrendStats: {e}"));
                wload_output::default_trend_stats()
            })
        }
        Some(other) => {
            errors.push(format!(
                "summaryTrendStats: must be a list like [\"avg\", \"p(95)\"], not {other}"
            ));
            wload_output::default_trend_stats()
        }
    };
    const KNOWN: [&str; 23] = [
        "summaryTrendStats",
        "thresholds",
        "scenarios",
        "vus",
        "duration",
        "iterations",
        "stages",
        "setupTimeout",
        "teardownTimeout",
        "tags",
        "discardResponseBodies",
        "insecureSkipTLSVerify",
        "noConnectionReuse",
        "noVUConnectionReuse",
        "batch",
        "batchPerHost",
        "maxRedirects",
        "userAgent",
        "maxResponseBodySize",
        "blacklistIPs",
        "blockHostnames",
        "rps",
        "paused",
    ];
    for key in options.keys().filter(|k| !KNOWN.contains(&k.as_str())) {
        unsupported.push(key.clone());
    }

    if errors.is_empty() {
        Ok(Options {
            scenarios,
            http,
            thresholds,
            trend_stats,
            setup_timeout,
            teardown_timeout,
            tags,
            rps,
            paused,
            unsupported,
        })
    } else {
        Err(errors)
    }
}

/// The `default` scenario the shortcuts describe, as k6 derives it:
/// `iterations` → shared-iterations (with `duration` as its maxDuration),
/// `stages` → ramping-vus, `duration` → constant-vus, none → each VU runs
/// one iteration.
fn default_scenario(
    options: &Map<String, Value>,
    errors: &mut Vec<String>,
) -> Option<ScenarioConfig> {
    let get = |k: &str| options.get(k).filter(|v| !v.is_null()).cloned();
    let vus = get("vus").unwrap_or(json!(1));
    let scenario = match (get("iterations"), get("stages"), get("duration")) {
        (Some(_), Some(_), _) | (None, Some(_), Some(_)) => {
            errors.push(
                "stages: cannot be combined with duration or iterations; use one of them"
                    .to_owned(),
            );
            return None;
        }
        (Some(iterations), None, duration) => {
            let mut s =
                json!({"executor": "shared-iterations", "vus": vus, "iterations": iterations});
            if let Some(d) = duration {
                s["maxDuration"] = d;
            }
            s
        }
        (None, Some(stages), None) => {
            json!({"executor": "ramping-vus", "startVUs": vus, "stages": stages})
        }
        (None, None, Some(duration)) => {
            json!({"executor": "constant-vus", "vus": vus, "duration": duration})
        }
        (None, None, None) => {
            json!({"executor": "shared-iterations", "vus": vus, "iterations": vus})
        }
    };
    // Errors then name the options the user set, not a scenario.
    let mut scenario_errors = Vec::new();
    let parsed = ScenarioConfig::parse("default", &scenario, &mut scenario_errors);
    let renamed = |e: String| {
        e.replacen("scenarios.default.startVUs", "vus", 1)
            .replacen("scenarios.default.maxDuration", "duration", 1)
            .replacen("scenarios.default.", "", 1)
    };
    errors.extend(scenario_errors.into_iter().map(renamed));
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::ExecutorConfig;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn precedence_is_cli_env_file_test() {
        let test = obj(json!({"vus": 1, "duration": "1s", "tags": {"from": "test"}}));
        let file = obj(json!({"vus": 2, "tags": {"from": "file"}}));
        let env = obj(json!({"vus": 3}));
        let cli = obj(json!({"duration": "4s"}));
        let merged = merge(&[&test, &file, &env, &cli]);
        let o = resolve(&merged).unwrap();
        assert_eq!(o.tags["from"], "file");
        match &o.scenarios[0].executor {
            ExecutorConfig::ConstantVus(e) => {
                assert_eq!(e.vus, 3);
                assert_eq!(e.duration, Duration::from_secs(4));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn shortcuts_above_replace_scenarios_below_and_vice_versa() {
        let test = obj(json!({"scenarios": {"a": {"executor": "constant-vus", "duration": "5s"}}}));
        let cli = obj(json!({"iterations": 10}));
        let o = resolve(&merge(&[&test, &cli])).unwrap();
        assert_eq!(o.scenarios.len(), 1);
        assert_eq!(o.scenarios[0].name, "default");
        assert!(matches!(
            o.scenarios[0].executor,
            ExecutorConfig::SharedIterations(_)
        ));

        let test = obj(json!({"vus": 5, "duration": "5s"}));
        let file = obj(
            json!({"scenarios": {"b": {"executor": "per-vu-iterations", "vus": 2, "iterations": 3}}}),
        );
        let o = resolve(&merge(&[&test, &file])).unwrap();
        assert_eq!(o.scenarios[0].name, "b");
        assert!(o.unsupported.is_empty(), "{:?}", o.unsupported);
    }

    #[test]
    fn a_higher_layer_gives_the_whole_shape() {
        let test = obj(json!({"vus": 10, "duration": "10s"}));
        let cli = obj(json!({"stages": [{"duration": "1s", "target": 3}]}));
        let o = resolve(&merge(&[&test, &cli])).unwrap();
        assert!(
            matches!(&o.scenarios[0].executor, ExecutorConfig::RampingVus(e) if e.start_vus == 10)
        );
        let cli = obj(json!({"iterations": 5, "vus": 1}));
        let o = resolve(&merge(&[&test, &cli])).unwrap();
        assert!(matches!(
            &o.scenarios[0].executor,
            ExecutorConfig::SharedIterations(e) if e.max_duration == crate::executor::shared_iterations::DEFAULT_MAX_DURATION
        ));
    }

    #[test]
    fn shortcuts_derive_k6s_default_scenario() {
        let kind = |v: Value| resolve(&obj(v)).unwrap().scenarios.remove(0).executor;
        assert!(
            matches!(kind(json!({})), ExecutorConfig::SharedIterations(e) if e.vus == 1 && e.iterations == 1)
        );
        assert!(
            matches!(kind(json!({"vus": 4})), ExecutorConfig::SharedIterations(e) if e.iterations == 4)
        );
        assert!(matches!(
            kind(json!({"iterations": 9, "duration": "2s"})),
            ExecutorConfig::SharedIterations(e) if e.max_duration == Duration::from_secs(2)
        ));
        assert!(matches!(
            kind(json!({"vus": 2, "stages": [{"duration": "10s", "target": 5}]})),
            ExecutorConfig::RampingVus(e) if e.start_vus == 2
        ));
    }

    #[test]
    fn bad_configurations_are_refused_with_every_problem_named() {
        let errs = resolve(&obj(json!({"scenarios": {
            "a": {"executor": "constant-arrival-rate", "rate": -5, "duration": "10x", "preAllocatedVUs": 1},
            "b": {"executor": "warp-speed"},
            "c": {"executor": "ramping-vus", "stages": [{"duration": "1q", "target": 1}], "bogus": 1},
        }})))
        .unwrap_err();
        let all = errs.join("\n");
        for needle in [
            "scenarios.a.rate: must be a number greater than 0, not -5",
            "scenarios.a.duration: invalid duration \"10x\"",
            "scenarios.b.executor: \"warp-speed\" is not an executor; accepted: shared-iterations, per-vu-iterations, constant-vus, ramping-vus, constant-arrival-rate, ramping-arrival-rate, externally-controlled",
            "scenarios.c.stages[0].duration: invalid duration \"1q\"",
            "scenarios.c.bogus: unknown option for executor ramping-vus",
        ] {
            assert!(all.contains(needle), "missing {needle:?} in:\n{all}");
        }
        let errs = resolve(&obj(json!({"vus": 0, "duration": "5s"}))).unwrap_err();
        assert_eq!(
            errs,
            vec!["vus: must be a whole number of at least 1, not 0".to_owned()]
        );
    }

    /// Durations past the maximum used to panic in `from_secs_f64`; now
    /// each is an error naming its option, all at once.
    #[test]
    fn values_out_of_range_are_refused_every_one_named() {
        let max = "longer than the maximum of 876000h (100 years)";
        let errs = resolve(&obj(json!({
            "duration": 1e300,
            "vus": 2,
            "setupTimeout": "1e300",
            "teardownTimeout": "99999999999999999999h",
        })))
        .unwrap_err();
        assert_eq!(
            errs,
            [
                format!("duration: invalid duration 1e+300 (milliseconds): {max}"),
                format!("setupTimeout: invalid duration \"1e300\": {max}"),
                format!("teardownTimeout: invalid duration \"99999999999999999999h\": {max}"),
            ]
        );
        let errs = resolve(&obj(json!({"scenarios": {"a": {
            "executor": "ramping-vus",
            "startTime": "1e20",
            "gracefulStop": 1e300,
            "stages": [{"duration": "1e20s", "target": 1}, {"duration": "1e20", "target": 1}],
        }}})))
        .unwrap_err();
        let keys: Vec<_> = errs.iter().map(|e| e.split(':').next().unwrap()).collect();
        assert_eq!(
            keys,
            [
                "scenarios.a.startTime",
                "scenarios.a.gracefulStop",
                // "1e20s" is not a duration k6 writes (no exponents with
                // units), "1e20" is one too long.
                "scenarios.a.stages[0].duration",
                "scenarios.a.stages[1].duration",
            ],
            "{errs:?}"
        );
        assert!(errs[3].ends_with(max), "{errs:?}");
    }

    #[test]
    fn more_vus_than_a_run_counts_are_refused() {
        let half = u64::from(u32::MAX / 2 + 1);
        let errs = resolve(&obj(json!({"scenarios": {
            "a": {"executor": "constant-vus", "vus": half, "duration": "1s"},
            "b": {"executor": "constant-vus", "vus": half, "duration": "1s"},
        }})))
        .unwrap_err();
        assert_eq!(
            errs,
            ["scenarios: 4294967296 VUs in all, more than the maximum of 4294967294"]
        );
    }

    #[test]
    fn unknown_top_level_keys_are_named() {
        let o = resolve(&obj(
            json!({"duration": "1s", "thresholds": {}, "noCookiesReset": true}),
        ))
        .unwrap();
        assert_eq!(o.unsupported, vec!["noCookiesReset".to_owned()]);
    }

    #[test]
    fn environment_and_stage_flags_parse() {
        let env = env_layer([
            ("WLOAD_VUS".to_owned(), "7".to_owned()),
            ("WLOAD_STAGES".to_owned(), "10s:5,20s:0".to_owned()),
            ("HOME".to_owned(), "/root".to_owned()),
        ])
        .unwrap();
        assert_eq!(
            Value::Object(env),
            json!({"vus": 7, "stages": [
                {"duration": "10s", "target": 5}, {"duration": "20s", "target": 0}
            ]})
        );
        let errs = env_layer([
            ("WLOAD_VUS".to_owned(), "x".to_owned()),
            ("WLOAD_ITERATIONS".to_owned(), "-1".to_owned()),
        ])
        .unwrap_err();
        assert_eq!(
            errs,
            [
                "WLOAD_VUS=\"x\" is not a whole number",
                "WLOAD_ITERATIONS=\"-1\" is not a whole number"
            ]
        );
        assert!(stage_arg("30s").is_err());
        assert!(stage_arg("30s:x").is_err());
        // The duration is checked with the other options.
        let stage = stage_arg("3x:1").unwrap();
        let errs = resolve(&obj(json!({"stages": [stage]}))).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("stages[0].duration: invalid duration \"3x\""),
            "{errs:?}"
        );
    }
    #[test]
    fn summary_trend_stats_are_checked() {
        let o = resolve(&obj(
            json!({"summaryTrendStats": ["avg", "p(99.9)", "count"]}),
        ))
        .unwrap();
        assert_eq!(o.trend_stats, vec!["avg", "p(99.9)", "count"]);
        let default = resolve(&obj(json!({}))).unwrap();
        assert_eq!(default.trend_stats.len(), 7);
        let errs = resolve(&obj(json!({"summaryTrendStats": ["avg", "p99"]}))).unwrap_err();
        assert!(
            errs[0].contains("unknown trend statistic \"p99\""),
            "{errs:?}"
        );
        assert!(resolve(&obj(json!({"summaryTrendStats": []}))).is_err());
    }

    #[test]
    fn k6_http_options_configure_the_client() {
        let o = resolve(&obj(
            json!({"discardResponseBodies": true, "batchPerHost": 2, "userAgent": "k6-port"}),
        ))
        .unwrap();
        let mut c = ClientConfig::default();
        o.http.apply(&mut c);
        assert!(c.discard_bodies);
        assert_eq!((c.batch, c.batch_per_host), (20, 2));
        assert_eq!(c.user_agent, "k6-port");
        let errs = resolve(&obj(json!({"batch": 0, "noConnectionReuse": "yes"}))).unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
    }

    #[test]
    fn blacklist_ips_and_block_hostnames_narrow_the_client_policy() {
        use wload_http::EgressPolicy;
        use wload_http::egress::AllowRule;
        let env = env_layer([
            (
                "WLOAD_BLACKLIST_IPS".to_owned(),
                " 10.0.0.0/8, ,::1".to_owned(),
            ),
            ("WLOAD_BLOCK_HOSTNAMES".to_owned(), "*.internal".to_owned()),
        ])
        .unwrap();
        assert_eq!(
            Value::Object(env.clone()),
            json!({"blacklistIPs": ["10.0.0.0/8", "::1"], "blockHostnames": ["*.internal"]})
        );
        let test = obj(json!({"blacklistIPs": ["192.168.0.0/16"]}));
        let o = resolve(&merge(&[&test, &env])).unwrap();
        assert!(o.unsupported.is_empty(), "{:?}", o.unsupported);
        let mut c = ClientConfig::default();
        o.http.apply(&mut c);
        let policy = c.egress.expect("a policy");
        assert_eq!(policy.blacklist_ips.len(), 2);
        assert_eq!(policy.block_hostnames.len(), 1);
        assert!(!policy.deny_special_ranges && policy.allow.is_none());
        // Over a tenant's policy: its allowlist and special ranges stay.
        let allow = vec![AllowRule::parse("127.0.0.1:8080").unwrap()];
        let tenant = EgressPolicy::tenant(Some(allow.clone()));
        let mut c = ClientConfig {
            egress: Some(Arc::new(tenant)),
            ..ClientConfig::default()
        };
        o.http.apply(&mut c);
        let policy = c.egress.expect("a policy");
        assert_eq!(policy.allow.as_ref(), Some(&allow));
        assert!(policy.deny_special_ranges);
        assert_eq!(policy.blacklist_ips.len(), 2);
        // No such options: no policy, nothing to check per connection.
        let mut c = ClientConfig::default();
        resolve(&obj(json!({}))).unwrap().http.apply(&mut c);
        assert!(c.egress.is_none());
        // Every bad entry named, with its index.
        let errs = resolve(&obj(json!({
            "blacklistIPs": ["10.0.0.0/8", "10.0.0.0/33", 7],
            "blockHostnames": "*.internal",
        })))
        .unwrap_err();
        assert_eq!(
            errs,
            [
                "blacklistIPs[1]: \"10.0.0.0/33\": the prefix length must be 0 to 32",
                "blacklistIPs[2]: must be a string, not 7",
                "blockHostnames: must be a list like [\"*.example.com\", \"api.internal\"], \
                 not \"*.internal\"",
            ]
        );
        let errs = resolve(&obj(json!({"blockHostnames": ["ok.test", "inval*d"]}))).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("blockHostnames[1]: invalid hostname pattern \"inval*d\""),
            "{errs:?}"
        );
    }

    #[test]
    fn rps_and_paused_are_k6_options() {
        let o = resolve(&obj(json!({"rps": 50, "paused": true}))).unwrap();
        assert_eq!((o.rps, o.paused), (Some(50.0), true));
        // k6: 0 is no limit.
        let o = resolve(&obj(json!({"rps": 0}))).unwrap();
        assert_eq!((o.rps, o.paused), (None, false));
        assert_eq!(resolve(&obj(json!({"rps": 0.5}))).unwrap().rps, Some(0.5));
        let errs = resolve(&obj(json!({"rps": -1, "paused": "yes"}))).unwrap_err();
        assert_eq!(
            errs,
            [
                "rps: must be a number of requests per second from 0 (no limit) to 1e9, not -1",
                "paused: must be true or false, not \"yes\"",
            ]
        );
        assert!(resolve(&obj(json!({"rps": 2e9}))).is_err());
        let env = env_layer([
            ("WLOAD_RPS".to_owned(), "12.5".to_owned()),
            ("WLOAD_PAUSED".to_owned(), "true".to_owned()),
        ])
        .unwrap();
        assert_eq!(Value::Object(env), json!({"rps": 12.5, "paused": true}));
        let env = env_layer([("WLOAD_RPS".to_owned(), "lots".to_owned())]).unwrap();
        assert!(resolve(&env).unwrap_err()[0].ends_with("not \"lots\""));
        assert!(env_layer([("WLOAD_PAUSED".to_owned(), "maybe".to_owned())]).is_err());
        assert_eq!(number_or_text("7"), json!(7));
        assert_eq!(number_or_text("nan"), json!("nan"));
    }

    #[test]
    fn thresholds_are_read_from_the_options() {
        let o = resolve(&obj(json!({"thresholds": {"checks": ["rate>0.9"]}}))).unwrap();
        assert_eq!(o.thresholds.len(), 1);
        let errs = resolve(&obj(json!({"thresholds": {"checks": ["rate>>0.9"]}}))).unwrap_err();
        assert!(
            errs[0].starts_with("thresholds.checks: invalid threshold"),
            "{errs:?}"
        );
    }
}
