//! `wload:test/{types,checks,metrics,vu}@0.2.0`: the same functions as
//! 0.1's, served by the 0.1 implementation; only their enums are 0.2's
//! own types and are converted here.

use super::super::wload::test::{checks as v1_checks, metrics as v1_metrics, vu as v1_vu};
use super::wload::test::{checks, metrics, types, vu};
use crate::host::VuState;

impl types::Host for VuState {}

impl checks::Host for VuState {
    fn check(
        &mut self,
        name: String,
        ok: bool,
        tags: Vec<(String, String)>,
    ) -> wasmtime::Result<bool> {
        v1_checks::Host::check(self, name, ok, tags)
    }
}

impl metrics::Host for VuState {
    fn define(
        &mut self,
        name: String,
        kind: metrics::MetricKind,
        is_time: bool,
    ) -> wasmtime::Result<Result<u32, String>> {
        let kind = match kind {
            metrics::MetricKind::Counter => v1_metrics::MetricKind::Counter,
            metrics::MetricKind::Gauge => v1_metrics::MetricKind::Gauge,
            metrics::MetricKind::Rate => v1_metrics::MetricKind::Rate,
            metrics::MetricKind::Trend => v1_metrics::MetricKind::Trend,
        };
        v1_metrics::Host::define(self, name, kind, is_time)
    }

    fn add(
        &mut self,
        metric: u32,
        value: f64,
        tags: Vec<(String, String)>,
    ) -> wasmtime::Result<()> {
        v1_metrics::Host::add(self, metric, value, tags)
    }
}

impl vu::Host for VuState {
    fn id(&mut self) -> wasmtime::Result<u32> {
        v1_vu::Host::id(self)
    }

    fn iteration(&mut self) -> wasmtime::Result<u64> {
        v1_vu::Host::iteration(self)
    }

    fn scenario(&mut self) -> wasmtime::Result<String> {
        v1_vu::Host::scenario(self)
    }

    async fn sleep(&mut self, duration: u64) -> wasmtime::Result<()> {
        v1_vu::Host::sleep(self, duration).await
    }

    fn env(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        v1_vu::Host::env(self, key)
    }

    fn setup_data(&mut self) -> wasmtime::Result<Option<String>> {
        v1_vu::Host::setup_data(self)
    }

    fn log(&mut self, level: vu::LogLevel, message: String) -> wasmtime::Result<()> {
        let level = match level {
            vu::LogLevel::Debug => v1_vu::LogLevel::Debug,
            vu::LogLevel::Info => v1_vu::LogLevel::Info,
            vu::LogLevel::Warn => v1_vu::LogLevel::Warn,
            vu::LogLevel::Error => v1_vu::LogLevel::Error,
        };
        v1_vu::Host::log(self, level, message)
    }

    fn report_panic(&mut self, message: String) -> wasmtime::Result<()> {
        v1_vu::Host::report_panic(self, message)
    }

    fn group_enter(&mut self, name: String) -> wasmtime::Result<()> {
        v1_vu::Host::group_enter(self, name)
    }

    fn group_exit(&mut self) -> wasmtime::Result<()> {
        v1_vu::Host::group_exit(self)
    }
}
