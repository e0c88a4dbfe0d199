//! The running VU: its id, iteration, scenario, `-e` variables, setup
//! data, sleep and log.

use std::cell::OnceCell;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Result;
use crate::bindings::wload::test::vu as wit;

pub use wit::LogLevel;

/// This VU's number (1-based; 0 in setup and teardown).
pub fn id() -> u32 {
    wit::id()
}

/// Iterations this VU started before the current one.
pub fn iteration() -> u64 {
    wit::iteration()
}

/// The scenario this VU runs.
pub fn scenario() -> String {
    wit::scenario()
}

/// Pause this VU without using a core.
pub fn sleep(duration: Duration) {
    wit::sleep(u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX));
}

/// A `-e KEY=VALUE` variable.
pub fn env(key: &str) -> Option<String> {
    wit::env(key)
}

/// A `-e` variable, or `default` when it is not set.
pub fn env_or(key: &str, default: &str) -> String {
    wit::env(key).unwrap_or_else(|| default.to_owned())
}

thread_local! {
    static SETUP_DATA: OnceCell<Option<Value>> = const { OnceCell::new() };
}

/// The setup data as JSON, read from the engine once per instance.
pub fn setup_data_value() -> Option<Value> {
    SETUP_DATA.with(|cell| {
        cell.get_or_init(|| wit::setup_data().and_then(|s| serde_json::from_str(&s).ok()))
            .clone()
    })
}

/// The setup data, deserialised into `T`.
pub fn setup_data<T: DeserializeOwned>() -> Result<Option<T>> {
    match setup_data_value() {
        None => Ok(None),
        Some(v) => Ok(Some(serde_json::from_value(v)?)),
    }
}

/// Log a line at `level`.
pub fn log(level: LogLevel, message: &str) {
    wit::log(level, message);
}

pub fn info(message: &str) {
    wit::log(LogLevel::Info, message);
}

pub fn warn(message: &str) {
    wit::log(LogLevel::Warn, message);
}

pub fn error(message: &str) {
    wit::log(LogLevel::Error, message);
}

pub(crate) fn report_panic(message: &str) {
    wit::report_panic(message);
}
