//! `wload demo`: a load test that needs nothing but the binary. It starts
//! `wload_target::TargetServer` on 127.0.0.1 and runs the bundled example
//! test (`examples/rust/hello`, compiled into the binary) against it.

/// `examples/rust/hello`, built for wasm32-wasip2 by `build.rs`.
pub static HELLO_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hello.wasm"));
