//! `wload worker`: the child process of one run (or one compile) of the
//! service. The service starts it with an empty environment; everything
//! it needs is in the job file. It drives the same engine as `wload run`,
//! with the tenant's limits: memory per VU, CPU per guest call, request
//! rate, egress policy, and the run's shape checked against the quotas
//! once the engine has planned it, before setup sends anything.
//!
//! Protocol (see [`crate::job`]): events as JSON lines on stdout, k6
//! status patches as JSON lines on stdin, the console on stderr.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use wload_engine::component::{Cache, CompiledTest};
use wload_engine::executor::Segment;
use wload_engine::plugin::caps::Grants;
use wload_engine::plugin::params::RawParam;
use wload_engine::plugin::{self, GuestKind};
use wload_engine::rate::RpsCap;
use wload_engine::run::{self, ExitError, RunHandle, RunOptions, RunPlan, TestSource};
use wload_engine::sandbox::{Sandbox, SandboxLimits};
use wload_http::ClientConfig;
use wload_output::progress::ProgressFrames;
use wload_output::stream::OutSpec;
use wload_output::{export, summary};

use crate::job::{Command, Event, Job, ProgressFrame, RunFiles, StatusPatch};
use crate::quota::{Quotas, Refusal, Shape};

/// `wload worker run DIR` or `wload worker compile WASM CACHE MEMORY`.
pub async fn main(args: &[String]) -> Result<u8> {
    match args {
        [mode, dir] if mode == "run" => run(Path::new(dir)).await,
        [mode, wasm, cache, memory] if mode == "compile" => {
            let memory = memory
                .parse()
                .context("the memory per VU must be a number")?;
            compile(Path::new(wasm), Path::new(cache), memory).await?;
            Ok(0)
        }
        _ => bail!(
            "wload worker is started by wload serve: `worker run DIR` or `worker compile WASM \
             CACHE MEMORY`"
        ),
    }
}

/// Check and compile an upload (a test or a scenario plugin) into the
/// cache, for VUs of `memory` bytes.
async fn compile(wasm: &Path, cache: &Path, memory: u64) -> Result<()> {
    let bytes = std::fs::read(wasm).with_context(|| format!("cannot read {}", wasm.display()))?;
    let probe = Sandbox::probe(SandboxLimits {
        memory,
        ..SandboxLimits::default()
    })?;
    let compiled = CompiledTest::from_bytes(
        &probe.engine,
        wasm,
        &bytes,
        &Cache::new(Some(cache.to_owned())),
    )?;
    // Links against the world now, so that a test importing what wload
    // does not provide is refused at upload rather than at its first run.
    compiled.guest_pre(&probe.engine, Vec::new())?;
    if compiled.kind == GuestKind::Plugin {
        // A plugin that cannot say what it takes could never be run: its
        // describe() runs here, in this process, with no address to
        // contact; the guest timeout cuts one that loops.
        let _ticker = probe.start_ticker();
        plugin::describe(&compiled, &probe)
            .await
            .context("the plugin cannot describe itself")?;
    }
    Ok(())
}

/// One line on stdout, flushed at once (the service waits for it).
fn emit(event: &Event) {
    if let Ok(line) = serde_json::to_string(event) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

async fn run(dir: &Path) -> Result<u8> {
    let files = RunFiles::new(dir);
    let job: Job = serde_json::from_slice(
        &std::fs::read(files.job())
            .with_context(|| format!("cannot read {}", files.job().display()))?,
    )
    .context("invalid job file")?;
    let mut options = job.options.clone();
    if job.paused {
        options.insert("paused".into(), serde_json::Value::Bool(true));
    }
    // The API refuses these (they name files, which here would be the
    // service's); a job must never make the worker read a file by name.
    options.remove("params");
    options.remove("with");
    let options_file = dir.join("options.json");
    std::fs::write(&options_file, serde_json::to_vec(&options)?)
        .context("cannot write the run's options")?;

    let handle = RunHandle::new();
    let refusal: Arc<Mutex<Option<Refusal>>> = Arc::default();
    let planned = Arc::new(Mutex::new(false));
    let admit = {
        let refusal = refusal.clone();
        let planned = planned.clone();
        let quotas = Quotas {
            vus_per_run: job.max_vus,
            duration_per_run: job.max_duration_secs,
            vu_hours_per_period: job.vu_hours_left,
            ..Quotas::default()
        };
        Box::new(move |plan: &RunPlan| {
            let shape = Shape {
                max_vus: plan.max_vus,
                max_duration: plan.max_duration,
            };
            match quotas.admit_shape(shape, 0.0) {
                Ok(()) => {
                    if let Ok(mut p) = planned.lock() {
                        *p = true;
                    }
                    emit(&Event::Planned {
                        max_vus: plan.max_vus,
                        max_duration_secs: plan.max_duration.as_secs_f64(),
                    });
                    Ok(())
                }
                Err(r) => {
                    let message = r.message.clone();
                    if let Ok(mut slot) = refusal.lock() {
                        *slot = Some(r);
                    }
                    Err(message)
                }
            }
        })
    };
    // Invalid shares are the service's bug, not the tenant's: a quota is
    // checked when it is set.
    let rps_cap = job.rps_limit.and_then(RpsCap::new);
    let opts = RunOptions {
        test: TestSource::Named {
            path: job.test.clone(),
            name: job.name.clone(),
        },
        cli_options: Default::default(),
        env_options: Default::default(),
        params: job
            .params
            .iter()
            .map(|(name, text)| RawParam::literal(name, text))
            .collect(),
        with: Vec::new(),
        // A confined plugin's hosts must be inside the tenant's egress
        // policy, and it is held to them and to the env it declares.
        grants: Grants::tenant(&job.egress),
        config_file: Some(options_file),
        env: job.env.clone().into_iter().collect(),
        limits: SandboxLimits {
            memory: job.memory_per_vu,
            guest_timeout: Duration::from_millis(job.cpu_per_call_ms),
        },
        http: ClientConfig::default(),
        cache: Cache::new(Some(job.cache.clone())),
        segment: Segment::default(),
        quiet: false,
        progress: Some(progress_frames(&files)?),
        outputs: vec![OutSpec::Json(files.intervals()), OutSpec::Hdr(files.hdr())],
        out_interval: Duration::from_millis(job.interval_ms.max(10)),
        sinks: Vec::new(),
        admit: Some(admit),
        handle: Some(handle.clone()),
        rps_limit: rps_cap.clone(),
        start_at: None,
        egress: Some(job.egress.clone()),
    };
    tokio::spawn(follow_commands(handle, rps_cap));
    let outcome = match run::run(opts).await {
        Ok(outcome) => outcome,
        Err(e) => {
            let was_planned = planned.lock().map(|p| *p).unwrap_or(true);
            let code = e.downcast_ref::<ExitError>().map_or(1, |x| x.code);
            if !was_planned {
                let limit = refusal.lock().ok().and_then(|mut r| r.take());
                emit(&Event::Refused {
                    limit: limit.as_ref().map(|r| r.limit.clone()),
                    message: limit.map_or_else(|| format!("{e:#}"), |r| r.message),
                });
            }
            eprintln!("error: {e:#}");
            return Ok(code);
        }
    };
    write(
        &files.summary_text(),
        summary::render(&outcome.report).as_bytes(),
    )?;
    let export = serde_json::to_vec_pretty(&export::to_json(&outcome.report))?;
    write(&files.summary(), &export)?;
    Ok(outcome.exit_code)
}

/// The progress display's drawings go to `progress.jsonl`, one frame a
/// line, for the service's `progress` events; the console keeps the
/// header and the errors.
fn progress_frames(files: &RunFiles) -> Result<ProgressFrames> {
    let path = files.progress();
    let file = std::fs::File::create(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let file = Mutex::new(std::io::LineWriter::new(file));
    Ok(Arc::new(move |lines: &[String], last: bool| {
        let frame = ProgressFrame {
            lines: lines.to_vec(),
            last,
        };
        if let (Ok(line), Ok(mut f)) = (serde_json::to_string(&frame), file.lock()) {
            let _ = writeln!(f, "{line}");
        }
    }))
}

fn write(path: &PathBuf, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// Apply the service's commands: status patches in k6's order (paused,
/// vus-max, vus, stopped), each answered with the status after it, and
/// changes of the run's request-rate share. The end of stdin means the
/// service is gone: the run stops at once.
async fn follow_commands(handle: RunHandle, rps_cap: Option<RpsCap>) {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let patch: StatusPatch = match serde_json::from_str(&line) {
            Ok(Command::Status(p)) => p,
            Ok(Command::RpsLimit(per_second)) => {
                match &rps_cap {
                    Some(cap) if cap.set(per_second) => {}
                    _ => eprintln!(
                        "ERROR wload worker: cannot pace to {per_second} requests per second"
                    ),
                }
                continue;
            }
            Err(e) => {
                emit(&Event::CommandFailed {
                    message: format!("invalid command: {e}"),
                });
                continue;
            }
        };
        match apply(&handle, &patch).await {
            Ok(()) => emit(&Event::Status {
                status: json!(handle.status()),
            }),
            Err(message) => emit(&Event::CommandFailed { message }),
        }
    }
    handle.stop();
    handle.stop();
}

/// How long a reply waits for the VUs to reach a new count: VUs start
/// and stop asynchronously, and the answer should show the change made.
const SETTLE: Duration = Duration::from_secs(1);

async fn apply(handle: &RunHandle, patch: &StatusPatch) -> Result<(), String> {
    // The service hears "planned" from the admission, just before the
    // engine attaches the handle: a change sent at once waits for it.
    let asked = std::time::Instant::now();
    while !handle.is_attached() && asked.elapsed() < SETTLE {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if let Some(paused) = patch.paused {
        handle.set_paused(paused)?;
    }
    if patch.vus.is_some() || patch.vus_max.is_some() {
        handle.scale(patch.vus, patch.vus_max)?;
        if let Some(vus) = patch.vus {
            let started = std::time::Instant::now();
            while handle.status().vus != vus && started.elapsed() < SETTLE {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    if patch.stopped == Some(true) {
        handle.stop();
    }
    Ok(())
}
