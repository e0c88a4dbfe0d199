//! The smallest useful wload test: GET `${BASE_URL}/`, check the status,
//! and count the bytes received in a custom metric. No sleep, so each VU
//! sends requests back to back: this is the throughput example.
//! `-e URL_PATH=/big.bin` fetches another path than `/`, and
//! `-e SLEEP_MS=1000` adds a think time after each request, which makes it
//! the idle-VU example of `bench/compare.sh` (one GET and one sleep per
//! iteration).
//!
//! ```sh
//! wload run hello.wasm --vus 10 --duration 10s -e BASE_URL=http://127.0.0.1:8080
//! wload run hello.wasm --vus 10000 --duration 10s -e SLEEP_MS=1000
//! ```

use wload_sdk::prelude::*;

struct Hello {
    url: String,
    body_bytes: Counter,
    /// Think time after each request: none unless `SLEEP_MS` is set, or
    /// why its value is not a number of milliseconds.
    sleep: std::result::Result<Option<Duration>, String>,
}

impl Test for Hello {
    fn new() -> Self {
        let base = vu::env_or("BASE_URL", "http://127.0.0.1:8080");
        Hello {
            url: format!(
                "{}/{}",
                base.trim_end_matches('/'),
                vu::env_or("URL_PATH", "/").trim_start_matches('/')
            ),
            body_bytes: Counter::new("body_bytes"),
            // `new` cannot fail: a bad value fails every iteration instead.
            sleep: vu::env("SLEEP_MS")
                .map(|ms| {
                    ms.trim().parse().map(Duration::from_millis).map_err(|_| {
                        format!("SLEEP_MS must be a whole number of milliseconds, not {ms:?}")
                    })
                })
                .transpose(),
        }
    }

    fn iteration(&mut self) -> Result<()> {
        let think = self.sleep.clone()?;
        let res = Request::get(self.url.as_str()).send();
        check("status is 200", res.status() == 200);
        self.body_bytes.add(res.body_len() as f64);
        if let Some(think) = think {
            sleep(think);
        }
        Ok(())
    }
}

wload_sdk::export_test!(Hello);
