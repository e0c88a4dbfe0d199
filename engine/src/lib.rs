//! wload: HTTP load testing where the test is a WebAssembly component.
//!
//! Data flows one way (see `docs/architecture.md`):
//! [`cli`] → [`component`] + [`sandbox`] → [`executor`] spawns VUs → a VU's
//! guest calls [`host`] → [`http`] → samples into [`metrics`] → [`output`].

pub mod cli;
pub mod component;
pub mod config;
pub mod demo;
pub mod executor;
pub mod host;
pub mod http;
pub mod metrics;
pub mod output;
pub mod run;
pub mod sandbox;

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
