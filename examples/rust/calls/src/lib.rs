//! Host calls and nothing else, for the engine's micro-benchmarks
//! (`crates/wload-engine/benches/host_call.rs`): each entry point makes `CALLS` calls
//! of one kind, so that a benchmark divides by it and reads the cost of
//! one guest→host call.
//!
//! - `default`: returns at once (the host→guest call of an iteration);
//! - `check`: `CALLS` checks;
//! - `counter`: `CALLS` additions to a custom counter;
//! - `env`: `CALLS` lookups of an `-e` variable (a string back from the host).

use wload_sdk::prelude::*;

/// Calls per iteration of the entry points that make calls.
pub const CALLS: usize = 100;

struct Calls {
    counter: Counter,
}

impl Test for Calls {
    fn new() -> Self {
        Calls {
            counter: Counter::new("calls"),
        }
    }

    fn iteration(&mut self) -> Result<()> {
        Ok(())
    }

    fn functions() -> &'static [&'static str] {
        &["check", "counter", "env"]
    }

    fn exec(&mut self, name: &str) -> Result<()> {
        match name {
            "default" => self.iteration(),
            "check" => {
                for _ in 0..CALLS {
                    check("ok", true);
                }
                Ok(())
            }
            "counter" => {
                for _ in 0..CALLS {
                    self.counter.add(1.0);
                }
                Ok(())
            }
            "env" => {
                for _ in 0..CALLS {
                    if vu::env("BASE_URL").is_none() {
                        return Err("BASE_URL is not set".into());
                    }
                }
                Ok(())
            }
            other => Err(format!("no entry point named {other:?}").into()),
        }
    }
}

wload_sdk::export_test!(Calls);
