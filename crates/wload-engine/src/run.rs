//! One test run, start to finish: load and check the test, read its
//! options, plan the executor, run setup, start the VUs, drive them, run
//! teardown, and produce the report. The CLI fills in [`RunOptions`] and
//! prints what comes back; everything in between happens here, one
//! function per stage, in the order [`run`] calls them.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use serde_json::{Map, Value};

use wasmtime::Store;
use wload_http::{BodyPool, Client, ClientConfig, EgressPolicy};
use wload_metrics::threshold::{self, Threshold};
use wload_metrics::{Builtin, Recorder, Registry, TagSet, untagged};
use wload_output::live::Live;
use wload_output::progress::{self, Display, ProgressFrames, ScenarioPlan, ScenarioProgress};
use wload_output::stream::{OutSpec, Output, Outputs, RunStart};
use wload_output::{Report, RunClock};
use wload_units::format;

use crate::component::{Cache, CompiledTest};
use crate::config;
use crate::executor::vu::explain_trap;
use crate::executor::{
    self, Outcome, RunControl, Scenario, ScenarioConfig, Segment, StopSignal, Vu, VuFactory,
};
pub use crate::executor::{RunHandle, RunStatus};
use crate::host::{self, RunShared, VuScenario, VuState};
use crate::plugin::caps::{self, Confinement, Grants};
use crate::plugin::compose::{self, Library};
use crate::plugin::params::{self as plugin_params, RawParam};
use crate::plugin::{self, Description, Guest, GuestKind, Param};
use crate::rate::{RateLimiter, RpsCap};
use crate::sandbox::{Sandbox, SandboxLimits, check_process_limits};
use crate::task::Owned;

/// Exit codes, shared with k6 where k6 has one.
pub mod exit {
    /// Setup or teardown failed (k6: script exception).
    pub const SCRIPT_ERROR: u8 = 107;
    /// Stopped by the user (Ctrl-C) (k6: external abort).
    pub const ABORTED: u8 = 105;
    /// The options are invalid (k6: invalid config).
    pub const INVALID_CONFIG: u8 = 104;
    /// A threshold failed (k6: thresholds have failed).
    pub const THRESHOLDS_FAILED: u8 = 99;
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

fn invalid_config(message: String) -> anyhow::Error {
    ExitError {
        code: exit::INVALID_CONFIG,
        message,
    }
    .into()
}

/// Where the test comes from.
#[derive(Debug, Clone)]
pub enum TestSource {
    File(PathBuf),
    /// A file shown by another name (a test uploaded to `wload serve`,
    /// kept under its content hash).
    Named {
        path: PathBuf,
        name: String,
    },
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
            TestSource::Named { name, .. } => name.clone(),
            TestSource::Embedded { name, .. } => name.clone(),
        }
    }
}

/// The admission check of a run (a service's quotas): given the run's
/// plan once its options are known, before setup and before any VU; an
/// `Err` ends the run with its message and exit code 104, nothing sent.
pub type Admit = Box<dyn FnOnce(&RunPlan) -> Result<(), String> + Send>;

/// What a run will take at most, as planned from its options: for
/// [`Admit`] to hold against quotas.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlan {
    /// VUs of all scenarios together.
    pub max_vus: u32,
    /// The longest startTime + duration (or maxDuration) + gracefulStop
    /// of the scenarios; setup and teardown timeouts not included. An
    /// externally-controlled scenario of duration 0 (until stopped)
    /// counts `wload_units::MAX_DURATION`. Time paused is not in it: the
    /// wait of a run started paused, and an externally-controlled
    /// scenario's pauses (which do not count against its duration).
    pub max_duration: Duration,
    pub scenarios: Vec<ScenarioPlan>,
}

/// What the command line (or a service) asks of a run.
pub struct RunOptions {
    pub test: TestSource,
    /// Options set by flags (`--vus`, `--duration`, `--stage`, `--tag`…),
    /// as a k6 options object.
    pub cli_options: Map<String, Value>,
    /// Options set by `WLOAD_*` environment variables.
    pub env_options: Map<String, Value>,
    /// `--config FILE`.
    pub config_file: Option<PathBuf>,
    /// `-e KEY=VALUE` variables for the test.
    pub env: HashMap<String, String>,
    /// `-p NAME=VALUE` parameters of a plugin, in the order given; they
    /// override the options file's `params`. A test takes none.
    pub params: Vec<RawParam>,
    /// `--with PLUGIN.wasm`: library plugins the test imports from,
    /// linked into it at load time, after the options file's `with`.
    pub with: Vec<PathBuf>,
    /// What a plugin that declares capabilities may reach: `--allow-host`,
    /// `--allow-env` (see [`plugin::caps`]); a test ignores them.
    pub grants: Grants,
    pub limits: SandboxLimits,
    pub http: ClientConfig,
    pub cache: Cache,
    pub segment: Segment,
    pub quiet: bool,
    /// Where the progress display's drawings go instead of stderr (a run
    /// on `wload serve`, shown by its remote client).
    pub progress: Option<ProgressFrames>,
    /// `--out` files, written every `out_interval`.
    pub outputs: Vec<OutSpec>,
    /// The aggregation interval of the outputs and the progress display.
    pub out_interval: Duration,
    /// Interval sinks of other crates (the dashboard, the HTML report's
    /// timeline), each with the name its errors give; fed as the `--out`
    /// files are.
    pub sinks: Vec<(String, Box<dyn Output>)>,
    /// The tenant's egress policy (`wload serve`), on every request of
    /// the run from `options()` on; the test's `blacklistIPs` and
    /// `blockHostnames` can narrow it, nothing widens it. When set it
    /// replaces `http.egress`. `None`: only the test's options apply.
    pub egress: Option<EgressPolicy>,
    /// Called with the plan before setup: `Err` refuses the run.
    pub admit: Option<Admit>,
    /// The run's controls for its caller: stop, pause, scale, status.
    pub handle: Option<RunHandle>,
    /// Requests per second at most, whatever the options' `rps` says (a
    /// tenant's quota): the run goes at the lower of the two. The caller
    /// may change it while the run goes.
    pub rps_limit: Option<RpsCap>,
    /// `--start-at`: once setup has run and the VUs are ready, wait for
    /// this wall-clock time before starting the clock, so that the shards
    /// of a distributed run start together.
    pub start_at: Option<SystemTime>,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("test", &self.test)
            .field("cli_options", &self.cli_options)
            .field("env_options", &self.env_options)
            .field("config_file", &self.config_file)
            .field("env", &self.env)
            .field("params", &self.params)
            .field("with", &self.with)
            .field("grants", &self.grants)
            .field("limits", &self.limits)
            .field("http", &self.http)
            .field("segment", &self.segment)
            .field("quiet", &self.quiet)
            .field("progress", &self.progress.as_ref().map(|_| "…"))
            .field("outputs", &self.outputs)
            .field("out_interval", &self.out_interval)
            .field(
                "sinks",
                &self.sinks.iter().map(|(name, _)| name).collect::<Vec<_>>(),
            )
            .field("admit", &self.admit.as_ref().map(|_| "…"))
            .field("handle", &self.handle)
            .field("rps_limit", &self.rps_limit)
            .field("egress", &self.egress)
            .field("start_at", &self.start_at)
            .finish_non_exhaustive()
    }
}

/// A finished run.
pub struct RunOutcome {
    pub report: Report,
    /// 0 unless something failed (see [`exit`]).
    pub exit_code: u8,
    /// Time to instantiate the pre-allocated VUs.
    pub vu_start: Duration,
}

/// Run a test: each stage below in turn, any failure ending the run with
/// its message (and, for [`ExitError`]s, its exit code).
pub async fn run(mut opts: RunOptions) -> Result<RunOutcome> {
    let probe = Sandbox::probe(opts.limits)?;
    let _probe_ticker = probe.start_ticker();
    let mut file_options = match &opts.config_file {
        Some(path) => config::file_layer(path)?,
        None => Map::new(),
    };
    let mut with = match &opts.config_file {
        Some(path) => {
            compose::take_from_options(&mut file_options, path).map_err(invalid_config)?
        }
        None => Vec::new(),
    };
    with.extend(opts.with.iter().cloned());
    let compiled = load(&opts, &probe, &with)?;
    let mut given = match &opts.config_file {
        Some(path) => plugin_params::take_from_options(&mut file_options, path)
            .map_err(|e| invalid_config(format!("{e:#}")))?,
        None => Vec::new(),
    };
    given.extend(opts.params.iter().cloned());
    // Before any instance runs: a wrong parameter sends nothing.
    let (params, description) = plugin_params(&opts, &probe, &compiled, &given).await?;
    // Before any instance is configured: an ungranted host sends nothing.
    let confinement = confine(&mut opts, &probe, &compiled, &params, description.as_ref()).await?;
    let recorder = Arc::new(Recorder::new(Arc::new(Registry::new())));
    let mut test = ProbeInstance::start(
        &opts,
        &probe,
        &compiled,
        &recorder,
        &params,
        description.as_ref(),
    )
    .await?;
    let mut options = test.options(&opts, file_options, &recorder).await?;
    if let Some(c) = &confinement {
        for s in &mut options.scenarios {
            c.apply_env(&mut s.env);
        }
    }
    test.apply_run_options(&opts, &options)?;
    let seg = opts.segment;
    let plan = plan(&options, &seg);
    let max_vus = plan.max_vus;
    if let Some(admit) = opts.admit.take() {
        admit(&plan).map_err(invalid_config)?;
    }
    check_process_limits(u64::from(max_vus), opts.http.local_ips.as_deref())?;

    let ctl = RunControl::new(probe.hard_stop.clone());
    ctl.plan(&options.scenarios, seg, options.paused);
    if let Some(handle) = &opts.handle {
        handle.attach(&ctl);
    }
    // Aborted on every way out of this function, early returns included.
    let grace = options
        .scenarios
        .iter()
        .map(|s| s.graceful_stop)
        .max()
        .unwrap_or(executor::DEFAULT_GRACEFUL_STOP);
    let interrupt = Owned::spawn(watch_interrupts(ctl.clone(), grace));
    // Opened before setup's first request: an unwritable --out is found
    // before any load, not after it.
    let mut outputs = Outputs::open(&opts.outputs, SystemTime::now())?;
    for (name, sink) in std::mem::take(&mut opts.sinks) {
        outputs.add(&name, sink);
    }
    // A run stopped before it began (by its handle) sends nothing.
    let setup_ran = !ctl.stopping();
    if setup_ran {
        test.setup(options.setup_timeout).await?;
    }

    // VUs: the pre-allocated ones are instantiated before the clock starts.
    let pool = Sandbox::pooled(opts.limits, max_vus + 1, compiled.needs)?
        .with_hard_stop(probe.hard_stop.clone());
    let _pool_ticker = pool.start_ticker();
    let init = Instant::now();
    let prepared = prepare_scenarios(
        &options,
        &compiled,
        params,
        &pool,
        &test.shared,
        &seg,
        &ctl.stop,
    )
    .await?;
    let vu_start = init.elapsed();
    recorder.record(&untagged(), &[(Builtin::VusMax.id(), f64::from(max_vus))]);
    ctl.vus_max.store(max_vus, Ordering::Relaxed);
    if !opts.quiet {
        let initial_vus: usize = prepared.iter().map(|p| p.vus.len()).sum();
        eprintln!(
            "{}",
            header(&opts.test.name(), &options, &prepared, max_vus, &seg)
        );
        eprintln!(
            "  initialized {initial_vus} VUs in {}\n",
            format::millis(vu_start.as_secs_f64() * 1e3)
        );
        if ctl.paused() {
            eprintln!(
                "  paused: waiting to be resumed through the run's controller (Ctrl-C stops)\n"
            );
        }
    }
    // k6's --paused: everything is ready, the clock has not started.
    ctl.wait_resumed().await;

    if let Some(at) = opts.start_at {
        wait_until(at, opts.quiet).await;
    }
    let started = SystemTime::now();
    let (elapsed, live) =
        drive(&opts, &options, prepared, outputs, &recorder, &ctl, max_vus).await?;

    // teardown: runs even after Ctrl-C, unless the run was hard-stopped.
    let mut exit_code = 0u8;
    if setup_ran
        && !ctl.hard_stopped()
        && let Some(message) = test.teardown(options.teardown_timeout).await
    {
        eprintln!("ERROR teardown failed: {message}");
        exit_code = exit::SCRIPT_ERROR;
    }
    drop(interrupt);
    // The last interval (teardown included) goes to the outputs too.
    live.finish()?;
    if ctl.aborted.load(Ordering::Relaxed) {
        exit_code = exit::ABORTED;
    }
    let clock = RunClock {
        started,
        metrics_zero: SystemTime::now()
            .checked_sub(recorder.elapsed())
            .unwrap_or(SystemTime::UNIX_EPOCH),
        start_at: opts.start_at,
    };
    let report = report(&options, &recorder, &ctl, elapsed, clock);
    if report.thresholds.iter().any(|o| !o.verdict.ok) && exit_code == 0 {
        exit_code = exit::THRESHOLDS_FAILED;
    }
    Ok(RunOutcome {
        report,
        exit_code,
        vu_start,
    })
}

/// What the run will take at most, from its resolved options.
fn plan(options: &config::Options, seg: &Segment) -> RunPlan {
    RunPlan {
        max_vus: options
            .scenarios
            .iter()
            .map(|s| s.executor.max_vus(seg))
            .sum(),
        max_duration: options
            .scenarios
            .iter()
            .map(ScenarioConfig::end)
            .max()
            .unwrap_or_default(),
        scenarios: options.scenarios.iter().map(|s| s.plan(seg)).collect(),
    }
}

/// Load the test, linked with the library plugins `with`, and compile it
/// (or take it from the cache).
fn load(opts: &RunOptions, probe: &Sandbox, with: &[PathBuf]) -> Result<CompiledTest> {
    let with = with
        .iter()
        .map(|p| Library::read(p))
        .collect::<Result<Vec<_>>>()?;
    match &opts.test {
        TestSource::File(path) | TestSource::Named { path, .. } => {
            CompiledTest::load_with(&probe.engine, path, &with, &opts.cache)
        }
        TestSource::Embedded { name, bytes } => CompiledTest::from_bytes_with(
            &probe.engine,
            std::path::Path::new(name),
            bytes,
            &with,
            &opts.cache,
        ),
    }
}

/// A plugin's parameters, checked against its description (which comes
/// back too, for the docs of later errors); a test must be given none.
async fn plugin_params(
    opts: &RunOptions,
    probe: &Sandbox,
    compiled: &CompiledTest,
    given: &[RawParam],
) -> Result<(Vec<Param>, Option<Description>)> {
    if compiled.kind == GuestKind::Test {
        if let Some(p) = given.first() {
            return Err(invalid_config(format!(
                "{} is a test, not a plugin: parameters ({}) are for plugins; pass values to a \
                 test with -e KEY=VALUE",
                opts.test.name(),
                p.name
            )));
        }
        return Ok((Vec::new(), None));
    }
    let description = plugin::describe(compiled, probe)
        .await
        .with_context(|| format!("{} cannot describe itself", opts.test.name()))?;
    let params = plugin_params::resolve(&description, given).map_err(invalid_config)?;
    Ok((params, Some(description)))
}

/// A confined plugin's capabilities, checked against the run's grants and
/// applied to `opts`; `None` for a test or a plugin that declares none.
async fn confine(
    opts: &mut RunOptions,
    probe: &Sandbox,
    compiled: &CompiledTest,
    params: &[Param],
    description: Option<&Description>,
) -> Result<Option<Confinement>> {
    let Some(description) = description else {
        return Ok(None);
    };
    let Some(declared) = caps::declared(compiled, probe)
        .await
        .with_context(|| format!("{} cannot declare its capabilities", opts.test.name()))?
    else {
        return Ok(None);
    };
    let confinement =
        caps::check(&description.name, &declared, params, &opts.grants).map_err(invalid_config)?;
    confinement.apply(opts);
    Ok(Some(confinement))
}

/// The test's instance on the probe engine: it answers `options()` and
/// `functions()`, and runs setup and teardown.
struct ProbeInstance {
    store: Store<VuState>,
    test: Guest,
    /// What every VU shares; the run's client and tags once the options
    /// are known.
    shared: Arc<RunShared>,
}

/// The egress policy the run starts from, before the test's options
/// narrow it: the tenant's, or else the one the caller's client settings
/// carry.
fn egress_base(opts: &RunOptions) -> Option<Arc<EgressPolicy>> {
    match &opts.egress {
        Some(tenant) => Some(Arc::new(tenant.clone())),
        None => opts.http.egress.clone(),
    }
}

/// State every VU of the run shares, with `run_tags` and `client`.
fn run_shared(
    opts: &RunOptions,
    recorder: &Arc<Recorder>,
    run_tags: TagSet,
    client: Arc<Client>,
    rps: Option<RateLimiter>,
) -> Arc<RunShared> {
    Arc::new(RunShared {
        recorder: recorder.clone(),
        client,
        env: opts.env.clone(),
        setup_data: OnceLock::new(),
        run_tags,
        rps,
    })
}

impl ProbeInstance {
    async fn start(
        opts: &RunOptions,
        probe: &Sandbox,
        compiled: &CompiledTest,
        recorder: &Arc<Recorder>,
        params: &[Param],
        description: Option<&Description>,
    ) -> Result<ProbeInstance> {
        let pre = compiled.guest_pre(&probe.engine, params.to_vec())?;
        let setup_scenario = VuScenario::new(
            "setup",
            HashMap::new(),
            [],
            &TagSet::empty(),
            Default::default(),
        );
        // options() runs before the options are known: default client,
        // but already under the tenant's policy.
        let config = ClientConfig {
            egress: egress_base(opts),
            ..ClientConfig::default()
        };
        let shared = run_shared(
            opts,
            recorder,
            TagSet::empty(),
            Arc::new(Client::new(config, BodyPool::new(1))?),
            None,
        );
        let mut store = host::new_store(
            &probe.engine,
            VuState::new(shared.clone(), probe, 0, setup_scenario),
        );
        let test = match pre.instantiate_async(&mut store).await {
            Ok(test) => test,
            Err(e) => {
                // The plugin's own check of its parameters: refused like
                // the engine's, with the docs of the parameter at fault.
                if let Some(plugin::Refused(refusal)) = e.downcast_ref() {
                    let message = format!("{}: {}", refusal.name, refusal.message);
                    let spec =
                        description.and_then(|d| d.params.iter().find(|p| p.name == refusal.name));
                    return Err(invalid_config(match (spec, description) {
                        (Some(spec), Some(d)) => format!(
                            "invalid parameters for the plugin {} (1 problem):\n\n{}",
                            d.name,
                            plugin_params::with_docs(&message, spec)
                        ),
                        _ => format!("the plugin refused its parameters: {message}"),
                    }));
                }
                return Err(e.context("cannot instantiate the test"));
            }
        };
        Ok(ProbeInstance {
            store,
            test,
            shared,
        })
    }

    /// The run's options: the test's own, the config file's, `WLOAD_*`
    /// and the flags, merged in that order of precedence and checked
    /// against the test (its metrics and entry points).
    async fn options(
        &mut self,
        opts: &RunOptions,
        file_options: Map<String, Value>,
        recorder: &Recorder,
    ) -> Result<config::Options> {
        // A trap here is the script's (a JS test's init code runs on this
        // first call): explained like setup's, with what the guest reported.
        let options_json = match self.test.call_options(&mut self.store).await {
            Ok(json) => json,
            Err(trap) => {
                let why = describe(explain_trap(self.store.data_mut(), &trap));
                return Err(script_error(format!("the test's options() failed: {why}")));
            }
        };
        let test_options = config::test_layer(&options_json)?;
        let merged = config::merge(&[
            &test_options,
            &file_options,
            &opts.env_options,
            &opts.cli_options,
        ]);
        let options = config::resolve(&merged).map_err(|errors| {
            let n = errors.len();
            invalid_config(format!(
                "invalid options ({n} problem{}):\n  {}",
                if n == 1 { "" } else { "s" },
                errors.join("\n  ")
            ))
        })?;
        let problems = threshold::check_known(&options.thresholds, recorder.registry());
        if !problems.is_empty() {
            return Err(invalid_config(format!(
                "invalid options: {}",
                problems.join("; ")
            )));
        }
        for key in &options.unsupported {
            eprintln!(
                "WARN option {key:?} is not supported by this version of wload and has no effect"
            );
        }
        let functions = match self.test.call_functions(&mut self.store).await {
            Ok(functions) => functions,
            Err(trap) => {
                let why = describe(explain_trap(self.store.data_mut(), &trap));
                return Err(script_error(format!(
                    "the test's functions() failed: {why}"
                )));
            }
        };
        let missing: Vec<String> = options
            .scenarios
            .iter()
            .filter(|s| !functions.contains(&s.exec))
            .map(|s| {
                format!(
                    "scenarios.{}.exec: the test has no entry point {:?}",
                    s.name, s.exec
                )
            })
            .collect();
        if !missing.is_empty() {
            return Err(invalid_config(format!(
                "invalid options: {}; it exports {}",
                missing.join("; "),
                functions.join(", ")
            )));
        }
        Ok(options)
    }

    /// The run's tags and client settings, now known, apply from here on.
    fn apply_run_options(&mut self, opts: &RunOptions, options: &config::Options) -> Result<()> {
        let mut http = opts.http.clone();
        http.egress = egress_base(opts);
        options.http.apply(&mut http);
        // A policy that denies nothing is not carried: the client then
        // checks nothing at all.
        http.egress = http.egress.filter(|p| !p.is_open());
        let client = Arc::new(Client::new(http, BodyPool::new(1024))?);
        let run_tags = TagSet::new(options.tags.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let rps = rps_limiter(options.rps, opts.rps_limit.clone(), opts.quiet);
        self.shared = run_shared(opts, &self.shared.recorder, run_tags, client, rps);
        self.store.data_mut().shared = self.shared.clone();
        Ok(())
    }

    /// Run the test's setup; what it returns goes to every VU.
    async fn setup(&mut self, timeout: Duration) -> Result<()> {
        match tokio::time::timeout(timeout, self.test.call_setup(&mut self.store)).await {
            Ok(Ok(Ok(data))) => {
                let _ = self.shared.setup_data.set(data);
                Ok(())
            }
            Ok(Ok(Err(message))) => Err(script_error(format!("setup failed: {message}"))),
            Ok(Err(trap)) => {
                let why = describe(explain_trap(self.store.data_mut(), &trap));
                Err(script_error(format!("setup failed: {why}")))
            }
            Err(_) => Err(script_error(format!(
                "setup did not finish within {} (setupTimeout)",
                format::duration_short(timeout)
            ))),
        }
    }

    /// Run the test's teardown; why it failed, if it did.
    async fn teardown(&mut self, timeout: Duration) -> Option<String> {
        self.store.data_mut().running_since = Instant::now();
        match tokio::time::timeout(timeout, self.test.call_teardown(&mut self.store)).await {
            Ok(Ok(Ok(()))) => None,
            Ok(Ok(Err(message))) => Some(message),
            Ok(Err(trap)) => Some(describe(explain_trap(self.store.data_mut(), &trap))),
            Err(_) => Some(format!(
                "did not finish within {} (teardownTimeout)",
                format::duration_short(timeout)
            )),
        }
    }
}

/// The run's request pacing: the options' `rps` (checked with the
/// options), capped by the caller's `limit` (a quota).
fn rps_limiter(rps: Option<f64>, limit: Option<RpsCap>, quiet: bool) -> Option<RateLimiter> {
    if let (Some(r), Some(l)) = (rps, &limit) {
        let l = l.per_second();
        if r > l && !quiet {
            eprintln!(
                "WARN rps {r} is above this run's limit of {l} requests per second: {l} applies"
            );
        }
    }
    RateLimiter::capped(rps, limit)
}

/// One scenario ready to run: its plan as the header and the progress
/// display show it, its VU factory, its pre-allocated VUs, and its count
/// of active VUs for the progress display.
struct PreparedScenario {
    config: ScenarioConfig,
    plan: ScenarioPlan,
    factory: VuFactory,
    vus: Vec<Vu>,
    active_vus: Arc<AtomicU32>,
    /// Its own stop: its duration, then its gracefulStop.
    stop: Arc<StopSignal>,
}

/// Instantiate every scenario's pre-allocated VUs on the pooled engine.
async fn prepare_scenarios(
    options: &config::Options,
    compiled: &CompiledTest,
    params: Vec<Param>,
    pool: &Sandbox,
    shared: &Arc<RunShared>,
    seg: &Segment,
    run_stop: &Arc<StopSignal>,
) -> Result<Vec<PreparedScenario>> {
    let vu_pre = Arc::new(compiled.guest_pre(&pool.engine, params)?);
    let next_id = Arc::new(AtomicU32::new(1));
    let mut prepared = Vec::with_capacity(options.scenarios.len());
    for config in &options.scenarios {
        let stop = Arc::new(StopSignal::default());
        let factory = VuFactory {
            pre: vu_pre.clone(),
            sandbox: pool.clone(),
            shared: shared.clone(),
            scenario: VuScenario::new(
                &config.name,
                executor::scenario_env(config),
                config.tags.clone(),
                &shared.run_tags,
                [stop.clone(), run_stop.clone()],
            ),
            exec: config.exec.clone(),
            next_id: next_id.clone(),
        };
        let initial = config.executor.initial_vus(seg);
        let mut vus = Vec::with_capacity(initial as usize);
        for _ in 0..initial {
            vus.push(factory.create().await?);
        }
        prepared.push(PreparedScenario {
            config: config.clone(),
            plan: config.plan(seg),
            factory,
            vus,
            active_vus: Arc::new(AtomicU32::new(0)),
            stop,
        });
    }
    Ok(prepared)
}

/// The run header, like k6's: the test, its scenarios and their plans.
fn header(
    test: &str,
    options: &config::Options,
    prepared: &[PreparedScenario],
    max_vus: u32,
    seg: &Segment,
) -> String {
    let total = options
        .scenarios
        .iter()
        .map(ScenarioConfig::end)
        .max()
        .unwrap_or_default();
    let plans: Vec<_> = prepared.iter().map(|p| p.plan.clone()).collect();
    let segment = (!seg.is_full()).then(|| seg.to_string());
    progress::header(test, &plans, max_vus, total, segment.as_deref())
}

/// Start the clock, the outputs and the progress display, run every
/// scenario to its end, and return how long that took, with the
/// aggregation thread still running (teardown's samples go to it too).
async fn drive(
    opts: &RunOptions,
    options: &config::Options,
    prepared: Vec<PreparedScenario>,
    mut outputs: Outputs,
    recorder: &Arc<Recorder>,
    ctl: &Arc<RunControl>,
    max_vus: u32,
) -> Result<(Duration, Live)> {
    let seg = opts.segment;
    let run_for = options
        .scenarios
        .iter()
        .map(|s| s.start_time + s.executor.max_duration())
        .max()
        .unwrap_or_default();
    let _trace = std::env::var_os("WLOAD_VUS_TRACE")
        .map(|path| Owned::spawn(trace_vus(ctl.clone(), path.into())));
    let started = Instant::now();
    let bars = prepared
        .iter()
        .map(|p| ScenarioProgress::new(p.plan.clone(), p.active_vus.clone()))
        .collect();
    let mut display = Display::new(ctl.clone(), bars, started, run_for, max_vus, opts.quiet);
    if let Some(frames) = &opts.progress {
        display = display.into_frames(frames.clone());
    }
    let plans: Vec<ScenarioPlan> = prepared.iter().map(|p| p.plan.clone()).collect();
    outputs.start(&RunStart {
        test: &opts.test.name(),
        scenarios: &plans,
        thresholds: &options.thresholds,
        trend_stats: &options.trend_stats,
        started: SystemTime::now(),
    });
    let live = Live::start(
        recorder.clone(),
        ctl.clone(),
        outputs,
        display,
        opts.out_interval,
    )?;
    let _abort_on_fail = options.thresholds.iter().any(|t| t.abort_on_fail).then(|| {
        Owned::spawn(watch_thresholds(
            options.thresholds.clone(),
            recorder.clone(),
            ctl.clone(),
            started,
        ))
    });
    ctl.mark_started();
    let mut scenarios = tokio::task::JoinSet::new();
    for p in prepared {
        let scenario = Scenario {
            factory: p.factory,
            run: ctl.clone(),
            stop: p.stop.clone(),
            graceful_stop: p.config.graceful_stop,
            segment: seg,
            active_vus: p.active_vus,
        };
        let (config, vus) = (p.config, p.vus);
        scenarios.spawn(async move { executor::run_scenario(&config, scenario, vus).await });
    }
    executor::join_all(&mut scenarios, ctl).await;
    ctl.mark_ended();
    Ok((started.elapsed(), live))
}

/// The report of a finished run, thresholds evaluated.
fn report(
    options: &config::Options,
    recorder: &Recorder,
    ctl: &RunControl,
    elapsed: Duration,
    clock: RunClock,
) -> Report {
    let snapshot = recorder.snapshot();
    let thresholds =
        threshold::evaluate_all(&options.thresholds, &snapshot, recorder.registry(), elapsed);
    Report {
        snapshot,
        metrics: recorder.registry().all(),
        elapsed,
        failures: ctl.failures.summary(),
        interrupted: ctl.progress.interrupted.load(Ordering::Relaxed),
        thresholds,
        trend_stats: options.trend_stats.clone(),
        clock: Some(clock),
    }
}

/// Sleep until the wall clock reads `at`: tokio's timer to within 2 ms
/// (its granularity is 1 ms), then the last stretch by reading the clock,
/// so that shards on synchronised clocks start within a fraction of a
/// millisecond of each other. A time already past starts at once, with a
/// warning: the shard's skew in its summary says by how much.
async fn wait_until(at: SystemTime, quiet: bool) {
    const SPIN: Duration = Duration::from_millis(2);
    match at.duration_since(SystemTime::now()) {
        Err(late) => eprintln!(
            "WARN --start-at {} was {} ago when the VUs were ready: starting now",
            wload_units::rfc3339(at),
            format::millis(late.duration().as_secs_f64() * 1e3)
        ),
        Ok(wait) => {
            if !quiet {
                eprintln!(
                    "  waiting {} for --start-at {}",
                    format::duration_short(Duration::from_secs(wait.as_secs())),
                    wload_units::rfc3339(at)
                );
            }
            if let Some(coarse) = wait.checked_sub(SPIN) {
                tokio::time::sleep(coarse).await;
            }
            while SystemTime::now() < at {
                std::hint::spin_loop();
            }
        }
    }
}

fn describe(outcome: Outcome) -> String {
    match outcome {
        Outcome::Failed(m) => m,
        Outcome::Interrupted => "interrupted".to_owned(),
        Outcome::Completed => "completed".to_owned(),
    }
}

/// Thresholds with `abortOnFail`: evaluated every second once their
/// `delayAbortEval` has passed; the first that fails stops the run.
async fn watch_thresholds(
    thresholds: Vec<Threshold>,
    recorder: Arc<Recorder>,
    ctl: Arc<RunControl>,
    started: Instant,
) {
    let watched: Vec<Threshold> = thresholds.into_iter().filter(|t| t.abort_on_fail).collect();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let elapsed = started.elapsed();
        let due: Vec<Threshold> = watched
            .iter()
            .filter(|t| elapsed >= t.delay_abort_eval)
            .cloned()
            .collect();
        if due.is_empty() {
            continue;
        }
        let snapshot = recorder.snapshot();
        let crossed = threshold::evaluate_all(&due, &snapshot, recorder.registry(), elapsed)
            .into_iter()
            .find(|o| !o.verdict.ok && o.verdict.observed.is_some());
        if let Some(o) = crossed {
            eprintln!(
                "\nthreshold {} '{}' crossed with abortOnFail: stopping the run",
                o.threshold.key, o.threshold.source
            );
            ctl.stop_now();
            return;
        }
    }
}

/// `WLOAD_VUS_TRACE=FILE`: write `milliseconds active_vus` every 100 ms,
/// for checking how closely an executor follows its plan (see
/// `bench/executors.sh`). Runs until aborted.
async fn trace_vus(ctl: Arc<RunControl>, path: std::path::PathBuf) {
    let Ok(file) = std::fs::File::create(&path) else {
        eprintln!("WARN cannot write the VU trace to {}", path.display());
        return;
    };
    let mut out = std::io::LineWriter::new(file);
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        let active = ctl.progress.active_vus.load(Ordering::Relaxed);
        if writeln!(out, "{} {active}", started.elapsed().as_millis()).is_err() {
            return;
        }
    }
}

/// First Ctrl-C, SIGTERM or SIGHUP, or first stop through the run's
/// handle: stop starting iterations, let running ones finish for `grace`
/// (the longest gracefulStop), then stop hard; teardown, summary and
/// exports follow. A second signal of any of them, or a second stop:
/// stop now. SIGTERM is what containers, CI runners and `timeout` send,
/// SIGHUP what a closed terminal sends: each ends the run with its
/// results, as Ctrl-C does.
async fn watch_interrupts(ctl: Arc<RunControl>, grace: Duration) {
    use tokio::signal::unix::{SignalKind, signal};
    let kinds = [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
    ];
    let mut streams = Vec::with_capacity(kinds.len());
    for kind in kinds {
        match signal(kind) {
            Ok(s) => streams.push(s),
            Err(e) => eprintln!("warning: cannot watch signal {}: {e}", kind.as_raw_value()),
        }
    }
    tokio::select! {
        _ = next_signal(&mut streams) => eprintln!(
            "\nstopping: waiting for running iterations to finish (Ctrl-C or another signal to stop now)"
        ),
        _ = ctl.wait_stop_requests(1) => eprintln!(
            "\nstopping (asked by the run's controller): waiting for running iterations to finish"
        ),
    }
    ctl.aborted.store(true, Ordering::Relaxed);
    ctl.stop_gracefully();
    tokio::select! {
        _ = next_signal(&mut streams) => {}
        _ = ctl.wait_stop_requests(2) => {}
        _ = tokio::time::sleep(grace) => {}
    }
    ctl.stop_now();
}

/// Resolves with the next signal of any of `streams` (never, for none).
async fn next_signal(streams: &mut [tokio::signal::unix::Signal]) {
    std::future::poll_fn(|cx| {
        // Every stream is polled, so that each registers this task.
        let mut got = false;
        for s in streams.iter_mut() {
            got |= s.poll_recv(cx).is_ready();
        }
        if got {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}
