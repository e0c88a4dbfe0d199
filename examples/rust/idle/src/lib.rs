//! A mostly idle VU: GET `${BASE_URL}/`, check the status, sleep one
//! second. Thousands of these measure what a VU costs while it waits
//! (its instance, its keep-alive connection, its share of the engine):
//! the per-VU memory figures in docs/BENCHMARKS.md come from it.
//!
//! `BASE_URL` may list several servers separated by commas; VU `n` uses
//! the `n mod count`-th. One client address reaches one server port with
//! at most as many connections as the kernel's local port range allows
//! (about 28,000 by default), so 100,000 VUs need several server ports.
//!
//! ```sh
//! wload run idle.wasm --vus 10000 --duration 10s -e BASE_URL=http://127.0.0.1:8080
//! ```

use wload_sdk::prelude::*;

struct Idle {
    url: String,
}

impl Test for Idle {
    fn new() -> Self {
        let bases = vu::env_or("BASE_URL", "http://127.0.0.1:8080");
        let bases: Vec<&str> = bases.split(',').map(str::trim).collect();
        let base = bases[vu::id() as usize % bases.len()];
        Idle {
            url: format!("{}/", base.trim_end_matches('/')),
        }
    }

    fn iteration(&mut self) -> Result<()> {
        let res = Request::get(self.url.as_str()).send();
        check("status is 200", res.status() == 200);
        sleep(Duration::from_secs(1));
        Ok(())
    }
}

wload_sdk::export_test!(Idle);
