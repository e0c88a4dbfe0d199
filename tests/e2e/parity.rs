//! One feature test in five languages. docs/parity.md's table says which
//! WIT functions carry each feature, how each SDK spells it, and which
//! mode of examples/*/http_features exercises it; this test reads the
//! table and proves every ✓ in it: the mode's run in that language agrees
//! with the Rust example's run of the same arguments on what the target
//! server saw and what the engine recorded. It also holds the table to
//! the world, wload:test@0.2.0: every function of wit/test-0.2/test.wit's
//! interfaces, and every field of the records a request is sent and
//! answered with, must appear in some row.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

use crate::languages::{self, LIMIT};
use crate::support::*;

/// The language columns, as the table's header names them.
const LANGUAGES: [&str; 5] = ["Rust", "JavaScript", "Python", "AssemblyScript", "Go"];

/// One feature row of docs/parity.md.
struct Row {
    feature: String,
    wit: String,
    /// The `wload run` arguments, `{FREE_PORT}` not yet filled in.
    args: String,
    /// Language → its cell.
    cells: HashMap<String, String>,
}

impl Row {
    fn claims(&self, lang: &str) -> bool {
        self.cells.get(lang).is_some_and(|c| c.starts_with('✓'))
    }
}

/// The rows of the table in docs/parity.md whose header starts with
/// `| feature |`.
fn table() -> Vec<Row> {
    let path = repo_root().join("docs/parity.md");
    let text = std::fs::read_to_string(&path).expect("read docs/parity.md");
    let split = |line: &str| -> Vec<String> {
        line.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect()
    };
    let mut header: Option<Vec<String>> = None;
    let mut rows = Vec::new();
    for line in text.lines() {
        if !line.trim_start().starts_with('|') {
            header = None;
            continue;
        }
        let cells = split(line);
        if header.is_none() {
            if cells.first().is_some_and(|c| c == "feature") {
                header = Some(cells);
            }
            continue;
        }
        let names = header.as_ref().expect("the table's header");
        // The line under the header.
        if cells.iter().all(|c| c.chars().all(|ch| ch == '-')) {
            continue;
        }
        assert_eq!(cells.len(), names.len(), "docs/parity.md: row {line:?}");
        let by_name: HashMap<String, String> =
            names.iter().cloned().zip(cells.iter().cloned()).collect();
        let column = |name: &str| {
            by_name
                .get(name)
                .cloned()
                .unwrap_or_else(|| panic!("docs/parity.md has no column {name:?}"))
        };
        rows.push(Row {
            feature: column("feature"),
            wit: column("WIT"),
            args: column("arguments").trim_matches('`').to_owned(),
            cells: LANGUAGES
                .iter()
                .map(|l| (l.to_string(), column(l)))
                .collect(),
        });
    }
    assert!(rows.len() >= 10, "docs/parity.md: only {} rows", rows.len());
    rows
}

/// The records of the world whose every field the table must name, as
/// `record.field`: how a request is sent, what came back, why it failed.
/// In 0.1 these were functions (`send-with`, `response.status`, ...).
const RECORDS: [&str; 3] = ["request-options", "sent", "http-error"];

/// What the table must name, read from wit/test-0.2/test.wit: every
/// function of the world's interfaces as `interface.function` (a
/// resource's methods as `response.status`), and every field of
/// [`RECORDS`] as `record.field`.
struct WorldItems {
    functions: Vec<String>,
    fields: Vec<String>,
}

fn world_items() -> WorldItems {
    const WIT: &str = "wit/test-0.2/test.wit";
    let text = std::fs::read_to_string(repo_root().join(WIT)).expect("read wit/test-0.2/test.wit");
    let (mut functions, mut fields) = (Vec::new(), Vec::new());
    // (kind, name) of each open block; a block that is none of these has
    // an empty kind.
    let mut scope = Vec::<(String, String)>::new();
    for line in text.lines() {
        let line = line.trim();
        // Comments, and the `@since(...)` gates on the line above an item.
        if line.starts_with("//") || line.starts_with('@') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if let [kind, name, "{"] = words[..]
            && matches!(kind, "interface" | "resource" | "world" | "record")
        {
            scope.push((kind.to_owned(), name.to_owned()));
            continue;
        }
        if line.ends_with('{') {
            scope.push(Default::default());
            continue;
        }
        if line.starts_with('}') {
            scope.pop();
            continue;
        }
        let in_interface = scope.first().is_some_and(|(kind, _)| kind == "interface");
        let (kind, owner) = scope.last().cloned().unwrap_or_default();
        if in_interface && let Some((name, _)) = line.split_once(": func(") {
            functions.push(format!("{owner}.{name}"));
        } else if kind == "record"
            && RECORDS.contains(&owner.as_str())
            && let Some((name, _)) = line.split_once(':')
        {
            fields.push(format!("{owner}.{}", name.trim()));
        }
    }
    assert!(functions.len() > 20, "parsed only {functions:?} from {WIT}");
    for record in RECORDS {
        assert!(
            fields.iter().any(|f| f.starts_with(&format!("{record}."))),
            "parsed no field of `{record}` from {WIT}: {fields:?}"
        );
    }
    WorldItems { functions, fields }
}

#[test]
fn the_table_names_every_function_of_the_world() {
    let rows = table();
    // The names in backticks of the WIT column, a call's arguments left
    // out (`send(request, options)` names `send`).
    let named: Vec<String> = rows
        .iter()
        .flat_map(|r| {
            r.wit
                .split('`')
                .skip(1)
                .step_by(2)
                .map(|n| n.split('(').next().unwrap_or(n).trim().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    let items = world_items();
    for f in &items.functions {
        let (owner, name) = f.split_once('.').expect("owner.name");
        assert!(
            named.iter().any(|n| n == name || n == f),
            "docs/parity.md: no row names `{name}` (wit/test-0.2/test.wit's {owner}.{name}) in its WIT column"
        );
    }
    for f in &items.fields {
        assert!(
            named.contains(f),
            "docs/parity.md: no row names `{f}` (a field of wit/test-0.2/test.wit's records) in its WIT column"
        );
    }
    for row in &rows {
        assert!(
            row.claims("Rust"),
            "docs/parity.md: {:?} is compared with Rust, which must be ✓",
            row.feature
        );
    }
}

/// What one run showed, in the terms two languages must agree on.
#[derive(Debug, PartialEq)]
struct View {
    requests: u64,
    root_group: Value,
    /// `http_reqs` by tag set (the server's address replaced by `BASE`).
    http_reqs: BTreeMap<String, u64>,
    /// Built-in counts and each `parity_*` metric's values.
    metrics: BTreeMap<String, Value>,
    /// The `parity: …` lines the run logged, with how often.
    lines: BTreeMap<String, u64>,
}

/// Run `test` with `args` against a fresh target server and collect its
/// view; it must exit 0 with every check passing.
fn view(label: &str, test: &Path, args: &str) -> View {
    let server = server();
    let base = server.base_url();
    let base = base.trim_end_matches('/');
    let out = scratch(&format!("{label}-out")).join("out.jsonl");
    let run = run_file(
        label,
        test,
        &server.base_url(),
        &format!("{args} --out json={}", out.display()),
        LIMIT,
    );
    assert_eq!(run.code(), Some(0), "{label}: stderr: {}", run.stderr());
    let (passes, fails) = (
        run.metric("checks", "passes"),
        run.metric("checks", "fails"),
    );
    assert!(
        passes > 0.0 && fails == 0.0,
        "{label}: {passes} checks passed, {fails} failed: {:#}",
        run.summary["root_group"]
    );

    let mut http_reqs: BTreeMap<String, u64> = BTreeMap::new();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    for line in text.lines() {
        let line: Value = serde_json::from_str(line).expect("a --out json line");
        if line["metric"] != "http_reqs" {
            continue;
        }
        let tags = line["tags"].to_string().replace(base, "BASE");
        *http_reqs.entry(tags).or_default() += line["values"]["sum"].as_f64().unwrap_or(0.0) as u64;
    }

    let mut metrics: BTreeMap<String, Value> = BTreeMap::new();
    let summary = &run.summary["metrics"];
    for (name, fields) in [
        ("http_req_failed", &["passes", "fails"][..]),
        ("iterations", &["count"][..]),
        ("iterations_failed", &["count"][..]),
    ] {
        for field in fields {
            metrics.insert(format!("{name}.{field}"), summary[name][*field].clone());
        }
    }
    if let Some(all) = summary.as_object() {
        for (name, values) in all.iter().filter(|(n, _)| n.starts_with("parity_")) {
            let mut values = values.clone();
            // A counter's rate per second depends on how long the run took.
            if let Some(v) = values.as_object_mut() {
                v.remove("rate");
            }
            metrics.insert(name.clone(), values);
        }
    }

    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    for line in run.stderr().lines() {
        if let Some(at) = line.find("parity: ") {
            // Languages add where a failure was raised: " (at file:line)".
            let said = &line[at..];
            let said = said.split(" (at ").next().unwrap_or(said).trim_end();
            *lines.entry(said.to_owned()).or_default() += 1;
        }
    }
    View {
        requests: server.stats.requests(),
        root_group: run.summary["root_group"].clone(),
        http_reqs,
        metrics,
        lines,
    }
}

/// A row's arguments with `{FREE_PORT}` filled in, and the Rust
/// example's view of them: once per row and test process, shared by the
/// languages.
fn rust_view(row: &Row) -> (String, &'static View) {
    static VIEWS: OnceLock<Mutex<HashMap<String, (String, &'static View)>>> = OnceLock::new();
    let views = VIEWS.get_or_init(Default::default);
    let mut views = views.lock().unwrap_or_else(|e| e.into_inner());
    views
        .entry(row.feature.clone())
        .or_insert_with(|| {
            let args = row.args.replace("{FREE_PORT}", &free_port().to_string());
            let label = format!("parity_rust_{}", views_label(&row.args));
            let seen: &'static View =
                Box::leak(Box::new(view(&label, &guest("http_features"), &args)));
            (args, seen)
        })
        .clone()
}

/// A file-name-safe label for a row: its `MODE=`.
fn views_label(args: &str) -> String {
    args.split_whitespace()
        .find_map(|a| a.strip_prefix("MODE="))
        .unwrap_or("mode")
        .to_owned()
}

/// Every row that claims `lang` (a column of the table), run in `lang`
/// and compared with Rust's run of the same arguments.
fn rows_agree_with_rust(lang: &str, test: &Path) {
    rows_of_column_agree_with_rust(lang, lang, test);
}

/// Every row that claims `column`, run by `test` (`lang`, one runtime of
/// that column's language) and compared with Rust's run.
fn rows_of_column_agree_with_rust(column: &str, lang: &str, test: &Path) {
    let rows = table();
    let claimed: Vec<&Row> = rows.iter().filter(|r| r.claims(column)).collect();
    assert!(
        !claimed.is_empty(),
        "docs/parity.md claims nothing for {column}"
    );
    for row in claimed {
        let (args, rust) = rust_view(row);
        let label = format!("parity_{}_{}", lang.to_lowercase(), views_label(&args));
        let seen = view(&label, test, &args);
        assert_eq!(
            &seen, rust,
            "docs/parity.md row {:?}: {lang} (left) and Rust (right) disagree with {args}",
            row.feature
        );
    }
}

/// The `lazy` row proves something only if reading the body would not
/// fit: in `lang`, reading it under the same `--vu-memory` fails the
/// iterations with the memory limit's message.
fn reading_the_lazy_body_does_not_fit(lang: &str, test: &Path) {
    let rows = table();
    let row = rows
        .iter()
        .find(|r| r.args.contains("MODE=lazy"))
        .expect("docs/parity.md has the lazy row");
    let server = server();
    let run = run_file(
        &format!("parity_{}_lazy_read", lang.to_lowercase()),
        test,
        &server.base_url(),
        &format!("{} -e READ=1", row.args),
        LIMIT,
    );
    assert_eq!(run.code(), Some(0), "{lang}: stderr: {}", run.stderr());
    assert_eq!(
        run.metric("iterations_failed", "count"),
        run.metric("iterations", "count"),
        "{lang}: reading the body fitted in the VU's memory"
    );
    assert!(
        run.stderr().contains("--vu-memory limit"),
        "{lang}: {}",
        run.stderr()
    );
}

#[test]
fn parity_rust_runs_every_row() {
    // Rust is the reference: each row's view is collected (and its checks
    // pass) even when no other language's test runs.
    for row in &table() {
        rust_view(row);
    }
}

#[test]
fn parity_javascript() {
    let test = languages::javascript().http_features_path("js");
    rows_agree_with_rust("JavaScript", test);
    reading_the_lazy_body_does_not_fit("JavaScript", test);
}

#[test]
fn parity_python() {
    let test = languages::python().http_features_path("python");
    rows_agree_with_rust("Python", test);
    reading_the_lazy_body_does_not_fit("Python", test);
}

/// examples/python/http_features.py unchanged, on MicroPython: the Python
/// column holds for both runtimes (docs/parity.md).
#[test]
fn parity_micropython() {
    let test = languages::micropython().http_features_path("micropython");
    rows_of_column_agree_with_rust("Python", "MicroPython", test);
    reading_the_lazy_body_does_not_fit("MicroPython", test);
}

#[test]
fn parity_assemblyscript() {
    let test = languages::assemblyscript().http_features_path("assemblyscript");
    rows_agree_with_rust("AssemblyScript", test);
}

#[test]
fn parity_go() {
    let test = languages::go().http_features_path("go");
    rows_agree_with_rust("Go", test);
}
