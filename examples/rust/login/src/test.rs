//! The login test, written against a module `login` with the functions
//! of `wload:session/login` (`login`, `auth_header`, `logout`) and its
//! `Session` record: the plugin's import in `login`, the flow compiled in
//! in `login_inline`.

use wload_sdk::prelude::*;

use crate::login::{self, Session};

struct Login {
    base: String,
    user: String,
    password: String,
    /// This VU's session, from its last login.
    session: Option<Session>,
}

impl Test for Login {
    fn new() -> Self {
        Login {
            base: vu::env_or("BASE_URL", "http://127.0.0.1:8080")
                .trim_end_matches('/')
                .to_owned(),
            user: format!("vu-{}", vu::id()),
            password: vu::env_or("PASSWORD", "wload"),
            session: None,
        }
    }

    fn iteration(&mut self) -> Result<()> {
        let session = match self.session.take() {
            Some(s) => s,
            None => login::login(&self.base, &self.user, &self.password)?,
        };
        let (name, value) = login::auth_header(&session);
        let res = Request::get(format!("{}/session/me", self.base))
            .header(&name, &value)
            .name("GET /session/me")
            .send();
        check("me is 200", res.status() == 200);
        let me: Value = res.json().unwrap_or_default();
        check(
            "me is the logged-in user",
            me["user"] == session.user.as_str(),
        );
        if vu::iteration() % 5 == 4 {
            login::logout(&self.base, &session)?;
        } else {
            self.session = Some(session);
        }
        Ok(())
    }
}

wload_sdk::export_test!(Login);
