//! `wload demo`: a load test that needs nothing but the binary. It starts
//! [`server::TargetServer`] on 127.0.0.1 and runs the bundled example test
//! (`examples/rust/hello`, compiled into the binary) against it.
//!
//! The same server is what the end-to-end tests load: it counts requests
//! and connections, so tests can compare what wload reports with what the
//! server saw.

pub mod server;

/// `examples/rust/hello`, built for wasm32-wasip2 by `build.rs`.
pub static HELLO_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hello.wasm"));
