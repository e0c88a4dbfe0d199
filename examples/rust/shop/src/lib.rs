//! A shopper, in groups: `home`, then `cart` with `add` and `view` nested
//! inside it. Every request and check carries its group's path as the
//! `group` tag (`::cart::add`), each group's time is a `group_duration`
//! sample, and the summary lists the checks under their groups.
//!
//! ```sh
//! wload run shop.wasm --vus 10 --duration 30s -e BASE_URL=http://127.0.0.1:8080
//! ```
//!
//! Thresholds can select a group: `"group_duration{group:::cart}":
//! ["p(95)<500"]` in a `--config` file.

use wload_sdk::prelude::*;

struct Shop {
    base: String,
}

impl Test for Shop {
    fn new() -> Self {
        let base = vu::env_or("BASE_URL", "http://127.0.0.1:8080");
        Shop {
            base: base.trim_end_matches('/').to_owned(),
        }
    }

    fn iteration(&mut self) -> Result<()> {
        group("home", || {
            let home = http::get(&format!("{}/", self.base));
            check("home is 200", home.status() == 200);
        });

        group("cart", || -> Result<()> {
            group("add", || -> Result<()> {
                for item in [3, 7] {
                    let res = Request::post(format!("{}/echo", self.base))
                        .json(&json!({ "item": item }))?
                        .send();
                    check("item added", res.status() == 200);
                }
                Ok(())
            })?;
            group("view", || {
                let cart = http::get(&format!("{}/bytes/100", self.base));
                check("cart has 100 bytes", cart.body_len() == 100);
            });
            Ok(())
        })?;

        check("visit complete", true);
        Ok(())
    }
}

wload_sdk::export_test!(Shop);
