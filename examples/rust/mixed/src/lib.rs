//! Mixed response bodies, after the workload of k6's buffer-pool
//! discussion: every iteration fetches a tiny body, a 100 KB and a 1 MB
//! body, a gzip-compressed JSON document, follows a redirect chain, and
//! sends a batch of three requests in parallel, with a check on each. No
//! sleep: this is the example that shows what large bodies cost in memory
//! and time. `bench/compare.sh` runs it (and the same script for k6,
//! `bench/k6/mixed.js`) against its nginx, which serves these paths:
//!
//! | path | body |
//! |---|---|
//! | `/` | 5 bytes |
//! | `/100k.bin`, `/1m.bin` | 102,400 and 1,048,576 bytes |
//! | `/data.json` | JSON, gzip-compressed on the fly (`JSON_BYTES` decoded) |
//! | `/r/3` | 302 to `/r/2`, `/r/1`, then `/` |
//!
//! ```sh
//! wload run mixed.wasm --vus 50 --duration 10s -e BASE_URL=http://127.0.0.1:8080 -e JSON_BYTES=20480
//! ```

use wload_sdk::prelude::*;

struct Mixed {
    base: String,
    /// The decoded size of `/data.json`, when `JSON_BYTES` gives it
    /// (otherwise any non-empty body passes), or why it is not a number.
    json_bytes: std::result::Result<Option<u64>, String>,
}

impl Mixed {
    fn get(&self, path: &str) -> Request {
        Request::get(format!("{}{path}", self.base))
    }

    fn json(&self) -> Request {
        self.get("/data.json").header("Accept-Encoding", "gzip")
    }

    fn json_ok(res: &Response, want: Option<u64>) -> bool {
        res.status() == 200
            && match want {
                Some(n) => res.body_len() == n,
                None => res.body_len() > 0,
            }
    }
}

impl Test for Mixed {
    fn new() -> Self {
        let base = vu::env_or("BASE_URL", "http://127.0.0.1:8080");
        Mixed {
            base: base.trim_end_matches('/').to_owned(),
            // `new` cannot fail: a bad value fails every iteration instead.
            json_bytes: vu::env("JSON_BYTES")
                .map(|n| {
                    n.trim()
                        .parse()
                        .map_err(|_| format!("JSON_BYTES must be a number of bytes, not {n:?}"))
                })
                .transpose(),
        }
    }

    fn iteration(&mut self) -> Result<()> {
        let json_bytes = self.json_bytes.clone()?;
        let tiny = self.get("/").send();
        check(
            "tiny is 5 bytes",
            tiny.status() == 200 && tiny.body_len() == 5,
        );

        let medium = self.get("/100k.bin").send();
        check(
            "100k body",
            medium.status() == 200 && medium.body_len() == 102_400,
        );

        let large = self.get("/1m.bin").send();
        check(
            "1m body",
            large.status() == 200 && large.body_len() == 1_048_576,
        );

        let json = self.json().send();
        check("gzip json decoded", Self::json_ok(&json, json_bytes));

        let chain = self.get("/r/3").send();
        check(
            "redirect chain ends at /",
            chain.status() == 200 && chain.body_len() == 5,
        );

        let batch = http::batch(vec![self.get("/"), self.get("/100k.bin"), self.json()]);
        check(
            "batch bodies",
            batch.len() == 3
                && batch[0].body_len() == 5
                && batch[1].body_len() == 102_400
                && Self::json_ok(&batch[2], json_bytes),
        );
        Ok(())
    }
}

wload_sdk::export_test!(Mixed);
