//! A test that logs in through a library plugin instead of writing the
//! login itself: it imports `wload:session/login@0.1.0`, which
//! `plugins/session` exports, and wload links the two when it loads the
//! test:
//!
//! ```sh
//! wload run login.wasm --with session.wasm --vus 10 --duration 30s \
//!     -e BASE_URL=http://127.0.0.1:8080
//! ```
//!
//! Each VU logs in as `vu-N` on its first iteration, then calls
//! `GET /session/me` with the session's header every iteration, and logs
//! out (to log in again) every fifth. Run without `--with`, wload refuses
//! it, naming the interface no plugin exports.
//!
//! The test itself is in `test.rs`: `examples/rust/login_inline` is the
//! same test with the flow compiled in, for the benchmark of what
//! composing costs.

/// The session plugin's interface, bound as an import. wload's own
/// interfaces come first: the session package's WIT refers to them.
mod login {
    wit_bindgen::generate!({
        path: ["../../../wit", "../../../plugins/session/wit"],
        inline: "package wload:login-example;
                 world imports { import wload:session/login@0.1.0; }",
        world: "wload:login-example/imports",
        // The interface is of another package than the inline world.
        generate_all,
    });
    pub use self::wload::session::login::*;
}

mod test;
