//! A user browsing a site: a page, two assets fetched in parallel, an API
//! call, a check on each, and a think time of one second between
//! iterations. Most of a VU's life is asleep, which
//! makes this the example for runs with thousands of VUs.
//!
//! ```sh
//! wload run browse.wasm --vus 1000 --duration 30s -e BASE_URL=http://127.0.0.1:8080
//! ```

use wload_sdk::prelude::*;

struct Browse {
    base: String,
    page_time: Trend,
}

impl Test for Browse {
    fn new() -> Self {
        let base = vu::env_or("BASE_URL", "http://127.0.0.1:8080");
        Browse {
            base: base.trim_end_matches('/').to_owned(),
            page_time: Trend::time("page_time"),
        }
    }

    fn options() -> Value {
        json!({ "vus": 10, "duration": "10s" })
    }

    fn iteration(&mut self) -> Result<()> {
        let home = http::get(&format!("{}/", self.base));
        check("home is 200", home.status() == 200);

        // Dynamic URLs share one `name` tag, so they form one series.
        let item = (vu::id() as u64 * 7 + vu::iteration()) % 100;
        let page = Request::get(format!("{}/bytes/1024?item={item}", self.base))
            .name("/bytes/1024?item={item}")
            .send();
        check("item page has 1024 bytes", page.body_len() == 1024);
        self.page_time
            .add_duration(home.timings().duration + page.timings().duration);

        // Static assets, fetched in parallel as a browser would.
        let assets = http::batch(vec![
            Request::get(format!("{}/bytes/300", self.base)).name("asset"),
            Request::get(format!("{}/bytes/700", self.base)).name("asset"),
        ]);
        check(
            "assets arrive in order",
            assets.iter().map(|r| r.body_len()).eq([300, 700]),
        );

        let api = Request::post(format!("{}/echo", self.base))
            .json(&json!({ "vu": vu::id(), "item": item }))?
            .send();
        let echoed: Option<Value> = (api.status() == 200).then(|| api.json()).transpose()?;
        check(
            "echo returns the item",
            echoed.is_some_and(|e| e["item"] == json!(item)),
        );

        sleep(Duration::from_secs(1));
        Ok(())
    }
}

wload_sdk::export_test!(Browse);
