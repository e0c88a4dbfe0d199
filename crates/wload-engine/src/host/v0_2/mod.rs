//! The imports of `wload:test@0.2.0` (`wit/test-0.2/test.wit`), for the
//! same VU store as 0.1.0's.
//!
//! The engine runs tests of both versions, side by side in one linker
//! (their interfaces have different names, `…@0.1.0` and `…@0.2.0`). The
//! work is done once, by the 0.1 implementation in the modules above; the
//! files here are thin adapters between 0.2's records and it: [`http`]
//! maps a 0.2 request and its options to what the shared request path
//! takes and answers with the status, error and body length read from
//! the response it produced, [`context`] converts the enums of `checks`,
//! `metrics` and `vu`. A response is the same host object in both
//! versions ([`wload_http::HttpResponse`] in the VU's table).

mod context;
mod http;

use anyhow::Result;
use wasmtime::component::{HasSelf, Linker};

use super::VuState;

wasmtime::component::bindgen!({
    path: "../../wit/test-0.2",
    world: "wload:test/test@0.2.0",
    imports: {
        "wload:test/http.send": async | trappable,
        "wload:test/http.batch": async | trappable,
        "wload:test/vu.sleep": async | trappable,
        default: trappable,
    },
    exports: { default: async },
    with: {
        "wload:test/http.response": wload_http::HttpResponse,
    },
});

/// The world of 0.2 tests.
pub const WORLD: &str = "wload:test/test@0.2.0";

/// Add the 0.2 interfaces to a linker that may hold 0.1's already.
pub fn add_to_linker(linker: &mut Linker<VuState>) -> Result<()> {
    Test::add_to_linker::<_, HasSelf<_>>(linker, |s| s)?;
    Ok(())
}
