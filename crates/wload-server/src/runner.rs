//! Runs as child processes. Each run is one `wload worker run DIR`
//! process: the engine, the tenant's sandbox limits and egress policy, in
//! an address space of its own, so that whatever a test or its target
//! does to a run (a guest that loops, a VU out of memory, a hostile
//! server, a crash) ends at that process and the service and the other
//! tenants' runs go on. The worker is started with an empty environment
//! (nothing of the service's reaches a test) and dies with the service
//! (`PR_SET_PDEATHSIG`), so that a `kill -9` of the service leaves no
//! orphaned load behind; the next start marks such runs interrupted.
//!
//! The runner keeps the runs going in this process (the authority on
//! "how many runs does this tenant have going"), passes commands to
//! their workers, and records each run's end in the store.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdout, Command};
use tokio::sync::{mpsc, oneshot, watch};

use crate::job::{self, Event, Job, RunFiles, StatusPatch};
use crate::quota::{Quotas, Refusal, vu_hours};
use crate::store::{RunState, Store};

/// How long a worker may take from its start to a planned run: loading
/// the (already compiled) test and asking it for its options.
const PLAN_TIMEOUT: Duration = Duration::from_secs(60);
/// Wall time a run may take beyond its `durationPerRun` quota, unless
/// `wload serve --run-wall-margin` says otherwise: setup's and teardown's
/// timeouts (60 s each by default) and a margin. Past it the run is
/// stopped at once (a run paused for ever ends here too).
pub const DEFAULT_WALL_MARGIN: Duration = Duration::from_secs(150);
/// How long a compile at upload may take.
const COMPILE_TIMEOUT: Duration = Duration::from_secs(300);

/// Why a run did not start.
#[derive(Debug)]
pub enum StartError {
    /// A quota or the options refused it; nothing was sent.
    Refused(Refusal),
    /// The test or its options are wrong (exit 104, 107: the message says).
    Invalid(String),
    /// The service could not run it.
    Internal(anyhow::Error),
}

impl From<anyhow::Error> for StartError {
    fn from(e: anyhow::Error) -> Self {
        StartError::Internal(e)
    }
}

/// A run going in this process.
pub struct LiveRun {
    pub tenant: String,
    pub files: RunFiles,
    /// Whether the run paces to a share of its tenant's
    /// `requestsPerSecond` (it started while the tenant had one).
    rate_capped: bool,
    commands: mpsc::UnboundedSender<job::Command>,
    /// The last status the worker reported (k6's `/v1/status`), and
    /// whether the run has ended (`None` once it has).
    pub status: watch::Receiver<Option<Value>>,
    /// Replies to commands, in order.
    replies: Mutex<Option<mpsc::UnboundedReceiver<Result<Value, String>>>>,
    stop_requested: Arc<Mutex<u32>>,
}

impl LiveRun {
    /// Apply a `PATCH /v1/status` body (the worker applies it in k6's
    /// order: paused, vus-max, vus, stopped); returns the status after it.
    pub async fn patch(&self, patch: StatusPatch) -> Result<Value, String> {
        if patch == StatusPatch::default() {
            return Ok(self.status.borrow().clone().unwrap_or(Value::Null));
        }
        if patch.stopped == Some(true) {
            self.count_stop();
        }
        let mut replies = self
            .replies
            .lock()
            .map_err(|_| "the run's reply channel is poisoned".to_owned())?
            .take()
            .ok_or_else(|| "another change of this run is being applied; retry".to_owned())?;
        let answer = if self.commands.send(job::Command::Status(patch)).is_ok() {
            match tokio::time::timeout(Duration::from_secs(10), replies.recv()).await {
                Ok(Some(answer)) => answer,
                Ok(None) => Err("the run has ended".to_owned()),
                Err(_) => Err("the run did not answer within 10s".to_owned()),
            }
        } else {
            Err("the run has ended".to_owned())
        };
        if let Ok(mut slot) = self.replies.lock() {
            *slot = Some(replies);
        }
        answer
    }

    /// Stop the run without waiting for an answer (the service is
    /// shutting down): the first stop is graceful (iterations finish
    /// within gracefulStop), the next one at once, as a second Ctrl-C.
    pub fn stop(&self) {
        self.count_stop();
        let _ = self.commands.send(job::Command::Status(StatusPatch {
            stopped: Some(true),
            ..StatusPatch::default()
        }));
    }

    fn count_stop(&self) {
        if let Ok(mut n) = self.stop_requested.lock() {
            *n += 1;
        }
    }
}

/// The runs of this service process.
pub struct Runner {
    store: Arc<Store>,
    exe: PathBuf,
    /// See [`DEFAULT_WALL_MARGIN`].
    wall_margin: Duration,
    runs_dir: PathBuf,
    live: Mutex<HashMap<String, Arc<LiveRun>>>,
    /// Runs admitted under `concurrentRuns` that are still starting.
    reserved: Arc<Mutex<HashMap<String, u32>>>,
}

/// A place among a tenant's concurrent runs, held from the quota check to
/// the run's start (so that two runs started at once cannot both take the
/// last place); given back when dropped.
pub struct Slot {
    /// The tenant's runs going or starting before this one.
    pub before: u32,
    tenant: String,
    reserved: Arc<Mutex<HashMap<String, u32>>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut r) = self.reserved.lock()
            && let Some(n) = r.get_mut(&self.tenant)
        {
            *n = n.saturating_sub(1);
        }
    }
}

impl Runner {
    /// `exe` is the `wload` binary that has the `worker` command.
    pub fn new(store: Arc<Store>, exe: PathBuf, data: &Path, wall_margin: Duration) -> Runner {
        Runner {
            store,
            exe,
            wall_margin,
            runs_dir: data.join("runs"),
            live: Mutex::new(HashMap::new()),
            reserved: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    pub fn run_dir(&self, id: &str) -> PathBuf {
        self.runs_dir.join(id)
    }

    /// The run, if it is going.
    pub fn live(&self, id: &str) -> Option<Arc<LiveRun>> {
        self.live.lock().ok()?.get(id).cloned()
    }

    /// Take a place among the tenant's concurrent runs, or say why not.
    pub fn reserve(&self, tenant: &str, quotas: &Quotas) -> Result<Slot, Refusal> {
        let live = self.live.lock().map_err(|_| poisoned())?;
        let mut reserved = self.reserved.lock().map_err(|_| poisoned())?;
        let going = live.values().filter(|r| r.tenant == tenant).count() as u32
            + reserved.get(tenant).copied().unwrap_or(0);
        quotas.admit_concurrent(going)?;
        *reserved.entry(tenant.to_owned()).or_default() += 1;
        Ok(Slot {
            before: going,
            tenant: tenant.to_owned(),
            reserved: self.reserved.clone(),
        })
    }

    /// Split the tenant's `requestsPerSecond` evenly among its runs going
    /// (those that started under the quota), when one starts or ends: the
    /// quota bounds the tenant, not each run. An even split wastes what
    /// an idle run leaves unused, but needs nothing shared between the
    /// workers, and never lets the tenant exceed its quota for longer
    /// than a command takes to reach a worker.
    fn share_request_rate(&self, tenant: &str) {
        let Ok(Some(t)) = self.store.tenant(tenant) else {
            return;
        };
        let Some(total) = t.quotas.rps_limit() else {
            return;
        };
        let runs: Vec<Arc<LiveRun>> = match self.live.lock() {
            Ok(live) => live
                .values()
                .filter(|r| r.tenant == tenant && r.rate_capped)
                .cloned()
                .collect(),
            Err(_) => return,
        };
        let share = total / runs.len().max(1) as f64;
        for run in runs {
            let _ = run.commands.send(job::Command::RpsLimit(share));
        }
    }

    /// Every run going (at shutdown).
    pub fn all_live(&self) -> Vec<Arc<LiveRun>> {
        self.live
            .lock()
            .map(|l| l.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Start the worker of a run recorded as starting, and wait until it
    /// is planned and admitted (or refused).
    pub async fn start(
        self: &Arc<Self>,
        tenant: &str,
        id: &str,
        job: &Job,
        slot: Slot,
    ) -> Result<(), StartError> {
        let files = RunFiles::new(&self.run_dir(id));
        std::fs::create_dir_all(&files.dir)
            .with_context(|| format!("cannot create {}", files.dir.display()))?;
        let job_json = serde_json::to_vec_pretty(job).context("cannot encode the job")?;
        std::fs::write(files.job(), job_json).context("cannot write the job")?;
        let console = std::fs::File::create(files.console()).context("cannot create the log")?;
        let mut child = worker_command(&self.exe)
            .arg("run")
            .arg(&files.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(console)
            .spawn()
            .context("cannot start the run's worker process")?;
        let mut stdout = BufReader::new(child.stdout.take().context("no worker stdout")?);
        let planned = tokio::time::timeout(PLAN_TIMEOUT, first_event(&mut stdout)).await;
        let max_vus = match planned {
            Ok(Ok(Event::Planned { max_vus, .. })) => max_vus,
            Ok(Ok(Event::Refused { limit, message })) => {
                let _ = child.wait().await;
                return Err(match limit {
                    Some(limit) => StartError::Refused(Refusal { limit, message }),
                    None => StartError::Invalid(message),
                });
            }
            other => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                let why = match other {
                    Err(_) => "the worker did not plan the run within 60s".to_owned(),
                    Ok(Err(e)) => format!("{e:#}"),
                    Ok(Ok(e)) => format!("the worker sent {e:?} before planning"),
                };
                let log = console_tail(&files.console());
                return Err(StartError::Internal(anyhow!("{why}; its log: {log}")));
            }
        };
        self.store.run_started(id, max_vus)?;
        let (commands, command_rx) = mpsc::unbounded_channel();
        let (reply_tx, replies) = mpsc::unbounded_channel();
        let (status_tx, status) = watch::channel(Some(json!({
            "paused": job.paused, "vus": 0, "vus-max": max_vus, "stopped": false, "running": true
        })));
        let stop_requested = Arc::new(Mutex::new(0));
        let run = Arc::new(LiveRun {
            tenant: tenant.to_owned(),
            files: files.clone(),
            rate_capped: job.rps_limit.is_some(),
            commands,
            status,
            replies: Mutex::new(Some(replies)),
            stop_requested: stop_requested.clone(),
        });
        if let Ok(mut live) = self.live.lock() {
            live.insert(id.to_owned(), run);
        }
        drop(slot);
        self.share_request_rate(tenant);
        let stdin = child.stdin.take();
        tokio::spawn(feed_commands(stdin, command_rx));
        let (events_done, events_ended) = oneshot::channel();
        tokio::spawn(read_events(
            stdout,
            status_tx.clone(),
            reply_tx,
            events_done,
        ));
        let this = self.clone();
        let id = id.to_owned();
        let tenant = tenant.to_owned();
        let margin = self.wall_margin;
        let wall_limit = Duration::from_secs(job.max_duration_secs) + margin;
        tokio::spawn(async move {
            let started = Instant::now();
            let mut overran = false;
            let exit = tokio::select! {
                exit = child.wait() => exit,
                _ = tokio::time::sleep(wall_limit) => {
                    // Paused time, setup and teardown are not in the
                    // plan's duration: the wall clock bounds them all.
                    overran = true;
                    if let Some(run) = this.live(&id) {
                        run.stop();
                        run.stop();
                    }
                    match tokio::time::timeout(Duration::from_secs(15), child.wait()).await {
                        Ok(exit) => exit,
                        Err(_) => {
                            let _ = child.start_kill();
                            child.wait().await
                        }
                    }
                }
            };
            let _ = events_ended.await;
            let wall = started.elapsed();
            let stops = stop_requested.lock().map(|n| *n).unwrap_or(0);
            let (state, code, message) = match exit {
                Ok(s) => {
                    let code = s.code();
                    let state = match code {
                        _ if stops > 0 => RunState::Stopped,
                        Some(0) | Some(99) => RunState::Finished,
                        _ => RunState::Failed,
                    };
                    let message = if overran {
                        Some(format!(
                            "stopped by the service: the run went on for {}, past its \
                             durationPerRun quota and {} for setup, teardown and pauses",
                            wload_units::format::duration_short(wall_limit),
                            wload_units::format::duration_short(margin)
                        ))
                    } else {
                        (state == RunState::Failed).then(|| console_tail(&files.console()))
                    };
                    (state, code, message)
                }
                Err(e) => (
                    RunState::Failed,
                    None,
                    Some(format!("cannot wait for the worker: {e}")),
                ),
            };
            if let Err(e) = this.store.run_ended(
                &id,
                state,
                code,
                message.as_deref(),
                vu_hours(max_vus, wall),
            ) {
                eprintln!("ERROR wload serve: cannot record the end of run {id}: {e:#}");
            }
            if let Ok(mut live) = this.live.lock() {
                live.remove(&id);
            }
            this.share_request_rate(&tenant);
            let _ = status_tx.send(None);
        });
        Ok(())
    }

    /// Validate and precompile an uploaded component for `memory` bytes
    /// per VU, in a worker process (the compiler never runs on untrusted
    /// input inside the service).
    pub async fn compile(&self, wasm: &Path, cache: &Path, memory: u64) -> Result<(), String> {
        let child = worker_command(&self.exe)
            .arg("compile")
            .arg(wasm)
            .arg(cache)
            .arg(memory.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the compiler process: {e}"))?;
        let out = tokio::time::timeout(COMPILE_TIMEOUT, child.wait_with_output())
            .await
            .map_err(|_| "compiling the test took longer than 5 minutes".to_owned())?
            .map_err(|e| format!("cannot wait for the compiler process: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&out.stderr);
        Err(text.trim().trim_start_matches("error: ").to_owned())
    }
}

fn poisoned() -> Refusal {
    Refusal {
        limit: "concurrentRuns".to_owned(),
        message: "the service's run table is unusable; restart the service".to_owned(),
    }
}

/// `wload worker`, with nothing of the service's environment.
fn worker_command(exe: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("worker").env_clear().kill_on_drop(false);
    // SAFETY: prctl(2) is async-signal-safe; it only sets an attribute of
    // the child between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // Die with the service: its runs must not outlive it.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}

async fn first_event(stdout: &mut BufReader<ChildStdout>) -> Result<Event> {
    let mut line = String::new();
    loop {
        line.clear();
        if stdout.read_line(&mut line).await? == 0 {
            bail!("the worker ended before planning the run");
        }
        if let Ok(event) = serde_json::from_str::<Event>(&line) {
            return Ok(event);
        }
    }
}

async fn feed_commands(
    stdin: Option<tokio::process::ChildStdin>,
    mut commands: mpsc::UnboundedReceiver<job::Command>,
) {
    let Some(mut stdin) = stdin else { return };
    while let Some(command) = commands.recv().await {
        let Ok(mut line) = serde_json::to_vec(&command) else {
            continue;
        };
        line.push(b'\n');
        if stdin.write_all(&line).await.is_err() {
            return;
        }
    }
}

async fn read_events(
    mut stdout: BufReader<ChildStdout>,
    status: watch::Sender<Option<Value>>,
    replies: mpsc::UnboundedSender<Result<Value, String>>,
    done: oneshot::Sender<()>,
) {
    let mut line = String::new();
    loop {
        line.clear();
        match stdout.read_line(&mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        match serde_json::from_str::<Event>(&line) {
            Ok(Event::Status { status: s }) => {
                let _ = status.send(Some(s.clone()));
                let _ = replies.send(Ok(s));
            }
            Ok(Event::CommandFailed { message }) => {
                let _ = replies.send(Err(message));
            }
            _ => {}
        }
    }
    let _ = done.send(());
}

/// The last lines of a run's log that say what went wrong.
pub fn console_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("error") || l.starts_with("ERROR"))
        .collect();
    let lines: Vec<&str> = if errors.is_empty() {
        text.lines()
            .rev()
            .take(5)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect()
    } else {
        errors
    };
    let joined = lines.join("\n");
    if joined.is_empty() {
        "(empty)".to_owned()
    } else {
        joined
    }
}

/// The worker's exit code for a run refused before it started.
pub const REFUSED: u8 = wload_engine::run::exit::INVALID_CONFIG;
