//! Reading response bodies and timings: download `${BASE_URL}/bytes/N`
//! (N from `-e SIZE=`, default 100000) and check that the body's SHA-256
//! matches the `x-sha256` header the server sent, and that the phases of
//! the request add up to its duration. wload's built-in target server
//! (`wload target`) sends that header.
//!
//! With `-e DISCARD=1` the body is read and counted but not kept: the
//! test then checks that nothing but its length reached the guest.

use sha2::{Digest, Sha256};
use wload_sdk::prelude::*;

struct Checksum {
    url: String,
    size: u64,
    discard: bool,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Test for Checksum {
    fn new() -> Self {
        let base = vu::env_or("BASE_URL", "http://127.0.0.1:8080");
        let size: u64 = vu::env_or("SIZE", "100000").parse().unwrap_or(100_000);
        Checksum {
            url: format!("{}/bytes/{size}", base.trim_end_matches('/')),
            size,
            discard: vu::env("DISCARD").is_some_and(|v| v == "1"),
        }
    }

    fn iteration(&mut self) -> Result<()> {
        let mut req = Request::get(self.url.as_str()).name("/bytes/{size}");
        if self.discard {
            req = req.discard_body();
        }
        let res = req.send();
        check("status is 200", res.status() == 200);
        check("length is right", res.body_len() == self.size);

        let body = res.body();
        if self.discard {
            check("discarded body is empty", body.is_empty());
        } else {
            let sum = hex(&Sha256::digest(&body));
            check(
                "body matches its checksum",
                res.header("x-sha256") == Some(sum),
            );
        }

        let t = res.timings();
        check(
            "phases add up to the duration",
            t.sending + t.waiting + t.receiving == t.duration,
        );
        check(
            "waiting and duration are measured",
            !t.waiting.is_zero() && !t.duration.is_zero(),
        );
        Ok(())
    }
}

wload_sdk::export_test!(Checksum);
