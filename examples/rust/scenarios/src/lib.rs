//! Several entry points for several scenarios: `default` browses, `api`
//! posts JSON. Each check names the scenario the VU runs in, so the
//! summary shows which scenario ran which function. Its own options (2
//! VUs, 4 iterations) are the lowest-precedence source of options.
//!
//! ```sh
//! wload run scenarios.wasm --config two-scenarios.json
//! ```
//! with scenarios choosing `"exec": "api"` or the default.

use wload_sdk::prelude::*;

struct Scenarios {
    base: String,
}

impl Test for Scenarios {
    fn new() -> Self {
        let base = vu::env_or("BASE_URL", "http://127.0.0.1:8080");
        Scenarios {
            base: base.trim_end_matches('/').to_owned(),
        }
    }

    fn options() -> Value {
        json!({ "vus": 2, "iterations": 4 })
    }

    fn functions() -> &'static [&'static str] {
        &["api"]
    }

    fn exec(&mut self, name: &str) -> Result<()> {
        match name {
            "default" => self.iteration(),
            "api" => self.api(),
            other => Err(format!("no entry point {other:?}").into()),
        }
    }

    fn iteration(&mut self) -> Result<()> {
        let res = http::get(&format!("{}/", self.base));
        check(
            &format!("{} ran default", vu::scenario()),
            res.status() == 200,
        );
        Ok(())
    }
}

impl Scenarios {
    fn api(&mut self) -> Result<()> {
        let res = Request::post(format!("{}/echo", self.base))
            .json(&json!({ "vu": vu::id() }))?
            .send();
        let ok = res.status() == 200 && res.json::<Value>()?["vu"] == json!(vu::id());
        check(&format!("{} ran api", vu::scenario()), ok);
        // Scenario env overrides -e variables.
        let origin = vu::env_or("ORIGIN", "-e");
        check(&format!("{} sees ORIGIN={origin}", vu::scenario()), true);
        Ok(())
    }
}

wload_sdk::export_test!(Scenarios);
