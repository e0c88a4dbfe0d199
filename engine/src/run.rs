//! One test run, start to finish: load and check the test, read its
//! options, plan the executor, run setup, start the VUs, drive them, run
//! teardown, and produce the report. The CLI fills in [`RunOptions`] and
//! prints what comes back; everything in between happens here.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::WasmtimeResult;
use crate::component::{Cache, CompiledTest};
use crate::executor::vu::{explain_trap, untagged};
use crate::executor::{self, ConstantVus, Executor, Outcome, RunControl, SharedIterations, Vu};
use crate::host::{self, RunShared, VuState};
use crate::http::{BodyPool, Client, ClientConfig};
use crate::metrics::{Builtin, Recorder, Registry, TagSet};
use crate::output::{Report, progress};
use crate::sandbox::{Sandbox, SandboxLimits, check_process_limits};

/// Exit codes, shared with k6 where k6 has one.
pub mod exit {
    /// Setup or teardown failed (k6: script exception).
    pub const SCRIPT_ERROR: u8 = 107;
    /// Stopped by the user (Ctrl-C) (k6: external abort).
    pub const ABORTED: u8 = 105;
}

/// An error that ends the run with a specific exit code.
#[derive(Debug)]
pub struct ExitError {
    pub code: u8,
    pub message: String,
}

impl std::fmt::Display for ExitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExitError {}

fn script_error(message: String) -> anyhow::Error {
    ExitError {
        code: exit::SCRIPT_ERROR,
        message,
    }
    .into()
}

/// Where the test comes from.
#[derive(Debug, Clone)]
pub enum TestSource {
    File(PathBuf),
    /// A test built into the binary (`wload demo`).
    Embedded {
        name: String,
        bytes: &'static [u8],
    },
}

impl TestSource {
    pub fn name(&self) -> String {
        match self {
            TestSource::File(p) => p.display().to_string(),
            TestSource::Embedded { name, .. } => name.clone(),
        }
    }
}

/// What the command line asks of a run. `None` means "not given": the
/// test's own options, then the defaults, apply.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub test: TestSource,
    pub vus: Option<u32>,
    pub duration: Option<Duration>,
    pub iterations: Option<u64>,
    pub env: HashMap<String, String>,
    pub tags: Vec<(String, String)>,
    pub limits: SandboxLimits,
    pub http: ClientConfig,
    pub cache: Cache,
    pub quiet: bool,
}

/// A finished run.
pub struct RunOutcome {
    pub report: Report,
    /// 0 unless something failed (see [`exit`]).
    pub exit_code: u8,
    /// Time to instantiate all VUs.
    pub vu_start: Duration,
}

/// The options a test may export, as far as this engine runs them.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TestOptions {
    pub vus: Option<u32>,
    pub duration: Option<Duration>,
    pub iterations: Option<u64>,
}

/// Read the test's exported k6 options; name what is not supported.
pub fn parse_test_options(json: &str) -> Result<(TestOptions, Vec<String>)> {
    let mut out = TestOptions::default();
    let mut unsupported = Vec::new();
    if json.trim().is_empty() {
        return Ok((out, unsupported));
    }
    let value: Value =
        serde_json::from_str(json).context("the test's options() is not valid JSON")?;
    let Value::Object(map) = value else {
        bail!(
            "the test's options() must be a JSON object like {{\"vus\": 10, \"duration\": \"30s\"}}"
        );
    };
    for (key, v) in map {
        match key.as_str() {
            "vus" => {
                out.vus = Some(
                    v.as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .context("options.vus must be a whole number")?,
                )
            }
            "iterations" => {
                out.iterations = Some(
                    v.as_u64()
                        .context("options.iterations must be a whole number")?,
                )
            }
            "duration" => {
                let d = match &v {
                    Value::String(s) => executor::parse_duration(s).map_err(anyhow::Error::msg)?,
                    Value::Number(n) => Duration::from_millis(
                        n.as_u64().context("options.duration must be positive")?,
                    ),
                    _ => bail!("options.duration must be a string like \"30s\""),
                };
                out.duration = Some(d);
            }
            _ => unsupported.push(key),
        }
    }
    Ok((out, unsupported))
}

/// Pick the executor for the `default` scenario, as k6 does for its
/// shortcut options.
pub fn plan(cli: &RunOptions, test: &TestOptions) -> Result<Executor> {
    let vus = cli.vus.or(test.vus);
    let duration = cli.duration.or(test.duration);
    let iterations = cli.iterations.or(test.iterations);
    let executor = match (iterations, duration) {
        (Some(iterations), max) => Executor::SharedIterations(SharedIterations {
            vus: vus.unwrap_or(1),
            iterations,
            max_duration: max.unwrap_or(executor::shared_iterations::DEFAULT_MAX_DURATION),
            graceful_stop: executor::DEFAULT_GRACEFUL_STOP,
        }),
        (None, Some(duration)) => Executor::ConstantVus(ConstantVus {
            vus: vus.unwrap_or(1),
            duration,
            graceful_stop: executor::DEFAULT_GRACEFUL_STOP,
        }),
        // Neither: each VU runs one iteration.
        (None, None) => {
            let vus = vus.unwrap_or(1);
            Executor::SharedIterations(SharedIterations {
                vus,
                iterations: u64::from(vus.max(1)),
                max_duration: executor::shared_iterations::DEFAULT_MAX_DURATION,
                graceful_stop: executor::DEFAULT_GRACEFUL_STOP,
            })
        }
    };
    let checked = match &executor {
        Executor::ConstantVus(e) => e.validate(),
        Executor::SharedIterations(e) => e.validate(),
    };
    if let Err(errors) = checked {
        bail!("invalid options: {}", errors.join("; "));
    }
    Ok(executor)
}

/// How long setup and teardown may take (k6's default).
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Run a test.
pub async fn run(opts: RunOptions) -> Result<RunOutcome> {
    let name = opts.test.name();
    let probe = Sandbox::probe(opts.limits)?;
    let _probe_ticker = probe.start_ticker();
    let compiled = match &opts.test {
        TestSource::File(path) => CompiledTest::load(&probe.engine, path, &opts.cache)?,
        TestSource::Embedded { name, bytes } => CompiledTest::from_bytes(
            &probe.engine,
            std::path::Path::new(name),
            bytes,
            &opts.cache,
        )?,
    };

    let registry = Arc::new(Registry::new());
    let recorder = Arc::new(Recorder::new(registry));
    let shared = Arc::new(RunShared {
        recorder: recorder.clone(),
        client: Arc::new(Client::new(opts.http.clone(), BodyPool::new(1024))?),
        env: opts.env.clone(),
        setup_data: OnceLock::new(),
        run_tags: TagSet::new(opts.tags.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
    });

    // The setup/teardown instance also answers options() and functions().
    let pre = compiled.instance_pre(&probe.engine)?;
    let mut store = host::new_store(
        &probe.engine,
        VuState::new(shared.clone(), &probe, 0, "setup"),
    );
    let test = pre
        .instantiate_async(&mut store)
        .await
        .anyhow()
        .context("cannot instantiate the test")?;
    let options_json = test
        .call_options(&mut store)
        .await
        .anyhow()
        .context("the test's options() failed")?;
    let (test_options, unsupported) = parse_test_options(&options_json)?;
    for key in unsupported {
        eprintln!(
            "WARN the test's option {key:?} is not supported by this version of wload and has no effect"
        );
    }
    let functions = test
        .call_functions(&mut store)
        .await
        .anyhow()
        .context("the test's functions() failed")?;
    if !functions.iter().any(|f| f == "default") {
        bail!(
            "{name} has no entry point \"default\" (it exports {}); the default scenario runs \"default\"",
            functions.join(", ")
        );
    }
    let executor = plan(&opts, &test_options)?;
    let max_vus = executor.max_vus();
    check_process_limits(u64::from(max_vus))?;

    let ctl = RunControl::new(probe.hard_stop.clone());
    let mut exit_code = 0u8;
    let interrupt = tokio::spawn(watch_ctrl_c(ctl.clone()));

    // setup
    match tokio::time::timeout(SETUP_TIMEOUT, test.call_setup(&mut store)).await {
        Ok(Ok(Ok(data))) => {
            let _ = shared.setup_data.set(data);
        }
        Ok(Ok(Err(message))) => return Err(script_error(format!("setup failed: {message}"))),
        Ok(Err(trap)) => {
            let why = describe(explain_trap(store.data_mut(), &trap));
            return Err(script_error(format!("setup failed: {why}")));
        }
        Err(_) => {
            return Err(script_error(format!(
                "setup did not finish within {}s",
                SETUP_TIMEOUT.as_secs()
            )));
        }
    }

    // VUs: all instantiated before the clock starts, as k6 does.
    let pool = Sandbox::pooled(opts.limits, max_vus + 1, compiled.needs)?
        .with_hard_stop(probe.hard_stop.clone());
    let _pool_ticker = pool.start_ticker();
    let vu_pre = Arc::new(compiled.instance_pre(&pool.engine)?);
    let init = Instant::now();
    let mut vus = Vec::with_capacity(max_vus as usize);
    for id in 1..=max_vus {
        vus.push(
            Vu::new(
                id,
                "default",
                "default",
                vu_pre.clone(),
                pool.clone(),
                shared.clone(),
            )
            .await?,
        );
    }
    let vu_start = init.elapsed();
    let untagged = untagged();
    recorder.record(
        &untagged,
        &[
            (Builtin::VusMax.id(), f64::from(max_vus)),
            (Builtin::Vus.id(), f64::from(max_vus)),
        ],
    );

    if !opts.quiet {
        let total = executor.max_duration() + executor.graceful_stop();
        eprintln!(
            "{}",
            progress::header(&name, "default", max_vus, total, &executor.describe())
        );
        eprintln!(
            "  initialized {max_vus} VUs in {}\n",
            crate::output::format::millis(vu_start.as_secs_f64() * 1e3)
        );
    }
    let progress_task = tokio::spawn(progress::run(
        ctl.clone(),
        recorder.clone(),
        executor.max_duration(),
        max_vus,
        opts.quiet,
    ));
    let started = Instant::now();
    executor.run(vus, ctl.clone()).await;
    let elapsed = started.elapsed();
    progress_task.abort();
    progress::finish(opts.quiet);

    // teardown: runs even after Ctrl-C, unless the run was hard-stopped.
    if !ctl.hard_stopped() {
        store.data_mut().running_since = Instant::now();
        let outcome =
            match tokio::time::timeout(SETUP_TIMEOUT, test.call_teardown(&mut store)).await {
                Ok(Ok(Ok(()))) => None,
                Ok(Ok(Err(message))) => Some(message),
                Ok(Err(trap)) => Some(describe(explain_trap(store.data_mut(), &trap))),
                Err(_) => Some(format!(
                    "did not finish within {}s",
                    SETUP_TIMEOUT.as_secs()
                )),
            };
        if let Some(message) = outcome {
            eprintln!("ERROR teardown failed: {message}");
            exit_code = exit::SCRIPT_ERROR;
        }
    }
    interrupt.abort();
    if ctl.aborted.load(Ordering::Relaxed) {
        exit_code = exit::ABORTED;
    }

    let report = Report {
        snapshot: recorder.snapshot(),
        metrics: recorder.registry().all(),
        elapsed,
        failures: ctl.failures.summary(),
        interrupted: ctl.progress.interrupted.load(Ordering::Relaxed),
    };
    Ok(RunOutcome {
        report,
        exit_code,
        vu_start,
    })
}

fn describe(outcome: Outcome) -> String {
    match outcome {
        Outcome::Failed(m) => m,
        Outcome::Interrupted => "interrupted".to_owned(),
        Outcome::Completed => "completed".to_owned(),
    }
}

/// First Ctrl-C: stop starting iterations, let running ones finish.
/// Second: stop now.
async fn watch_ctrl_c(ctl: Arc<RunControl>) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    ctl.aborted.store(true, Ordering::Relaxed);
    ctl.stop_gracefully();
    eprintln!("\nstopping: waiting for running iterations to finish (Ctrl-C again to stop now)");
    if tokio::signal::ctrl_c().await.is_ok() {
        ctl.stop_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli() -> RunOptions {
        RunOptions {
            test: TestSource::File("t.wasm".into()),
            vus: None,
            duration: None,
            iterations: None,
            env: HashMap::new(),
            tags: Vec::new(),
            limits: SandboxLimits::default(),
            http: ClientConfig::default(),
            cache: Cache::disabled(),
            quiet: true,
        }
    }

    #[test]
    fn test_options_parse_and_unknown_keys_are_named() {
        let (o, unknown) =
            parse_test_options(r#"{"vus": 5, "duration": "1m", "thresholds": {}}"#).unwrap();
        assert_eq!(o.vus, Some(5));
        assert_eq!(o.duration, Some(Duration::from_secs(60)));
        assert_eq!(unknown, vec!["thresholds".to_owned()]);
        assert!(parse_test_options("[1]").is_err());
        assert!(parse_test_options(r#"{"duration": "10x"}"#).is_err());
        assert_eq!(parse_test_options("").unwrap().0, TestOptions::default());
    }

    #[test]
    fn cli_overrides_the_test_and_shortcuts_pick_executors() {
        let test = TestOptions {
            vus: Some(3),
            duration: Some(Duration::from_secs(5)),
            iterations: None,
        };
        let mut o = cli();
        match plan(&o, &test).unwrap() {
            Executor::ConstantVus(e) => {
                assert_eq!((e.vus, e.duration), (3, Duration::from_secs(5)))
            }
            other => panic!("{other:?}"),
        }
        o.vus = Some(7);
        o.iterations = Some(70);
        match plan(&o, &test).unwrap() {
            Executor::SharedIterations(e) => {
                assert_eq!(
                    (e.vus, e.iterations, e.max_duration),
                    (7, 70, Duration::from_secs(5))
                )
            }
            other => panic!("{other:?}"),
        }
        o.iterations = Some(3);
        let err = plan(&o, &test).unwrap_err().to_string();
        assert!(err.contains("must not exceed"), "{err}");
    }
}
