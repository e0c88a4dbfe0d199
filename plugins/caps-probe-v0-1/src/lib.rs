//! caps-probe-v0-1: plugins/caps-probe built against the first plugin
//! world, `wload:scenario/confined-plugin@0.1.0` (wit/scenario.wit, which
//! imports `wload:test@0.1.0`'s interfaces): the fixture that keeps the
//! engine running 0.1 plugins, as examples/rust/hello_v0_1 keeps it
//! running 0.1 tests. tests/e2e/plugin_caps.rs runs both probes through
//! the same checks. Like caps-probe, it declares one host (the URL of its
//! parameter `allowed`) and one env name (`PROBE_TOKEN`), and each
//! iteration tries both what it declared and what it did not (`other`,
//! the env name `PROBE_UNDECLARED`), recording what it got as checks.

wit_bindgen::generate!({
    path: "../../wit",
    world: "wload:scenario/confined-plugin@0.1.0",
    generate_all,
});

use std::cell::RefCell;

use wload::scenario::types::{ParamKind, ParamSpec, ParamValue};
use wload::test::http::{self, BodyMode, Request};
use wload::test::{checks, vu};

struct Probe;

thread_local! {
    /// `allowed` and `other`, from `configure`.
    static URLS: RefCell<(String, String)> = const { RefCell::new((String::new(), String::new())) };
}

fn text(name: &str, default: Option<&str>, docs: &str) -> ParamSpec {
    ParamSpec {
        name: name.to_owned(),
        kind: ParamKind::Text,
        default: default.map(str::to_owned),
        choices: Vec::new(),
        docs: docs.to_owned(),
    }
}

fn get(url: &str) -> u16 {
    if url.is_empty() {
        return 0;
    }
    http::send(&Request {
        method: "GET".to_owned(),
        url: url.to_owned(),
        headers: Vec::new(),
        body: None,
        tags: Vec::new(),
        name: None,
        timeout: None,
        body_mode: BodyMode::Discard,
    })
    .status()
}

impl Guest for Probe {
    fn describe() -> Description {
        Description {
            name: "caps-probe-v0-1".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            summary: "Tries a declared host and env name, and undeclared ones (a test fixture)"
                .to_owned(),
            docs: String::new(),
            params: vec![
                text("allowed", None, "The URL it declares and GETs."),
                text("other", Some(""), "A URL it GETs without declaring it."),
            ],
        }
    }

    fn capabilities() -> Capabilities {
        Capabilities {
            hosts: vec!["{allowed}".to_owned()],
            env: vec!["PROBE_TOKEN".to_owned()],
        }
    }

    fn configure(params: Vec<Param>) -> Result<(), ParamError> {
        let mut urls = (String::new(), String::new());
        for p in params {
            match (p.name.as_str(), p.value) {
                ("allowed", ParamValue::Text(t)) => urls.0 = t,
                ("other", ParamValue::Text(t)) => urls.1 = t,
                (name, _) => {
                    return Err(ParamError {
                        name: name.to_owned(),
                        message: "not a parameter of caps-probe-v0-1".to_owned(),
                    });
                }
            }
        }
        URLS.with(|u| *u.borrow_mut() = urls);
        Ok(())
    }

    fn setup() -> Result<Option<String>, String> {
        Ok(None)
    }

    fn iteration() -> Result<(), String> {
        let (allowed, other) = URLS.with(|u| u.borrow().clone());
        checks::check("the declared host answers", get(&allowed) == 200, &[]);
        if !other.is_empty() {
            checks::check("the undeclared host answers", get(&other) == 200, &[]);
        }
        checks::check(
            "the declared env is read",
            vu::env("PROBE_TOKEN").as_deref() == Some("granted"),
            &[],
        );
        checks::check(
            "the undeclared env is hidden",
            vu::env("PROBE_UNDECLARED").is_none(),
            &[],
        );
        Ok(())
    }

    fn teardown() -> Result<(), String> {
        Ok(())
    }
}

export!(Probe);
