//! openapi: a wload scenario plugin (wit/test-0.2/scenario.wit, world
//! `wload:scenario/confined-plugin`) that exercises every operation of an
//! OpenAPI 3 document. The document says what a valid request is (its
//! parameters' and bodies' schemas) and which statuses each operation
//! answers; an iteration sends one valid request per operation, checks
//! its status against the declared ones, and names it by its path
//! template, so `/pets/7` and `/pets/8` are one series. The document
//! comes as a parameter (`-p spec=@openapi.yaml`), since a plugin has no
//! filesystem; where the requests go is a parameter too, and the plugin's
//! one capability: it contacts that host and no other.

mod document;
mod values;

use std::cell::RefCell;

wit_bindgen::generate!({
    path: "../../wit/test-0.2",
    world: "wload:scenario/confined-plugin@0.2.0",
    // The wload:test interfaces are another package: bind them here too.
    generate_all,
});

use wload::scenario::types::{ParamKind, ParamSpec, ParamValue};
use wload::test::checks;
use wload::test::http::{self, BodyMode, Request, RequestOptions, StatusRange};

use document::{Document, Operation};

struct OpenApi;

thread_local! {
    /// This instance's operations, from `configure`.
    static OPERATIONS: RefCell<Vec<Operation>> = const { RefCell::new(Vec::new()) };
}

fn spec(name: &str, kind: ParamKind, default: Option<&str>, docs: &str) -> ParamSpec {
    ParamSpec {
        name: name.to_owned(),
        kind,
        default: default.map(str::to_owned),
        choices: Vec::new(),
        docs: docs.to_owned(),
    }
}

fn refuse(name: &str, message: String) -> ParamError {
    ParamError {
        name: name.to_owned(),
        message,
    }
}

impl Guest for OpenApi {
    fn describe() -> Description {
        Description {
            name: "openapi".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            summary: "Exercises every operation of an OpenAPI 3 document, checking declared statuses"
                .to_owned(),
            docs: "\
Each iteration sends one request per operation of the document (paths in order,
then GET, PUT, POST, DELETE, OPTIONS, HEAD, PATCH, TRACE), built from its schemas:
every path, query, header and cookie parameter and a JSON (or form, or text) body,
each value the document's example, default or first enum value when it gives one,
else the smallest value its schema allows. Properties marked readOnly are left out.

Every response is checked with `METHOD /path/{template} is 200 or 404`: the statuses
the operation declares (2XX matches the class, default any answer), and counts as
expected in http_req_failed. Requests are named by BASE-URL/path/{template}.
Redirects are not followed: a 3xx is checked as the answer."
                .to_owned(),
            params: vec![
                spec(
                    "spec",
                    ParamKind::Text,
                    None,
                    "The OpenAPI 3.0 or 3.1 document, JSON or YAML: give it with -p spec=@FILE.\n\
                     References ($ref) must point into the document itself.",
                ),
                spec(
                    "base-url",
                    ParamKind::Text,
                    None,
                    "Where to send the requests, e.g. http://127.0.0.1:8080 (with the \
                     path prefix the document's servers have, if any: \
                     http://127.0.0.1:8080/api/v1).\n\
                     Required: a load test says where it goes, and the run grants this host \
                     (--allow-host HOST:PORT).",
                ),
                spec(
                    "include",
                    ParamKind::Text,
                    Some(""),
                    "Only these operations (comma-separated): operationIds, `METHOD /path` \
                     or `/path` (every method of it), as the document writes the path.\n\
                     Empty: all of them.",
                ),
                spec(
                    "exclude",
                    ParamKind::Text,
                    Some(""),
                    "Leave these operations out (comma-separated, as for include): \
                     destructive ones, or those needing state the generated values \
                     cannot give.",
                ),
            ],
        }
    }

    fn capabilities() -> Capabilities {
        Capabilities {
            hosts: vec!["{base-url}".to_owned()],
            env: Vec::new(),
        }
    }

    fn configure(params: Vec<Param>) -> Result<(), ParamError> {
        let mut text = None;
        let mut base = String::new();
        let mut include = Vec::new();
        let mut exclude = Vec::new();
        let list = |t: &str| -> Vec<String> {
            t.split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect()
        };
        for p in params {
            match (p.name.as_str(), p.value) {
                ("spec", ParamValue::Text(t)) => text = Some(t),
                ("base-url", ParamValue::Text(t)) => base = t.trim().trim_end_matches('/').to_owned(),
                ("include", ParamValue::Text(t)) => include = list(&t),
                ("exclude", ParamValue::Text(t)) => exclude = list(&t),
                (name, _) => {
                    return Err(refuse(name, "this parameter is not one openapi takes".to_owned()));
                }
            }
        }
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(refuse(
                "base-url",
                format!("{base:?} is not an http:// or https:// URL such as http://127.0.0.1:8080"),
            ));
        }
        let text = text.ok_or_else(|| refuse("spec", "the document is required".to_owned()))?;
        let doc = Document::parse(&text).map_err(|e| refuse("spec", e))?;
        let all = doc.operations(&base).map_err(|e| refuse("spec", e))?;
        let operations = select(all, &include, &exclude)?;
        OPERATIONS.with(|o| *o.borrow_mut() = operations);
        Ok(())
    }

    fn setup() -> Result<Option<String>, String> {
        Ok(None)
    }

    fn iteration() -> Result<(), String> {
        OPERATIONS.with(|ops| {
            let ops = ops.borrow();
            if ops.is_empty() {
                return Err("openapi was not configured".to_owned());
            }
            for op in ops.iter() {
                exercise(op);
            }
            Ok(())
        })
    }

    fn teardown() -> Result<(), String> {
        Ok(())
    }
}

/// The operations `include` and `exclude` leave, every selector checked
/// to name at least one (a typo would otherwise test less, silently).
fn select(
    all: Vec<Operation>,
    include: &[String],
    exclude: &[String],
) -> Result<Vec<Operation>, ParamError> {
    for (param, selectors) in [("include", include), ("exclude", exclude)] {
        if let Some(unknown) = selectors
            .iter()
            .find(|s| !all.iter().any(|op| op.selected_by(s)))
        {
            let known: Vec<String> = all
                .iter()
                .map(|op| match &op.operation_id {
                    Some(id) => format!("{id} ({})", op.key()),
                    None => op.key(),
                })
                .collect();
            return Err(refuse(
                param,
                format!(
                    "{unknown:?} names no operation of the document; it has {}",
                    known.join(", ")
                ),
            ));
        }
    }
    let chosen: Vec<Operation> = all
        .into_iter()
        .filter(|op| include.is_empty() || include.iter().any(|s| op.selected_by(s)))
        .filter(|op| !exclude.iter().any(|s| op.selected_by(s)))
        .collect();
    if chosen.is_empty() {
        return Err(refuse(
            if exclude.is_empty() { "spec" } else { "exclude" },
            "no operation is left to send".to_owned(),
        ));
    }
    Ok(chosen)
}

/// Send `op`'s request and check its status.
fn exercise(op: &Operation) {
    let request = Request {
        method: op.method.clone(),
        url: op.url.clone(),
        headers: op.headers.clone(),
        body: op.body.clone(),
        tags: Vec::new(),
        name: Some(op.name.clone()),
    };
    let options = RequestOptions {
        timeout: None,
        max_redirects: Some(0),
        expected_statuses: Some(
            op.statuses
                .iter()
                .map(|s| {
                    let (min, max) = s.range();
                    StatusRange { min, max }
                })
                .collect(),
        ),
        // Only the status is checked.
        body_mode: Some(BodyMode::Discard),
        max_body_size: None,
    };
    let status = http::send(&request, &options).status;
    checks::check(&op.check, op.statuses.iter().any(|s| s.matches(status)), &[]);
}

export!(OpenApi);
