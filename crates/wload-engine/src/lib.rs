//! The engine of wload: everything between the command line and the
//! layers below it. A run ([`run`]) loads and compiles the test or the
//! scenario plugin ([`component`], [`plugin`]), builds its sandboxes ([`sandbox`]), merges its options
//! ([`config`]), and drives VUs with the scenarios' executors
//! ([`executor`]); a VU's guest calls the host imports ([`host`]), which
//! send requests with `wload_http` (paced by [`rate`] when the run has an
//! `rps`) and record them into `wload_metrics`;
//! `wload_output` shows and writes the results. See docs/architecture.md
//! for the crate graph: nothing below this crate knows it exists.

pub mod component;
pub mod config;
pub mod executor;
pub mod host;
pub mod plugin;
pub mod rate;
pub mod run;
pub mod sandbox;
pub mod stop;
pub mod task;

/// `wasmtime::Error` is not an `anyhow::Error`; this converts so that
/// `.context(...)` reads the same everywhere.
pub(crate) trait WasmtimeResult<T> {
    fn anyhow(self) -> anyhow::Result<T>;
}

impl<T> WasmtimeResult<T> for Result<T, wasmtime::Error> {
    fn anyhow(self) -> anyhow::Result<T> {
        self.map_err(anyhow::Error::from)
    }
}
