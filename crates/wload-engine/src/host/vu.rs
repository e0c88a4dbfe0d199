//! `wload:test/vu`: the VU's identity, `-e` variables, setup data, sleep,
//! log and groups.

use std::time::Duration;

use super::VuState;
use super::wload::test::vu::{Host, LogLevel};
use wload_metrics::Builtin;

impl Host for VuState {
    fn id(&mut self) -> wasmtime::Result<u32> {
        Ok(self.vu_id)
    }

    fn iteration(&mut self) -> wasmtime::Result<u64> {
        Ok(self.iteration)
    }

    fn scenario(&mut self) -> wasmtime::Result<String> {
        Ok(self.scenario.name.to_string())
    }

    async fn sleep(&mut self, duration: u64) -> wasmtime::Result<()> {
        tokio::time::sleep(Duration::from_nanos(duration)).await;
        self.resume_guest();
        Ok(())
    }

    fn env(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        let scenario = self.scenario.env.get(&key);
        Ok(scenario.or_else(|| self.shared.env.get(&key)).cloned())
    }

    fn setup_data(&mut self) -> wasmtime::Result<Option<String>> {
        Ok(self.shared.setup_data.get().cloned().flatten())
    }

    fn log(&mut self, level: LogLevel, message: String) -> wasmtime::Result<()> {
        let level = match level {
            LogLevel::Debug => "DEBUG",
            LogLevel::Info => "INFO",
            LogLevel::Warn => "WARN",
            LogLevel::Error => "ERROR",
        };
        eprintln!("{level} [vu {}] {message}", self.vu_id);
        Ok(())
    }

    fn report_panic(&mut self, message: String) -> wasmtime::Result<()> {
        self.panic_message = Some(message);
        Ok(())
    }

    fn group_enter(&mut self, name: String) -> wasmtime::Result<()> {
        // A name that would break the path is the test's bug: fail the
        // iteration with k6's message rather than record a wrong tag.
        self.groups.enter(&name).map_err(wasmtime::Error::msg)
    }

    fn group_exit(&mut self) -> wasmtime::Result<()> {
        if let Some((tags, started)) = self.groups.exit() {
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            self.shared
                .recorder
                .record(&tags, &[(Builtin::GroupDuration.id(), ms)]);
        }
        Ok(())
    }
}
