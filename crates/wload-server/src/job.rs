//! What passes between the service and a run's worker process: the job
//! (written to `job.json` in the run's directory before the worker
//! starts), the commands the service writes to the worker's stdin, and
//! the events the worker writes to its stdout, one JSON object per line.
//! The worker's stderr (the run header, the progress and any error) goes
//! to `console.log` in the same directory; its results are files there
//! too (see [`RunFiles`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use wload_http::EgressPolicy;

/// One run, as the worker reads it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// The uploaded component.
    pub test: PathBuf,
    /// Its name, for the run header.
    pub name: String,
    /// The service's compile cache (precompiled at upload).
    pub cache: PathBuf,
    /// The k6 options object the run was started with.
    pub options: Map<String, Value>,
    /// `__ENV` of the test.
    pub env: BTreeMap<String, String>,
    /// A plugin's parameters, as text (the client read any `@file`): the
    /// worker checks them against the plugin's description. A test takes
    /// none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, String>,
    /// Linear memory of one VU, in bytes.
    pub memory_per_vu: u64,
    /// CPU time of one guest call, in milliseconds.
    pub cpu_per_call_ms: u64,
    /// The run's share of its tenant's request-rate cap when it starts
    /// ([`Command::RpsLimit`] changes it).
    pub rps_limit: Option<f64>,
    /// The tenant's egress policy.
    pub egress: EgressPolicy,
    /// Quota limits of the run's shape, checked once it is planned.
    pub max_vus: u32,
    pub max_duration_secs: u64,
    /// VU-hours the tenant has left in the period.
    pub vu_hours_left: f64,
    /// Start with the VUs paused (k6 `--paused`).
    pub paused: bool,
    /// Interval of the live metrics, in milliseconds.
    pub interval_ms: u64,
}

/// A command to a running worker, one JSON line on its stdin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Command {
    /// Change the run (`{"status": {...}}`); answered with an
    /// [`Event::Status`] or [`Event::CommandFailed`].
    Status(StatusPatch),
    /// The run's new share of its tenant's requests per second
    /// (`{"rpsLimit": 12.5}`), when another run of the tenant starts or
    /// ends; not answered.
    RpsLimit(f64),
}

/// k6's `PATCH /v1/status` body.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatusPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vus: Option<u32>,
    #[serde(
        default,
        rename = "vus-max",
        alias = "vusMax",
        skip_serializing_if = "Option::is_none"
    )]
    pub vus_max: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<bool>,
}

/// What a worker reports on its stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "camelCase")]
pub enum Event {
    /// The run is planned and admitted; setup starts next.
    #[serde(rename_all = "camelCase")]
    Planned {
        max_vus: u32,
        max_duration_secs: f64,
    },
    /// The run was refused before its start (quota, invalid options).
    #[serde(rename_all = "camelCase")]
    Refused {
        limit: Option<String>,
        message: String,
    },
    /// The status after a command or a change (k6's `/v1/status`).
    Status { status: Value },
    /// A command could not be applied.
    CommandFailed { message: String },
}

/// One drawing of a run's progress display (the `progress` event), for
/// the client to paint as a local run paints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressFrame {
    pub lines: Vec<String>,
    /// The drawing at the end of the run.
    pub last: bool,
}

/// The files of one run, in its directory.
#[derive(Debug, Clone)]
pub struct RunFiles {
    pub dir: PathBuf,
}

impl RunFiles {
    pub fn new(dir: &Path) -> RunFiles {
        RunFiles {
            dir: dir.to_owned(),
        }
    }
    pub fn job(&self) -> PathBuf {
        self.dir.join("job.json")
    }
    /// The worker's stderr: header, progress, errors.
    pub fn console(&self) -> PathBuf {
        self.dir.join("console.log")
    }
    /// The live metrics, `--out json` lines.
    pub fn intervals(&self) -> PathBuf {
        self.dir.join("intervals.jsonl")
    }
    /// The HdrHistogram interval log (`--out hdr`).
    pub fn hdr(&self) -> PathBuf {
        self.dir.join("run.hlog")
    }
    /// The k6 summary export.
    pub fn summary(&self) -> PathBuf {
        self.dir.join("summary.json")
    }
    /// The progress display's drawings, one [`ProgressFrame`] a line.
    pub fn progress(&self) -> PathBuf {
        self.dir.join("progress.jsonl")
    }
    /// The end-of-test summary as `wload run` prints it.
    pub fn summary_text(&self) -> PathBuf {
        self.dir.join("summary.txt")
    }
}
