//! session: a wload library plugin, the login/session flow of a
//! bearer-token API as an interface a test imports
//! (`wload:session/login@0.1.0`, in `wit/session.wit`) rather than a
//! scenario run on its own.
//!
//! ```sh
//! wload run my-test.wasm --with session.wasm -e BASE_URL=http://127.0.0.1:8080
//! ```
//!
//! wload links it into the test at load time, so each VU's test instance
//! calls its own instance of this one; the requests go through the VU's
//! client and are measured like the test's own. Nothing is kept here
//! between calls: the session is the test's to hold. The flow is in
//! [`flow`]; this file only binds it.

mod flow;

wit_bindgen::generate!({
    // wload's interfaces first: this package imports them.
    path: ["../../wit", "wit"],
    world: "wload:session/library@0.1.0",
    generate_all,
});

use exports::wload::session::login::{Guest, Session};
use wload::test::{checks, http};

struct Plugin;

impl Guest for Plugin {
    fn login(base_url: String, user: String, password: String) -> Result<Session, String> {
        let (user, token) = flow::login(&base_url, &user, &password)?;
        Ok(Session { user, token })
    }

    fn auth_header(session: Session) -> (String, String) {
        flow::auth_header(&session.token)
    }

    fn logout(base_url: String, session: Session) -> Result<(), String> {
        flow::logout(&base_url, &session.user, &session.token)
    }
}

export!(Plugin);
