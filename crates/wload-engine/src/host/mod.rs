//! The WIT imports, implemented for one VU's store.
//!
//! One file per interface of `wit/test.wit` (`http`, `checks`, `metrics`,
//! `vu`), each implementing the trait `bindgen!` generates for it on
//! [`VuState`], the data of a VU's store. [`v0_2`] serves the same
//! functions to tests of `wload:test@0.2.0`, over these. State shared by the run (the
//! recorder, the HTTP client, `-e` variables, setup data) is behind
//! [`RunShared`]; everything else is per VU, so no host call takes a
//! run-wide lock.
//!
//! WASI is linked too, because toolchains' standard libraries import it
//! (Rust's `std`, componentize-py), but sandboxed: no files, no sockets,
//! no host environment. Its context is built on first use, so guests that
//! never touch WASI pay nothing for it.

mod checks;
mod group;
mod http;
pub mod js_plugins;
mod metrics;
mod record;
pub mod v0_2;
mod vu;

use crate::stop::StopSignal;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Result;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::rate::RateLimiter;
use crate::sandbox::{EPOCH_TICK, MemoryLimiter, Sandbox};
use group::Groups;
use record::RequestTags;
use wload_http::{Client, VuConnections};
use wload_metrics::{Recorder, TagSet, Tags};

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "test",
    imports: {
        "wload:test/http.send": async | trappable,
        "wload:test/http.batch": async | trappable,
        "wload:test/http.send-with": async | trappable,
        "wload:test/http.batch-with": async | trappable,
        "wload:test/http.send-with-limits": async | trappable,
        "wload:test/http.batch-with-limits": async | trappable,
        "wload:test/vu.sleep": async | trappable,
        default: trappable,
    },
    exports: { default: async },
    with: {
        "wload:test/http.response": wload_http::HttpResponse,
    },
});

/// State every VU of a run shares.
pub struct RunShared {
    pub recorder: Arc<Recorder>,
    pub client: Arc<Client>,
    /// `-e KEY=VALUE` variables.
    pub env: HashMap<String, String>,
    /// What `setup` returned; set once before the VUs start.
    pub setup_data: OnceLock<Option<String>>,
    /// Tags on every sample of the run (`--tag`).
    pub run_tags: TagSet,
    /// The run's `rps` pacing, if it has one: every request waits for
    /// its slot before it is sent.
    pub rps: Option<RateLimiter>,
}

/// The scenario a VU runs, as the host sees it: its name, its own `env`
/// (looked up before the run's `-e` variables) and its tags.
#[derive(Debug)]
pub struct VuScenario {
    pub name: Arc<str>,
    pub env: HashMap<String, String>,
    /// The run's tags, the scenario's tags and `scenario=<name>`.
    pub tags: Tags,
    /// The scenario's stop and the run's: a hard stop of either cuts
    /// the VU's request in flight, which is recorded as interrupted.
    pub stops: [Arc<StopSignal>; 2],
}

impl VuScenario {
    pub fn new(
        name: &str,
        env: HashMap<String, String>,
        tags: impl IntoIterator<Item = (String, String)>,
        run_tags: &TagSet,
        stops: [Arc<StopSignal>; 2],
    ) -> Arc<VuScenario> {
        let tags = run_tags.with(
            tags.into_iter()
                .chain([("scenario".to_owned(), name.to_owned())]),
        );
        Arc::new(VuScenario {
            name: name.into(),
            env,
            tags: Arc::new(tags),
            stops,
        })
    }

    /// Whether the scenario or the run was stopped hard.
    pub fn hard_stopped(&self) -> bool {
        self.stops.iter().any(|s| s.hard_stopped())
    }
}

/// Why a guest was stopped by the engine rather than by its own trap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// Ran longer than the guest timeout without waiting on the host.
    GuestTimeout(Duration),
    /// The run was stopped (Ctrl-C twice, or the graceful stop ran out).
    HardStop,
}

/// The data of one VU's store.
pub struct VuState {
    pub shared: Arc<RunShared>,
    /// 1-based VU number; 0 for setup and teardown.
    pub vu_id: u32,
    /// Iterations this VU started before the current one.
    pub iteration: u64,
    pub scenario: Arc<VuScenario>,
    /// Open groups, which decide the tags of this VU's samples.
    groups: Groups,
    /// How late the current iteration started against its schedule, for
    /// open-model executors; `None` for closed-model ones.
    pub lateness: Option<Duration>,
    pub conns: VuConnections,
    pub table: ResourceTable,
    pub limiter: MemoryLimiter,
    /// When the guest last got control back from a waiting host call.
    pub running_since: Instant,
    guest_timeout: Duration,
    hard_stop: Arc<AtomicBool>,
    /// Set by the engine when it stops the guest.
    pub stopped: Option<Stopped>,
    /// The guest's own account of its upcoming trap (`vu.report-panic`).
    pub panic_message: Option<String>,
    /// Tag sets of requests, so a repeated request costs no allocation
    /// for its tags.
    request_tags: RequestTags,
    /// Whether requests run as tasks of their own (see `http.rs`).
    spawn_requests: bool,
    /// Metric ids below this are known to be defined (see `metrics.rs`).
    metrics_known: u32,
    wasi: Option<Box<WasiCtx>>,
    /// The VU's own instance of a 0.2 test, for calls the host makes into
    /// it on the guest's behalf (a JavaScript test's library plugins,
    /// [`js_plugins`]).
    pub instance: Option<wasmtime::component::Instance>,
}

impl VuState {
    pub fn new(
        shared: Arc<RunShared>,
        sandbox: &Sandbox,
        vu_id: u32,
        scenario: Arc<VuScenario>,
    ) -> VuState {
        let source = (shared.client.config().local_ips.as_ref()).map(|ips| ips.for_vu(vu_id));
        VuState {
            shared,
            vu_id,
            iteration: 0,
            groups: Groups::new(scenario.tags.clone()),
            scenario,
            lateness: None,
            conns: VuConnections::from_source(source),
            table: ResourceTable::new(),
            limiter: MemoryLimiter::new(sandbox.limits.memory),
            running_since: Instant::now(),
            guest_timeout: sandbox.limits.guest_timeout,
            hard_stop: sandbox.hard_stop.clone(),
            stopped: None,
            panic_message: None,
            request_tags: RequestTags::default(),
            spawn_requests: sandbox.slots >= http::SPAWN_FROM_VUS,
            metrics_known: 0,
            wasi: None,
            instance: None,
        }
    }

    /// Tags of this VU's samples now: the scenario's, and the group's
    /// inside one.
    pub fn tags(&self) -> &Tags {
        self.groups.tags()
    }

    /// Start an iteration at the top level, outside any group.
    pub fn leave_groups(&mut self) {
        self.groups.reset();
    }

    /// The guest is back in control after a host wait.
    fn resume_guest(&mut self) {
        self.running_since = Instant::now();
    }

    /// Called at each epoch deadline while the guest runs.
    fn on_epoch(&mut self) -> wasmtime::Result<UpdateDeadline> {
        if self.hard_stop.load(Ordering::Relaxed) {
            self.stopped = Some(Stopped::HardStop);
            return Err(wasmtime::Error::msg("the run was stopped"));
        }
        let ran = self.running_since.elapsed();
        if ran >= self.guest_timeout {
            self.stopped = Some(Stopped::GuestTimeout(self.guest_timeout));
            return Err(wasmtime::Error::msg("guest timeout"));
        }
        // A deadline that passed while the host was waiting is not the
        // guest's time: carry on without yielding.
        if ran < EPOCH_TICK {
            Ok(UpdateDeadline::Continue(1))
        } else {
            Ok(UpdateDeadline::Yield(1))
        }
    }
}

impl WasiView for VuState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let ctx = self.wasi.get_or_insert_with(|| {
            // Nothing of the host: no files, no sockets, no environment.
            // A guest's traffic goes through the host's client, where the
            // egress policy is checked; a WASI socket would go around it.
            // The address check refuses every address too, should a
            // socket kind ever be allowed by mistake.
            let mut b = WasiCtx::builder();
            b.inherit_stderr()
                .allow_tcp(false)
                .allow_udp(false)
                .allow_ip_name_lookup(false)
                .socket_addr_check(|_, _| Box::pin(async { false }));
            Box::new(b.build())
        });
        WasiCtxView {
            ctx,
            table: &mut self.table,
        }
    }
}

/// The linker with WASI and the wload interfaces (0.1 and 0.2), for
/// `engine`.
pub fn linker(engine: &Engine) -> Result<Linker<VuState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    Test::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)?;
    v0_2::add_to_linker(&mut linker)?;
    js_plugins::add_to_linker(&mut linker)?;
    Ok(linker)
}

/// A store for one VU, with its limits and interruption wired up.
pub fn new_store(engine: &Engine, state: VuState) -> Store<VuState> {
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    store.epoch_deadline_callback(|mut ctx| ctx.data_mut().on_epoch());
    store.set_epoch_deadline(1);
    store
}
