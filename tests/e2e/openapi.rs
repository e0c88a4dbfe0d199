//! The openapi plugin of `plugins/` against a document written here for
//! wload's own target server, in YAML and in JSON: every operation is
//! sent with values from its schemas (a path parameter with bounds, a
//! required header, a query parameter, a JSON body from a `$ref`), each
//! status is checked against the declared ones and the request named by
//! its path template; a deliberately wrong declared status fails its
//! check; include/exclude choose operations; the run must grant the
//! base URL's host.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Finished, run_plugin, scratch, server};

const LIMIT: Duration = Duration::from_secs(120);

/// The target server's routes as an OpenAPI 3.0 document; `missing` is
/// the status declared for `/status/{code}`, which answers 404.
fn document(missing: &str) -> Value {
    json!({
        "openapi": "3.0.3",
        "info": {"title": "wload target", "version": "1"},
        // Production: the plugin goes where base-url says instead.
        "servers": [{"url": "https://production.example.com"}],
        "paths": {
            "/": {"get": {
                "operationId": "hello",
                "responses": {"200": {"description": "hello"}}
            }},
            "/bytes/{n}": {"get": {
                "operationId": "bytes",
                "parameters": [{"name": "n", "in": "path", "required": true,
                    "schema": {"type": "integer", "minimum": 16, "maximum": 1024}}],
                "responses": {"200": {"description": "n bytes"}, "400": {"description": "too many"}}
            }},
            "/echo": {"post": {
                "operationId": "echo",
                "parameters": [
                    {"name": "trace", "in": "query", "schema": {"type": "string", "format": "uuid"}},
                    {"name": "X-Request-Tag", "in": "header", "required": true,
                        "schema": {"type": "string", "enum": ["load"]}}
                ],
                "requestBody": {"required": true, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/Order"}
                }}},
                "responses": {"2XX": {"description": "the body back"}}
            }},
            "/status/{code}": {"get": {
                "operationId": "status",
                "parameters": [{"name": "code", "in": "path", "required": true,
                    "schema": {"type": "integer", "enum": [404]}}],
                "responses": {missing: {"description": "not there"}}
            }}
        },
        "components": {"schemas": {"Order": {
            "type": "object",
            "required": ["item", "qty"],
            "properties": {
                "id": {"type": "integer", "readOnly": true},
                "item": {"type": "string", "minLength": 3},
                "qty": {"type": "integer", "minimum": 1}
            }
        }}}
    })
}

/// `value` in YAML's block style (mappings and sequences on lines of
/// their own, scalars in JSON's notation, which YAML reads too), so that
/// the YAML file is not JSON in disguise.
fn yaml(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                out.push_str(&format!("{pad}{}:", Value::String(k.clone())));
                block(v, indent, out);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for v in a {
                out.push_str(&format!("{pad}-"));
                block(v, indent, out);
            }
        }
        scalar => out.push_str(&format!("{pad}{scalar}\n")),
    }
}

fn block(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            yaml(v, indent + 2, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            yaml(v, indent + 2, out);
        }
        scalar => out.push_str(&format!(" {scalar}\n")),
    }
}

fn write_yaml(path: &Path, value: &Value) {
    let mut text = String::new();
    yaml(value, 0, &mut text);
    std::fs::write(path, text).expect("write the YAML document");
}

/// `wload run openapi -p spec=@FILE ARGS --summary-export`, from `dir`.
fn exercise(dir: &Path, spec: &str, args: &[String]) -> Finished {
    let mut all = vec!["-p".to_owned(), format!("spec=@{spec}")];
    all.extend_from_slice(args);
    run_plugin("openapi", dir, &all, LIMIT)
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn every_operation_of_a_yaml_or_json_document_is_sent_and_its_status_checked() {
    let server = server();
    let base = server.base_url();
    let host = base.trim_start_matches("http://").to_owned();
    let dir = scratch("openapi-every-operation");
    write_yaml(&dir.join("target.yaml"), &document("404"));
    std::fs::write(dir.join("target.json"), document("404").to_string())
        .expect("write the JSON document");
    let flags = |extra: &[&str]| {
        let mut a = strings(&["-p", &format!("base-url={base}"), "--allow-host", &host]);
        a.extend(strings(extra));
        a
    };

    let mut sent = 0;
    for spec in ["target.yaml", "target.json"] {
        let run = exercise(&dir, spec, &flags(&["--iterations", "2"]));
        assert_eq!(run.code(), Some(0), "{spec}: {}", run.stderr());
        sent += 4 * 2;
        assert_eq!(server.stats.requests(), sent, "{spec}");
        for check in [
            "GET / is 200",
            "GET /bytes/{n} is 200 or 400",
            "POST /echo is 2XX",
            "GET /status/{code} is 404",
        ] {
            assert_eq!(run.check(check), (2, 0), "{spec}: {check}");
        }
        // Declared statuses are the expected ones: a 404 is no failure.
        assert_eq!(run.metric("http_req_failed", "passes"), 0.0, "{spec}");
    }

    // Named by template: a threshold on the series of /bytes/{n}.
    let threshold =
        format!("{{\"thresholds\": {{\"http_reqs{{name:{base}/bytes/{{n}}}}\": [\"count==3\"]}}}}");
    std::fs::write(dir.join("options.json"), threshold).expect("write the options");
    let run = exercise(
        &dir,
        "target.yaml",
        &flags(&[
            "--iterations",
            "3",
            "--config",
            "options.json",
            "-p",
            "include=bytes,GET /",
        ]),
    );
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    sent += 2 * 3;
    assert_eq!(server.stats.requests(), sent);
    let series = &run.summary["metrics"][format!("http_reqs{{name:{base}/bytes/{{n}}}}")];
    assert_eq!(
        series["thresholds"]["count==3"]["ok"], true,
        "{:#}",
        run.summary["metrics"]
    );

    // exclude leaves the rest.
    let run = exercise(
        &dir,
        "target.yaml",
        &flags(&[
            "--iterations",
            "1",
            "-p",
            "exclude=/status/{code}, POST /echo",
        ]),
    );
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    sent += 2;
    assert_eq!(server.stats.requests(), sent);
    assert_eq!(run.check("GET / is 200"), (1, 0));
}

#[test]
fn a_wrong_declared_status_fails_its_check() {
    let server = server();
    let base = server.base_url();
    let host = base.trim_start_matches("http://").to_owned();
    let dir = scratch("openapi-wrong-status");
    write_yaml(&dir.join("wrong.yaml"), &document("200"));
    let run = exercise(
        &dir,
        "wrong.yaml",
        &strings(&[
            "-p",
            &format!("base-url={base}"),
            "--allow-host",
            &host,
            "--iterations",
            "2",
        ]),
    );
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.check("GET /status/{code} is 200"), (0, 2));
    assert_eq!(run.check("GET / is 200"), (2, 0));
    // The undeclared 404 counts as a failed request too.
    assert_eq!(run.metric("http_req_failed", "passes"), 2.0);
}

#[test]
fn refusals_come_before_any_request_with_the_parameters_docs() {
    let server = server();
    let base = server.base_url();
    let host = base.trim_start_matches("http://").to_owned();
    let dir = scratch("openapi-refusals");
    write_yaml(&dir.join("target.yaml"), &document("404"));
    std::fs::write(dir.join("swagger.yaml"), "swagger: '2.0'\npaths: {}\n").expect("write");
    let cases: [(&str, Vec<String>, &str); 4] = [
        (
            "target.yaml",
            strings(&["-p", &format!("base-url={base}")]),
            "grant it with --allow-host",
        ),
        (
            "target.yaml",
            strings(&[
                "-p",
                &format!("base-url={base}"),
                "--allow-host",
                &host,
                "-p",
                "include=nope",
            ]),
            "include: \"nope\" names no operation of the document; it has hello (GET /)",
        ),
        (
            "swagger.yaml",
            strings(&["-p", &format!("base-url={base}"), "--allow-host", &host]),
            "spec: it is Swagger 2.0",
        ),
        (
            "target.yaml",
            strings(&["--allow-host", &host]),
            "parameter base-url is required",
        ),
    ];
    for (spec, args, want) in cases {
        let run = exercise(&dir, spec, &args);
        assert_eq!(run.code(), Some(104), "{args:?}: {}", run.stderr());
        assert!(run.stderr().contains(want), "{args:?}: {}", run.stderr());
    }
    assert_eq!(server.stats.requests(), 0, "a refused run sent requests");
}
