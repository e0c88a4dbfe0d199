//! Metric definitions. Built-in metrics have fixed ids; custom metrics are
//! defined by guests at run time. Defining takes a lock; recording never
//! does (it uses the id).

use std::collections::HashMap;
use std::sync::RwLock;

/// Index of a metric in the registry.
pub type MetricId = u32;

/// The four metric types of k6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricKind {
    Counter,
    Gauge,
    Rate,
    Trend,
}

impl MetricKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
            MetricKind::Rate => "rate",
            MetricKind::Trend => "trend",
        }
    }
}

/// What a metric's values are, for formatting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// Plain numbers.
    Default,
    /// Milliseconds.
    Time,
    /// Bytes.
    Data,
}

#[derive(Debug, Clone)]
pub struct MetricDef {
    pub name: String,
    pub kind: MetricKind,
    pub value: ValueKind,
    pub builtin: bool,
}

/// The built-in metrics, with k6's names. Their ids are their positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Builtin {
    HttpReqs,
    HttpReqDuration,
    HttpReqBlocked,
    HttpReqConnecting,
    HttpReqTlsHandshaking,
    HttpReqSending,
    HttpReqWaiting,
    HttpReqReceiving,
    HttpReqFailed,
    DataSent,
    DataReceived,
    Iterations,
    IterationDuration,
    IterationsFailed,
    Vus,
    VusMax,
    Checks,
    DroppedIterations,
    IterationDurationCorrected,
    HttpReqDurationCorrected,
    GroupDuration,
}

impl Builtin {
    pub const ALL: [Builtin; 21] = [
        Builtin::HttpReqs,
        Builtin::HttpReqDuration,
        Builtin::HttpReqBlocked,
        Builtin::HttpReqConnecting,
        Builtin::HttpReqTlsHandshaking,
        Builtin::HttpReqSending,
        Builtin::HttpReqWaiting,
        Builtin::HttpReqReceiving,
        Builtin::HttpReqFailed,
        Builtin::DataSent,
        Builtin::DataReceived,
        Builtin::Iterations,
        Builtin::IterationDuration,
        Builtin::IterationsFailed,
        Builtin::Vus,
        Builtin::VusMax,
        Builtin::Checks,
        Builtin::DroppedIterations,
        Builtin::IterationDurationCorrected,
        Builtin::HttpReqDurationCorrected,
        Builtin::GroupDuration,
    ];

    pub fn id(self) -> MetricId {
        self as MetricId
    }

    fn def(self) -> MetricDef {
        use Builtin::*;
        let (name, kind, value) = match self {
            HttpReqs => ("http_reqs", MetricKind::Counter, ValueKind::Default),
            HttpReqDuration => ("http_req_duration", MetricKind::Trend, ValueKind::Time),
            HttpReqBlocked => ("http_req_blocked", MetricKind::Trend, ValueKind::Time),
            HttpReqConnecting => ("http_req_connecting", MetricKind::Trend, ValueKind::Time),
            HttpReqTlsHandshaking => (
                "http_req_tls_handshaking",
                MetricKind::Trend,
                ValueKind::Time,
            ),
            HttpReqSending => ("http_req_sending", MetricKind::Trend, ValueKind::Time),
            HttpReqWaiting => ("http_req_waiting", MetricKind::Trend, ValueKind::Time),
            HttpReqReceiving => ("http_req_receiving", MetricKind::Trend, ValueKind::Time),
            HttpReqFailed => ("http_req_failed", MetricKind::Rate, ValueKind::Default),
            DataSent => ("data_sent", MetricKind::Counter, ValueKind::Data),
            DataReceived => ("data_received", MetricKind::Counter, ValueKind::Data),
            Iterations => ("iterations", MetricKind::Counter, ValueKind::Default),
            IterationDuration => ("iteration_duration", MetricKind::Trend, ValueKind::Time),
            IterationsFailed => ("iterations_failed", MetricKind::Counter, ValueKind::Default),
            Vus => ("vus", MetricKind::Gauge, ValueKind::Default),
            VusMax => ("vus_max", MetricKind::Gauge, ValueKind::Default),
            Checks => ("checks", MetricKind::Rate, ValueKind::Default),
            DroppedIterations => (
                "dropped_iterations",
                MetricKind::Counter,
                ValueKind::Default,
            ),
            // Coordinated-omission corrected: measured from the scheduled
            // start of the iteration (open-model executors only).
            IterationDurationCorrected => (
                "iteration_duration_corrected",
                MetricKind::Trend,
                ValueKind::Time,
            ),
            HttpReqDurationCorrected => (
                "http_req_duration_corrected",
                MetricKind::Trend,
                ValueKind::Time,
            ),
            GroupDuration => ("group_duration", MetricKind::Trend, ValueKind::Time),
        };
        MetricDef {
            name: name.to_owned(),
            kind,
            value,
            builtin: true,
        }
    }
}

/// All metric definitions of a run.
#[derive(Debug)]
pub struct Registry {
    inner: RwLock<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    defs: Vec<MetricDef>,
    by_name: HashMap<String, MetricId>,
}

/// Longest metric name accepted (k6's limit).
const MAX_NAME: usize = 128;

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    pub fn new() -> Self {
        let mut inner = Inner::default();
        for b in Builtin::ALL {
            let def = b.def();
            debug_assert_eq!(inner.defs.len() as u32, b.id());
            inner.by_name.insert(def.name.clone(), b.id());
            inner.defs.push(def);
        }
        Registry {
            inner: RwLock::new(inner),
        }
    }

    /// Define a custom metric, or return the id of the existing one of the
    /// same name and kind.
    pub fn define(&self, name: &str, kind: MetricKind, is_time: bool) -> Result<MetricId, String> {
        validate_name(name)?;
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = inner.by_name.get(name) {
            let existing = &inner.defs[id as usize];
            if existing.kind != kind {
                return Err(format!(
                    "metric {name:?} is already defined as a {}, not a {}",
                    existing.kind.as_str(),
                    kind.as_str()
                ));
            }
            return Ok(id);
        }
        let id = inner.defs.len() as MetricId;
        inner.defs.push(MetricDef {
            name: name.to_owned(),
            kind,
            value: if is_time {
                ValueKind::Time
            } else {
                ValueKind::Default
            },
            builtin: false,
        });
        inner.by_name.insert(name.to_owned(), id);
        Ok(id)
    }

    pub fn get(&self, id: MetricId) -> Option<MetricDef> {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        inner.defs.get(id as usize).cloned()
    }

    pub fn id_of(&self, name: &str) -> Option<MetricId> {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        inner.by_name.get(name).copied()
    }

    pub fn kind(&self, id: MetricId) -> Option<MetricKind> {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        inner.defs.get(id as usize).map(|d| d.kind)
    }

    pub fn all(&self) -> Vec<MetricDef> {
        let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
        inner.defs.clone()
    }
}

fn validate_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok || name.len() > MAX_NAME || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "invalid metric name {name:?}: use 1 to {MAX_NAME} ASCII letters, digits and '_', not starting with a digit"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_have_their_positions_as_ids() {
        let r = Registry::new();
        for b in Builtin::ALL {
            assert_eq!(r.get(b.id()).map(|d| d.name), Some(b.def().name));
        }
    }

    #[test]
    fn define_is_idempotent_and_refuses_kind_changes() {
        let r = Registry::new();
        let a = r.define("my_counter", MetricKind::Counter, false).unwrap();
        assert_eq!(r.define("my_counter", MetricKind::Counter, false), Ok(a));
        let err = r
            .define("my_counter", MetricKind::Trend, false)
            .unwrap_err();
        assert!(err.contains("already defined as a counter"), "{err}");
        let err = r.define("http_reqs", MetricKind::Trend, true).unwrap_err();
        assert!(err.contains("counter"), "{err}");
    }

    #[test]
    fn names_are_validated() {
        let r = Registry::new();
        for bad in ["", "1abc", "a-b", "a b", &"x".repeat(129)] {
            assert!(r.define(bad, MetricKind::Rate, false).is_err(), "{bad:?}");
        }
        assert!(r.define("_ok_1", MetricKind::Rate, false).is_ok());
    }
}
