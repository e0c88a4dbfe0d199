//! A test that misbehaves on purpose, to show (and test) what wload does
//! when a test goes wrong. `-e FAULT=` picks the behaviour:
//!
//! - `loop`: spin forever in the first iteration; the engine stops it.
//! - `panic`: panic every third iteration; the VU continues with a fresh
//!   instance and the summary counts the failed iterations.
//! - `error`: return an error every other iteration.
//! - `checks`: no fault: one passing and one failing check per iteration.
//! - `memory`: allocate until the memory limit stops it.
//! - `setup`: fail in setup, which aborts the run.
//! - `timeout`: a request to `/delay/2000` with a 100 ms timeout; checks
//!   that it comes back as status 0 with k6's timeout code, 1050.
//! - `bad-metric`: add to a metric id that `metrics.define` never
//!   returned (through the raw bindings: the SDK's types cannot); the
//!   engine fails the iteration.
//! - `sockets`: try to go around the host's HTTP client by WASI: connect a
//!   TCP socket to `SOCKET_ADDR` (default `127.0.0.1:9`) and look up
//!   `localhost`; checks that both are refused (the egress policy is
//!   checked in the host's client only, so WASI must not reach the
//!   network at all).
//!
//! Teardown logs the setup data it received.
//!
//! Every mode first sends `GET ${BASE_URL}${TARGET_PATH}` (default `/`)
//! so that the server sees it.

use wload_sdk::prelude::*;

struct Faults {
    base: String,
    path: String,
    fault: String,
    hoard: Vec<Vec<u8>>,
}

impl Test for Faults {
    fn new() -> Self {
        Faults {
            base: vu::env_or("BASE_URL", "http://127.0.0.1:8080"),
            path: vu::env_or("TARGET_PATH", "/"),
            fault: vu::env_or("FAULT", "checks"),
            hoard: Vec::new(),
        }
    }

    fn setup() -> Result<Option<Value>> {
        if vu::env("FAULT").as_deref() == Some("setup") {
            return Err("setup refused on purpose".into());
        }
        Ok(Some(json!({ "token": "t0k3n" })))
    }

    fn teardown(data: Option<Value>) -> Result<()> {
        let token = data.as_ref().and_then(|d| d["token"].as_str());
        vu::info(&format!("teardown saw token {}", token.unwrap_or("none")));
        Ok(())
    }

    fn iteration(&mut self) -> Result<()> {
        let res = http::get(&format!("{}{}", self.base.trim_end_matches('/'), self.path));
        let n = vu::iteration();
        match self.fault.as_str() {
            "loop" => {
                let mut x: u64 = n;
                loop {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            }
            "panic" if n % 3 == 2 => panic!("deliberate panic in iteration {n}"),
            "error" if n % 2 == 1 => {
                return Err(format!("deliberate error in iteration {n}").into());
            }
            "timeout" => {
                let slow = Request::get(format!("{}/delay/2000", self.base.trim_end_matches('/')))
                    .timeout(Duration::from_millis(100))
                    .send();
                check("timed out with status 0", slow.status() == 0);
                check("timeout has error code 1050", slow.error_code() == 1050);
                check("timeout has a message", slow.error().is_some());
            }
            "sockets" => {
                let addr = vu::env_or("SOCKET_ADDR", "127.0.0.1:9");
                let connected = std::net::TcpStream::connect(addr.as_str());
                if let Ok(stream) = &connected {
                    vu::info(&format!("WASI connected to {:?}", stream.peer_addr()));
                }
                check("WASI TCP connect is refused", connected.is_err());
                use std::net::ToSocketAddrs;
                let found = ("localhost", 80).to_socket_addrs();
                if let Ok(addrs) = &found {
                    vu::info(&format!("WASI resolved localhost: {:?}", addrs.clone().collect::<Vec<_>>()));
                }
                check("WASI name lookup is refused", found.is_err());
            }
            "bad-metric" if n % 2 == 1 => {
                wload_sdk::bindings::wload::test::metrics::add(u32::MAX - 1, 1.0, &[]);
            }
            "memory" => loop {
                self.hoard.push(vec![1u8; 1 << 20]);
            },
            _ => {}
        }
        let data: Option<Value> = vu::setup_data()?;
        let token_ok = data.as_ref().and_then(|d| d["token"].as_str()) == Some("t0k3n");
        check("setup data arrived", token_ok);
        check("status is 200", res.status() == 200);
        check("status is 404", res.status() == 404);
        Ok(())
    }
}

wload_sdk::export_test!(Faults);
