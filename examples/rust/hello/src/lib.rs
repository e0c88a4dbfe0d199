//! The smallest useful wload test: GET `${BASE_URL}/`, check the status,
//! and count the bytes received in a custom metric. No sleep, so each VU
//! sends requests back to back: this is the throughput example.
//!
//! ```sh
//! wload run hello.wasm --vus 10 --duration 10s -e BASE_URL=http://127.0.0.1:8080
//! ```

use wload_sdk::prelude::*;

struct Hello {
    url: String,
    body_bytes: Counter,
}

impl Test for Hello {
    fn new() -> Self {
        let base = vu::env_or("BASE_URL", "http://127.0.0.1:8080");
        Hello {
            url: format!("{}/", base.trim_end_matches('/')),
            body_bytes: Counter::new("body_bytes"),
        }
    }

    fn iteration(&mut self) -> Result<()> {
        let res = Request::get(self.url.as_str()).send();
        check("status is 200", res.status() == 200);
        self.body_bytes.add(res.body_len() as f64);
        Ok(())
    }
}

wload_sdk::export_test!(Hello);
