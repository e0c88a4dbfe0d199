//! `wload-sdk`: write wload load tests in Rust.
//!
//! A test is a type implementing [`Test`], exported with [`export_test!`],
//! built with `cargo build --target wasm32-wasip2 --release` and run with
//! `wload run target/wasm32-wasip2/release/<name>.wasm`. Everything here is
//! a thin layer over the WIT world `wload:test@0.2.0` (see
//! `wit/test-0.2/test.wit`): the engine does the HTTP, timing and metrics;
//! this crate makes it read like Rust.
//!
//! ```ignore
//! use wload_sdk::prelude::*;
//!
//! struct Hello;
//!
//! impl Test for Hello {
//!     fn new() -> Self { Hello }
//!     fn iteration(&mut self) -> Result<()> {
//!         let res = http::get("http://127.0.0.1:8080/");
//!         check("status is 200", res.status() == 200);
//!         Ok(())
//!     }
//! }
//!
//! wload_sdk::export_test!(Hello);
//! ```

pub mod checks;
pub mod group;
pub mod http;
pub mod metrics;
pub mod vu;

mod export;

/// The bindings generated from `wit/test-0.2/test.wit`. Prefer the
/// modules of this crate; these are here for what they do not cover.
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/test-0.2",
        world: "wload:test/test@0.2.0",
        pub_export_macro: true,
        export_macro_name: "__export_world",
        default_bindings_module: "wload_sdk::bindings",
    });
}

pub use checks::{check, check_tagged};
pub use export::Test;
pub use group::group;
pub use serde_json::{Value, json};
pub use vu::sleep;

/// Any error: tests use `?` on whatever they call.
pub type Error = Box<dyn std::error::Error + Send + Sync + 'static>;
/// The result of a test function.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What most tests need, in one `use`.
pub mod prelude {
    pub use crate::http::{self, ErrorKind, Request, Response};
    pub use crate::metrics::{Counter, Gauge, Rate, Trend};
    pub use crate::vu::{self, sleep};
    pub use crate::{Result, Test, Value, check, check_tagged, group, json};
    pub use std::time::Duration;
}

#[doc(hidden)]
pub mod __private {
    pub use crate::bindings::Guest;
    pub use crate::export::{functions, iteration, options, setup, teardown};
}
