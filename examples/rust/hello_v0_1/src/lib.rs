//! examples/rust/hello built against `wload:test@0.1.0`, the first test
//! world, without the SDK (which targets 0.2): the fixture that keeps the
//! engine running 0.1 tests. It makes the same requests, check and metric
//! as hello, with the same `BASE_URL`, `URL_PATH` and `SLEEP_MS`, so the
//! tests can compare what the two versions record, and
//! `EXAMPLE=hello_v0_1 bench/instructions.sh` what each costs.
//!
//! ```sh
//! wload run hello_v0_1.wasm --vus 10 --duration 10s -e BASE_URL=http://127.0.0.1:8080
//! ```

wit_bindgen::generate!({
    path: "../../../wit",
    world: "wload:test/test@0.1.0",
});

use std::cell::RefCell;

use wload::test::{checks, http, metrics, vu};

/// This VU's settings and metric, made on its first iteration.
struct Hello {
    url: String,
    body_bytes: u32,
    /// Nanoseconds to sleep after each request, or why `SLEEP_MS` is not
    /// a number of milliseconds.
    sleep: Result<Option<u64>, String>,
}

impl Hello {
    fn new() -> Result<Hello, String> {
        let env_or = |key: &str, default: &str| vu::env(key).unwrap_or_else(|| default.to_owned());
        let base = env_or("BASE_URL", "http://127.0.0.1:8080");
        let path = env_or("URL_PATH", "/");
        let body_bytes = metrics::define("body_bytes", metrics::MetricKind::Counter, false)?;
        let sleep = vu::env("SLEEP_MS")
            .map(|ms| {
                ms.trim()
                    .parse::<u64>()
                    .map(|ms| ms.saturating_mul(1_000_000))
                    .map_err(|_| {
                        format!("SLEEP_MS must be a whole number of milliseconds, not {ms:?}")
                    })
            })
            .transpose();
        Ok(Hello {
            url: format!(
                "{}/{}",
                base.trim_end_matches('/'),
                path.trim_start_matches('/')
            ),
            body_bytes,
            sleep,
        })
    }

    fn iteration(&self) -> Result<(), String> {
        let think = self.sleep.clone()?;
        let res = http::send(&http::Request {
            method: "GET".to_owned(),
            url: self.url.clone(),
            headers: Vec::new(),
            body: None,
            tags: Vec::new(),
            name: None,
            timeout: None,
            body_mode: http::BodyMode::Keep,
        });
        checks::check("status is 200", res.status() == 200, &[]);
        metrics::add(self.body_bytes, res.body_len() as f64, &[]);
        if let Some(think) = think {
            vu::sleep(think);
        }
        Ok(())
    }
}

thread_local! {
    static STATE: RefCell<Option<Hello>> = const { RefCell::new(None) };
}

struct Export;

impl Guest for Export {
    fn options() -> String {
        String::new()
    }

    fn setup() -> Result<Option<String>, String> {
        Ok(None)
    }

    fn functions() -> Vec<String> {
        vec!["default".to_owned()]
    }

    fn iteration(exec: String) -> Result<(), String> {
        if exec != "default" {
            return Err(format!("this test has no entry point named {exec:?}"));
        }
        STATE.with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                *slot = Some(Hello::new()?);
            }
            match &*slot {
                Some(hello) => hello.iteration(),
                None => Err("the test's state was not made".to_owned()),
            }
        })
    }

    fn teardown() -> Result<(), String> {
        Ok(())
    }
}

export!(Export);
