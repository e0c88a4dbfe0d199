//! Reading one scenario's JSON object (k6's options format) into typed
//! fields, collecting every problem instead of stopping at the first, and
//! naming unknown keys — so a bad configuration is refused with all its
//! mistakes at once, before any VU starts.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use serde_json::{Map, Value};

use wload_units::duration_value;

/// One stage of a ramping executor: reach `target` over `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub target: f64,
}

pub struct Fields<'a> {
    path: String,
    map: &'a Map<String, Value>,
    used: HashSet<&'static str>,
    errors: &'a mut Vec<String>,
}

impl<'a> Fields<'a> {
    pub fn new(path: String, map: &'a Map<String, Value>, errors: &'a mut Vec<String>) -> Self {
        Fields {
            path,
            map,
            used: HashSet::new(),
            errors,
        }
    }

    pub fn error(&mut self, key: &str, message: impl std::fmt::Display) {
        self.errors.push(format!("{}.{key}: {message}", self.path));
    }

    fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.used.insert(key);
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// A duration: `"30s"`, `"1m30s"`, or a number of milliseconds, at
    /// most [`wload_units::MAX_DURATION`].
    pub fn duration(&mut self, key: &'static str, default: Option<Duration>) -> Duration {
        // In place of an invalid required duration: not zero, which the
        // executor's validation would report a second time ("must be
        // longer than 0s" after "longer than the maximum").
        const INVALID_STAND_IN: Duration = Duration::from_secs(1);
        match self.get(key) {
            None => {
                if default.is_none() {
                    self.error(key, "is required (a duration such as \"30s\")");
                }
                default.unwrap_or_default()
            }
            Some(v) => match duration_value(v) {
                Ok(d) => d,
                Err(e) => {
                    self.error(key, e);
                    default.unwrap_or(INVALID_STAND_IN)
                }
            },
        }
    }

    /// A whole number at least `min`.
    pub fn count(&mut self, key: &'static str, default: Option<u64>, min: u64) -> u64 {
        match self.get(key) {
            None => {
                if default.is_none() {
                    self.error(
                        key,
                        format!("is required (a whole number of at least {min})"),
                    );
                }
                default.unwrap_or(min)
            }
            Some(v) => match v.as_u64() {
                Some(n) if n >= min => n,
                _ => {
                    self.error(
                        key,
                        format!("must be a whole number of at least {min}, not {v}"),
                    );
                    default.unwrap_or(min)
                }
            },
        }
    }

    /// A VU count (fits u32).
    pub fn vus(&mut self, key: &'static str, default: Option<u32>, min: u32) -> u32 {
        let n = self.count(key, default.map(u64::from), u64::from(min));
        u32::try_from(n).unwrap_or_else(|_| {
            self.error(key, "is too large");
            min
        })
    }

    /// A number greater than 0 (rates).
    pub fn positive(&mut self, key: &'static str, default: Option<f64>) -> f64 {
        match self.get(key) {
            None => {
                if default.is_none() {
                    self.error(key, "is required (a number greater than 0)");
                }
                default.unwrap_or(1.0)
            }
            Some(v) => match v.as_f64() {
                Some(x) if x > 0.0 && x.is_finite() => x,
                _ => {
                    self.error(key, format!("must be a number greater than 0, not {v}"));
                    1.0
                }
            },
        }
    }

    /// A number at least 0.
    pub fn non_negative(&mut self, key: &'static str, default: f64) -> f64 {
        match self.get(key) {
            None => default,
            Some(v) => match v.as_f64() {
                Some(x) if x >= 0.0 && x.is_finite() => x,
                _ => {
                    self.error(key, format!("must be a number of at least 0, not {v}"));
                    default
                }
            },
        }
    }

    pub fn string(&mut self, key: &'static str, default: &str) -> String {
        match self.get(key) {
            None => default.to_owned(),
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(v) => {
                self.error(key, format!("must be a non-empty string, not {v}"));
                default.to_owned()
            }
        }
    }

    /// `{"key": "value", ...}`.
    pub fn string_map(&mut self, key: &'static str) -> BTreeMap<String, String> {
        match self.get(key) {
            None => BTreeMap::new(),
            Some(Value::Object(m)) => {
                let mut out = BTreeMap::new();
                for (k, v) in m {
                    match v {
                        Value::String(s) => {
                            out.insert(k.clone(), s.clone());
                        }
                        other => self.error(key, format!("{k} must be a string, not {other}")),
                    }
                }
                out
            }
            Some(v) => {
                self.error(key, format!("must be an object of strings, not {v}"));
                BTreeMap::new()
            }
        }
    }

    /// `[{"duration": "30s", "target": 10}, ...]`, at least one stage.
    pub fn stages(&mut self, key: &'static str) -> Vec<Stage> {
        let Some(v) = self.get(key) else {
            self.error(
                key,
                "is required (a list of {\"duration\": \"30s\", \"target\": 10})",
            );
            return Vec::new();
        };
        let Some(list) = v.as_array().filter(|l| !l.is_empty()) else {
            self.error(
                key,
                "must be a non-empty list of {\"duration\", \"target\"} objects",
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, stage) in list.iter().enumerate() {
            let duration = stage.get("duration").map(duration_value);
            let target = stage.get("target").and_then(Value::as_f64);
            match (duration, target) {
                (Some(Ok(duration)), Some(target)) if target >= 0.0 => {
                    out.push(Stage { duration, target })
                }
                (Some(Err(e)), _) => self.error(&format!("{key}[{i}].duration"), e),
                _ => self.error(
                    &format!("{key}[{i}]"),
                    format!(
                        "must be {{\"duration\": \"30s\", \"target\": N}} with N ≥ 0, not {stage}"
                    ),
                ),
            }
        }
        out
    }

    /// Report keys nobody read as unknown.
    pub fn finish(self, executor: &str) {
        let mut accepted: Vec<&str> = self.used.iter().copied().collect();
        accepted.sort_unstable();
        for key in self.map.keys() {
            if !self.used.contains(key.as_str()) {
                self.errors.push(format!(
                    "{}.{key}: unknown option for executor {executor}; accepted: {}",
                    self.path,
                    accepted.join(", ")
                ));
            }
        }
    }
}
