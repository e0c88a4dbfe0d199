//! The wasmtime engine configuration: what makes a VU cheap and contained.
//!
//! - The pooling allocator, sized up front for the run's VUs, with
//!   copy-on-write memory images: instantiating a VU maps pages instead of
//!   copying them (about 10 µs and a few tens of KiB per VU).
//! - A per-instance memory limit (`--vu-memory`), enforced by the pool and
//!   reported by [`MemoryLimiter`] in words a user understands.
//! - Epoch interruption driven by a 10 ms ticker: guests yield to the
//!   scheduler regularly, and one that computes too long without waiting
//!   on the host (an infinite loop) is stopped.
//! - `concurrency_support` off and small fiber stacks: measured in
//!   `../shared/notes/wasmtime-per-vu.md` as the knobs that matter.
//!
//! Two engines exist per run: a [`Sandbox::probe`] one with the on-demand
//! allocator (compiling, reading options, setup and teardown, before the
//! VU count is known) and the pooled one for the VUs. They share every
//! setting that affects compiled code, so one `.cwasm` serves both.

mod limits;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::WasmtimeResult;
use anyhow::{Context, Result};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig};

pub use limits::{MemoryLimiter, check_process_limits};

/// How often the epoch advances.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Per-VU resource settings.
#[derive(Debug, Clone, Copy)]
pub struct SandboxLimits {
    /// Largest linear memory of one instance, in bytes.
    pub memory: u64,
    /// How long a guest may run without waiting on the host.
    pub guest_timeout: Duration,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        SandboxLimits {
            memory: 64 << 20,
            guest_timeout: Duration::from_secs(10),
        }
    }
}

/// What one VU's instance needs from the pool, read off the component.
#[derive(Debug, Clone, Copy)]
pub struct InstanceNeeds {
    pub memories: u32,
    pub tables: u32,
    pub table_elements: usize,
    /// Whether the host calls into the instance while it waits on a host
    /// call (a JavaScript test's plugins, host/js_plugins.rs): that call
    /// runs on a second fiber stack.
    pub nested_calls: bool,
}

/// Fiber stack of a VU: host futures are polled on it.
const ASYNC_STACK: usize = 512 << 10;
/// Wasm stack within it.
const WASM_STACK: usize = 256 << 10;

fn base_config(limits: &SandboxLimits) -> Config {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .concurrency_support(false)
        .async_stack_size(ASYNC_STACK)
        .max_wasm_stack(WASM_STACK)
        .memory_reservation(limits.memory)
        .memory_guard_size(64 << 10)
        .memory_reservation_for_growth(0)
        .memory_init_cow(true)
        .cranelift_opt_level(OptLevel::Speed);
    config
}

/// A configured engine plus the run-wide switches its stores consult.
#[derive(Clone)]
pub struct Sandbox {
    pub engine: Engine,
    pub limits: SandboxLimits,
    /// Set when the run must stop now: every guest traps at its next epoch
    /// check.
    pub hard_stop: Arc<AtomicBool>,
    /// Instances the engine was sized for (1 for the probe).
    pub slots: u32,
}

impl Sandbox {
    /// The engine for compiling, options, setup and teardown.
    pub fn probe(limits: SandboxLimits) -> Result<Sandbox> {
        let mut config = base_config(&limits);
        config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
        let engine = Engine::new(&config)
            .anyhow()
            .context("cannot configure the wasm engine")?;
        Ok(Sandbox {
            engine,
            limits,
            hard_stop: Arc::new(AtomicBool::new(false)),
            slots: 1,
        })
    }

    /// The engine for `slots` VU instances at once, each needing `needs`.
    pub fn pooled(limits: SandboxLimits, slots: u32, needs: InstanceNeeds) -> Result<Sandbox> {
        let slots = slots.max(1);
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(slots)
            .total_core_instances(slots.saturating_mul(16))
            .total_memories(slots.saturating_mul(needs.memories.max(1)))
            .total_tables(slots.saturating_mul(needs.tables.max(1)))
            .total_stacks(slots.saturating_mul(1 + u32::from(needs.nested_calls)))
            .max_memories_per_component(needs.memories.max(1))
            .max_tables_per_component(needs.tables.max(1))
            .max_memories_per_module(needs.memories.max(1))
            .max_tables_per_module(needs.tables.max(1))
            .table_elements(needs.table_elements.max(1000))
            .max_memory_size(usize::try_from(limits.memory).unwrap_or(usize::MAX));
        let mut config = base_config(&limits);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&config).anyhow().with_context(|| {
            format!(
                "cannot reserve the instance pool for {slots} VUs ({} MiB of memory each); \
                 lower --vus or --vu-memory",
                limits.memory >> 20
            )
        })?;
        Ok(Sandbox {
            engine,
            limits,
            hard_stop: Arc::new(AtomicBool::new(false)),
            slots,
        })
    }

    /// Share the hard-stop switch of another sandbox (the probe's and the
    /// pool's stores stop together).
    pub fn with_hard_stop(mut self, flag: Arc<AtomicBool>) -> Sandbox {
        self.hard_stop = flag;
        self
    }

    /// Advance the epoch every [`EPOCH_TICK`] until the returned guard is
    /// dropped. Runs on its own thread so that a guest hogging a worker
    /// cannot delay its own interruption.
    pub fn start_ticker(&self) -> Ticker {
        let engine = self.engine.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("wload-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })
            .ok();
        Ticker { stop, thread }
    }

    /// Epoch ticks a guest may run without waiting on the host.
    pub fn guest_tick_budget(&self) -> u32 {
        let ticks = self.limits.guest_timeout.as_millis() / EPOCH_TICK.as_millis();
        u32::try_from(ticks.max(1)).unwrap_or(u32::MAX)
    }
}

/// Stops the epoch thread when dropped.
pub struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
