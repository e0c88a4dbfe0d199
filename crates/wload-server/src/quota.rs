//! What one tenant may use. Limits of a run's shape (VUs, duration,
//! VU-hours left) are checked when the run is planned, before setup sends
//! its first request; the rest bound the run while it goes: the request
//! rate (a token bucket on the host's HTTP path), each VU's memory (the
//! instance's ResourceLimiter) and each guest call's CPU time (the epoch
//! deadline). Every refusal names the limit, its value and what the run
//! asked for, so that a tenant knows what to change.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use wload_engine::rate::MAX_RPS;

/// A tenant's quotas, as the API reads and shows them (camelCase JSON).
/// A field left out of a tenant's JSON takes its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Quotas {
    /// Runs of this tenant going at once.
    pub concurrent_runs: u32,
    /// VUs of one run (its scenarios' maxVUs summed, as the run plans them).
    pub vus_per_run: u32,
    /// Longest run, in seconds: the latest scenario end, gracefulStop
    /// included.
    pub duration_per_run: u64,
    /// Requests per second of all the tenant's runs together, split
    /// evenly among those going (0: no limit).
    pub requests_per_second: f64,
    /// VU-hours per period: a run costs its maximum VUs times its wall time.
    pub vu_hours_per_period: f64,
    /// The period of `vuHoursPerPeriod`, in seconds (a sliding window).
    pub period: u64,
    /// Linear memory of one VU, in bytes.
    pub memory_per_vu: u64,
    /// CPU time of one guest call without waiting on the host, in
    /// milliseconds: a guest that loops forever is stopped after it.
    pub cpu_per_call_ms: u64,
}

impl Default for Quotas {
    fn default() -> Self {
        Quotas {
            concurrent_runs: 2,
            vus_per_run: 1_000,
            duration_per_run: 3_600,
            requests_per_second: 0.0,
            vu_hours_per_period: 100.0,
            period: 30 * 24 * 3_600,
            memory_per_vu: 64 << 20,
            cpu_per_call_ms: 1_000,
        }
    }
}

/// A refusal: which limit, and the message for the tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    /// The quota's field name (`vusPerRun`, …).
    pub limit: String,
    pub message: String,
}

impl Refusal {
    fn new(limit: &str, message: String) -> Refusal {
        Refusal {
            limit: limit.to_owned(),
            message,
        }
    }
}

/// What a run is planned to use, as the engine plans it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub max_vus: u32,
    pub max_duration: Duration,
}

impl Quotas {
    /// Problems with the quotas themselves (an admin's mistake), all at once.
    pub fn validate(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let positive = [
            ("concurrentRuns", u64::from(self.concurrent_runs)),
            ("vusPerRun", u64::from(self.vus_per_run)),
            ("durationPerRun", self.duration_per_run),
            ("period", self.period),
            ("memoryPerVu", self.memory_per_vu),
            ("cpuPerCallMs", self.cpu_per_call_ms),
        ];
        for (name, value) in positive {
            if value == 0 {
                problems.push(format!("{name} must be at least 1"));
            }
        }
        if !(self.requests_per_second >= 0.0 && self.requests_per_second <= MAX_RPS) {
            problems.push("requestsPerSecond must be 0 (no limit) to 1e9".to_owned());
        }
        if !(self.vu_hours_per_period.is_finite() && self.vu_hours_per_period >= 0.0) {
            problems.push("vuHoursPerPeriod must be 0 or more".to_owned());
        }
        if self.cpu_per_call_ms < 10 {
            problems.push(
                "cpuPerCallMs must be at least 10 (how often the guest clock ticks)".to_owned(),
            );
        }
        problems
    }

    /// Refuse a new run when the tenant already has `running` runs going.
    pub fn admit_concurrent(&self, running: u32) -> Result<(), Refusal> {
        if running >= self.concurrent_runs {
            return Err(Refusal::new(
                "concurrentRuns",
                format!(
                    "quota concurrentRuns: {running} of {} runs are going; wait for one to \
                     finish or stop one",
                    self.concurrent_runs
                ),
            ));
        }
        Ok(())
    }

    /// Check a planned run against the limits of its shape. `used` is
    /// the VU-hours the tenant's runs spent in the current period.
    pub fn admit_shape(&self, shape: Shape, used_vu_hours: f64) -> Result<(), Refusal> {
        if shape.max_vus > self.vus_per_run {
            return Err(Refusal::new(
                "vusPerRun",
                format!(
                    "quota vusPerRun: the run needs {} VUs, the limit is {}; lower vus or \
                     maxVUs",
                    shape.max_vus, self.vus_per_run
                ),
            ));
        }
        let limit = Duration::from_secs(self.duration_per_run);
        if shape.max_duration > limit {
            return Err(Refusal::new(
                "durationPerRun",
                format!(
                    "quota durationPerRun: the run may take {}, the limit is {}; shorten its \
                     duration, stages or gracefulStop",
                    wload_units::format::duration_short(shape.max_duration),
                    wload_units::format::duration_short(limit)
                ),
            ));
        }
        let needed = vu_hours(shape.max_vus, shape.max_duration);
        let left = (self.vu_hours_per_period - used_vu_hours).max(0.0);
        if needed > left {
            return Err(Refusal::new(
                "vuHoursPerPeriod",
                format!(
                    "quota vuHoursPerPeriod: the run may use {needed:.2} VU-hours ({} VUs for \
                     {}), {left:.2} of {:.2} are left in this period",
                    shape.max_vus,
                    wload_units::format::duration_short(shape.max_duration),
                    self.vu_hours_per_period
                ),
            ));
        }
        Ok(())
    }

    /// The CPU time of one guest call.
    pub fn cpu_per_call(&self) -> Duration {
        Duration::from_millis(self.cpu_per_call_ms)
    }

    /// The request-rate cap, if any.
    pub fn rps_limit(&self) -> Option<f64> {
        (self.requests_per_second > 0.0).then_some(self.requests_per_second)
    }
}

/// What `vus` VUs cost over `time`.
pub fn vu_hours(vus: u32, time: Duration) -> f64 {
    f64::from(vus) * time.as_secs_f64() / 3_600.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(vus: u32, secs: u64) -> Shape {
        Shape {
            max_vus: vus,
            max_duration: Duration::from_secs(secs),
        }
    }

    #[test]
    fn each_limit_refuses_with_its_name() {
        let q = Quotas {
            vus_per_run: 10,
            duration_per_run: 60,
            vu_hours_per_period: 1.0,
            concurrent_runs: 1,
            ..Quotas::default()
        };
        assert_eq!(q.admit_shape(shape(10, 60), 0.0), Ok(()));
        assert_eq!(
            q.admit_shape(shape(11, 60), 0.0).unwrap_err().limit,
            "vusPerRun"
        );
        let long = q.admit_shape(shape(10, 61), 0.0).unwrap_err();
        assert_eq!(long.limit, "durationPerRun");
        assert!(long.message.contains("1m1s"), "{}", long.message);
        // 10 VUs for 60 s = 1/6 VU-hour: refused once less than that is left.
        assert_eq!(q.admit_shape(shape(10, 60), 0.8), Ok(()));
        let spent = q.admit_shape(shape(10, 60), 0.9).unwrap_err();
        assert_eq!(spent.limit, "vuHoursPerPeriod");
        assert!(spent.message.contains("0.17 VU-hours"), "{}", spent.message);
        assert_eq!(q.admit_concurrent(0), Ok(()));
        assert_eq!(q.admit_concurrent(1).unwrap_err().limit, "concurrentRuns");
    }

    #[test]
    fn quotas_read_with_defaults_and_refuse_unknown_fields() {
        let q: Quotas = serde_json::from_str(r#"{"vusPerRun": 5}"#).unwrap();
        assert_eq!(q.vus_per_run, 5);
        assert_eq!(q.concurrent_runs, Quotas::default().concurrent_runs);
        assert!(serde_json::from_str::<Quotas>(r#"{"vus": 5}"#).is_err());
        let bad = Quotas {
            cpu_per_call_ms: 0,
            requests_per_second: -1.0,
            ..Quotas::default()
        };
        assert_eq!(bad.validate().len(), 3, "{:?}", bad.validate());
        assert!(Quotas::default().validate().is_empty());
    }
}
