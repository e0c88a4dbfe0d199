//! `examples/rust/login` with the session flow compiled in rather than
//! linked from `plugins/session` at load time: the same test (its
//! `test.rs`) and the same flow (the plugin's `flow.rs`), one component.
//! It is the baseline of the composition-cost figures in
//! docs/BENCHMARKS.md (`bench/compose.sh`):
//!
//! ```sh
//! wload run login_inline.wasm --vus 10 --duration 30s -e BASE_URL=http://127.0.0.1:8080
//! ```

/// The flow's imports: `wload:test@0.1.0`'s `http` and `checks`, which
/// the plugin is built against, bound here as the plugin binds them (the
/// test itself uses the SDK, on 0.2), so that this component imports what
/// the composition of login and session does.
mod v0_1 {
    wit_bindgen::generate!({
        path: "../../../wit",
        inline: "package wload:login-inline;
                 world imports {
                     import wload:test/http@0.1.0;
                     import wload:test/checks@0.1.0;
                 }",
        world: "wload:login-inline/imports",
        // The interfaces are of another package than the inline world.
        generate_all,
    });
    pub use self::wload::test::{checks, http};
}

use v0_1::{checks, http};

#[path = "../../../../plugins/session/src/flow.rs"]
mod flow;

/// What `wload:session/login` gives the test, over [`flow`].
mod login {
    use super::flow;

    /// As the interface's `session` record.
    #[derive(Clone)]
    pub struct Session {
        pub user: String,
        pub token: String,
    }

    pub fn login(base_url: &str, user: &str, password: &str) -> Result<Session, String> {
        let (user, token) = flow::login(base_url, user, password)?;
        Ok(Session { user, token })
    }

    pub fn auth_header(session: &Session) -> (String, String) {
        flow::auth_header(&session.token)
    }

    pub fn logout(base_url: &str, session: &Session) -> Result<(), String> {
        flow::logout(base_url, &session.user, &session.token)
    }
}

#[path = "../../login/src/test.rs"]
mod test;
