//! A plugin's parameters: from the text the run was given (`-p
//! NAME=VALUE`, the options file's `params`, `@file` contents) to the
//! typed list `configure` takes, checked against the plugin's
//! description before any request, every problem reported at once with
//! the docs of the parameter at fault.
//!
//! Files are read here, by the host: a plugin has no filesystem.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use serde_json::{Map, Value};

use super::{Description, Param, ParamKind, ParamSpec, ParamValue};

/// Where a parameter's text came from: what `@file` is relative to, and
/// what messages name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `-p NAME=VALUE`; `@file` is relative to the working directory.
    Flag,
    /// The options file's `params`; `@file` is relative to its folder.
    OptionsFile(PathBuf),
}

/// One parameter as the run was given it, before it is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawParam {
    pub name: String,
    /// As given: `@path` stands for the file's contents, `@@…` for a
    /// value starting with a literal `@`.
    pub value: String,
    pub origin: Origin,
}

impl RawParam {
    /// Parse `-p NAME=VALUE`.
    pub fn from_flag(arg: &str) -> Result<RawParam, String> {
        match arg.split_once('=') {
            Some((name, value)) if !name.is_empty() => Ok(RawParam {
                name: name.to_owned(),
                value: value.to_owned(),
                origin: Origin::Flag,
            }),
            _ => Err(format!(
                "-p {arg:?}: expected NAME=VALUE or NAME=@FILE (e.g. -p har=@recording.har)"
            )),
        }
    }

    /// A value given as text, never read from a file: what a service's
    /// worker makes of the parameters its client sent (the client read
    /// the `@file`s; the service's files are not the user's), named as
    /// `-p NAME` is in messages.
    pub fn literal(name: &str, text: &str) -> RawParam {
        RawParam {
            name: name.to_owned(),
            // `@@` stands for a literal `@`.
            value: match text.strip_prefix('@') {
                Some(_) => format!("@{text}"),
                None => text.to_owned(),
            },
            origin: Origin::Flag,
        }
    }

    /// What `from` is when displayed: `-p think` or `params.think in
    /// options.json`.
    fn source(&self) -> String {
        match &self.origin {
            Origin::Flag => format!("-p {}", self.name),
            Origin::OptionsFile(file) => format!("params.{} in {}", self.name, file.display()),
        }
    }

    /// The value's text, with `@file` read.
    pub fn text(&self) -> Result<String, String> {
        if let Some(literal) = self.value.strip_prefix("@@") {
            return Ok(format!("@{literal}"));
        }
        let Some(file) = self.value.strip_prefix('@') else {
            return Ok(self.value.clone());
        };
        let path = match &self.origin {
            Origin::Flag => PathBuf::from(file),
            Origin::OptionsFile(options) => options.parent().unwrap_or(Path::new(".")).join(file),
        };
        let bytes = std::fs::read(&path).map_err(|e| {
            format!(
                "{}: cannot read {}: {e} (`@` reads a file; write `@@` for a value that starts with `@`)",
                self.source(),
                path.display()
            )
        })?;
        String::from_utf8(bytes)
            .map_err(|_| format!("{}: {} is not UTF-8 text", self.source(), path.display()))
    }
}

/// The `params` object of an options file, taken out of `options` (the
/// rest are run options). Strings are taken as given, other JSON values
/// as their JSON text, so `"headers": {"x": "1"}` reaches a `json`
/// parameter as written.
pub fn take_from_options(options: &mut Map<String, Value>, file: &Path) -> Result<Vec<RawParam>> {
    let Some(params) = options.remove("params") else {
        return Ok(Vec::new());
    };
    let Value::Object(params) = params else {
        bail!(
            "params in {} must be an object of plugin parameters, like {{\"think\": \"none\", \"har\": \"@recording.har\"}}",
            file.display()
        );
    };
    Ok(params
        .into_iter()
        .map(|(name, value)| RawParam {
            name,
            value: match value {
                Value::String(s) => s,
                other => other.to_string(),
            },
            origin: Origin::OptionsFile(file.to_owned()),
        })
        .collect())
}

/// The parameters `configure` gets: one per declared parameter, in the
/// description's order, from `given` (later ones override earlier ones
/// of the same name) or the default. `Err` lists every problem, each
/// with the docs of its parameter.
pub fn resolve(description: &Description, given: &[RawParam]) -> Result<Vec<Param>, String> {
    let mut problems = Vec::new();
    let mut last: HashMap<&str, &RawParam> = HashMap::new();
    for raw in given {
        if description.params.iter().any(|p| p.name == raw.name) {
            last.insert(&raw.name, raw);
        } else {
            let known: Vec<&str> = description.params.iter().map(|p| p.name.as_str()).collect();
            problems.push(format!(
                "  {}: {} has no parameter {:?}; it takes {} (see `wload plugin info`)",
                raw.source(),
                description.name,
                raw.name,
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    let mut params = Vec::with_capacity(description.params.len());
    for spec in &description.params {
        let text = match (last.get(spec.name.as_str()), &spec.default) {
            (Some(raw), _) => match raw.text() {
                Ok(text) => text,
                Err(e) => {
                    problems.push(with_docs(&e, spec));
                    continue;
                }
            },
            (None, Some(default)) => default.clone(),
            (None, None) => {
                problems.push(with_docs(
                    &format!(
                        "parameter {} is required: give it with -p {}=VALUE (or -p {}=@FILE)",
                        spec.name, spec.name, spec.name
                    ),
                    spec,
                ));
                continue;
            }
        };
        match value(spec, &text) {
            Ok(value) => params.push(Param {
                name: spec.name.clone(),
                value,
            }),
            Err(e) => {
                let source = last
                    .get(spec.name.as_str())
                    .map_or_else(|| format!("parameter {}", spec.name), |r| r.source());
                problems.push(with_docs(&format!("{source}: {e}"), spec));
            }
        }
    }
    if problems.is_empty() {
        Ok(params)
    } else {
        let n = problems.len();
        Err(format!(
            "invalid parameters for the plugin {} ({n} problem{}):\n\n{}",
            description.name,
            if n == 1 { "" } else { "s" },
            problems.join("\n\n")
        ))
    }
}

/// A problem with `spec`, followed by its docs.
pub fn with_docs(problem: &str, spec: &ParamSpec) -> String {
    format!("  {problem}\n{}", spec_help(spec))
}

/// `text` read as `spec` says.
fn value(spec: &ParamSpec, text: &str) -> Result<ParamValue, String> {
    if !spec.choices.is_empty() && !spec.choices.iter().any(|c| c == text) {
        return Err(format!(
            "{} is not one of {}",
            shown(text),
            spec.choices.join(", ")
        ));
    }
    let t = text.trim();
    match spec.kind {
        ParamKind::Text => Ok(ParamValue::Text(text.to_owned())),
        ParamKind::Integer => t
            .parse::<i64>()
            .map(ParamValue::Integer)
            .map_err(|_| format!("{} is not a whole number", shown(text))),
        ParamKind::Number => match t.parse::<f64>() {
            Ok(n) if n.is_finite() => Ok(ParamValue::Number(n)),
            _ => Err(format!("{} is not a finite number", shown(text))),
        },
        ParamKind::Boolean => match t {
            "true" => Ok(ParamValue::Boolean(true)),
            "false" => Ok(ParamValue::Boolean(false)),
            _ => Err(format!("{} is not true or false", shown(text))),
        },
        ParamKind::Duration => wload_units::parse_duration(t).and_then(|d| {
            u64::try_from(d.as_nanos())
                .map(ParamValue::Duration)
                .map_err(|_| format!("{} is too long", shown(text)))
        }),
        ParamKind::Json => match serde_json::from_str::<Value>(text) {
            Ok(_) => Ok(ParamValue::Json(text.to_owned())),
            Err(e) => Err(format!("not valid JSON: {e}")),
        },
    }
}

/// A value as messages quote it: long ones (a file's contents) cut.
fn shown(text: &str) -> String {
    const MAX: usize = 60;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}

pub fn kind_name(kind: ParamKind) -> &'static str {
    match kind {
        ParamKind::Text => "text",
        ParamKind::Integer => "integer",
        ParamKind::Number => "number",
        ParamKind::Boolean => "boolean",
        ParamKind::Duration => "duration",
        ParamKind::Json => "json",
    }
}

/// One parameter as `wload plugin info` shows it (and errors about it):
/// its name, kind, default or "required", choices, then its docs.
pub fn spec_help(spec: &ParamSpec) -> String {
    let mut head = format!("    {} ({}", spec.name, kind_name(spec.kind));
    match &spec.default {
        Some(d) => head.push_str(&format!(", default {d:?}")),
        None => head.push_str(", required"),
    }
    if !spec.choices.is_empty() {
        head.push_str(&format!("; one of: {}", spec.choices.join(", ")));
    }
    head.push(')');
    let docs: Vec<String> = spec.docs.lines().flat_map(|l| wrap(l, 8)).collect();
    if docs.is_empty() {
        head
    } else {
        format!("{head}\n{}", docs.join("\n"))
    }
}

/// Lines of at most 80 columns (a longer word stays whole), indented by
/// `indent` spaces; an empty line stays empty.
fn wrap(line: &str, indent: usize) -> Vec<String> {
    const WIDTH: usize = 80;
    let pad = " ".repeat(indent);
    let mut lines = Vec::new();
    let mut current = String::new();
    for word in line.split_whitespace() {
        if !current.is_empty() && indent + current.len() + 1 + word.len() > WIDTH {
            lines.push(format!("{pad}{current}"));
            current.clear();
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
    }
    lines.push(if current.is_empty() {
        String::new()
    } else {
        format!("{pad}{current}")
    });
    lines
}

/// A whole description as `wload plugin info` prints it.
pub fn info_text(d: &Description) -> String {
    let mut out = format!("{} {}: {}\n", d.name, d.version, d.summary);
    if !d.docs.trim().is_empty() {
        out.push('\n');
        for line in d.docs.lines().flat_map(|l| wrap(l, 2)) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.push_str(
        "\nparameters (-p NAME=VALUE, -p NAME=@FILE, or \"params\" in the options file):\n",
    );
    if d.params.is_empty() {
        out.push_str("    none\n");
    }
    for spec in &d.params {
        out.push_str(&spec_help(spec));
        out.push('\n');
    }
    out
}

/// A description as JSON, for `wload plugin info --json`.
pub fn info_json(d: &Description) -> Value {
    serde_json::json!({
        "name": d.name,
        "version": d.version,
        "summary": d.summary,
        "docs": d.docs,
        "params": d.params.iter().map(|p| serde_json::json!({
            "name": p.name,
            "kind": kind_name(p.kind),
            "default": p.default,
            "required": p.default.is_none(),
            "choices": p.choices,
            "docs": p.docs,
        })).collect::<Vec<_>>(),
    })
}

/// A description the engine can hold parameters to: valid, unique names
/// and defaults (and choices) that are values of their kind. A failure is
/// the plugin author's to fix, and says so.
pub fn check_description(d: &Description) -> Result<()> {
    let mut problems = Vec::new();
    if d.name.trim().is_empty() {
        problems.push("its name is empty".to_owned());
    }
    let mut seen = std::collections::HashSet::new();
    for spec in &d.params {
        if !valid_name(&spec.name) {
            problems.push(format!(
                "parameter {:?}: a name is lower case ASCII letters, digits, - and _, starting with a letter",
                spec.name
            ));
        }
        if !seen.insert(spec.name.as_str()) {
            problems.push(format!("parameter {:?} is declared twice", spec.name));
        }
        if let Some(default) = &spec.default
            && let Err(e) = value(spec, default)
        {
            problems.push(format!("parameter {}: its default {e}", spec.name));
        }
        let any = ParamSpec {
            choices: Vec::new(),
            ..spec.clone()
        };
        for choice in &spec.choices {
            if let Err(e) = value(&any, choice) {
                problems.push(format!("parameter {}: its choice {e}", spec.name));
            }
        }
    }
    if !problems.is_empty() {
        bail!(
            "the plugin's description is not usable (a bug for its author): {}",
            problems.join("; ")
        );
    }
    Ok(())
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, kind: ParamKind, default: Option<&str>, choices: &[&str]) -> ParamSpec {
        ParamSpec {
            name: name.to_owned(),
            kind,
            default: default.map(str::to_owned),
            choices: choices.iter().map(|c| (*c).to_owned()).collect(),
            docs: format!("The {name}.\nSecond line."),
        }
    }

    fn description() -> Description {
        Description {
            name: "demo".to_owned(),
            version: "0.1.0".to_owned(),
            summary: "A demo.".to_owned(),
            docs: String::new(),
            params: vec![
                spec("data", ParamKind::Json, None, &[]),
                spec("mode", ParamKind::Text, Some("fast"), &["fast", "slow"]),
                spec("count", ParamKind::Integer, Some("3"), &[]),
                spec("scale", ParamKind::Number, Some("1.5"), &[]),
                spec("strict", ParamKind::Boolean, Some("true"), &[]),
                spec("pause", ParamKind::Duration, Some("250ms"), &[]),
            ],
        }
    }

    #[test]
    fn a_literal_value_is_never_read_as_a_file() {
        for text in ["plain", "@/etc/passwd", "@@two", ""] {
            let raw = RawParam::literal("p", text);
            assert_eq!(raw.text().as_deref(), Ok(text), "{text:?}");
            assert_eq!(raw.source(), "-p p");
        }
    }

    fn flag(arg: &str) -> RawParam {
        RawParam::from_flag(arg).expect("a NAME=VALUE flag")
    }

    #[test]
    fn defaults_fill_in_and_kinds_are_read() {
        let params = resolve(&description(), &[flag("data={\"a\":1}"), flag("count=7")])
            .expect("valid parameters");
        let values: Vec<(&str, &ParamValue)> =
            params.iter().map(|p| (p.name.as_str(), &p.value)).collect();
        assert!(matches!(values[0], ("data", ParamValue::Json(j)) if j == "{\"a\":1}"));
        assert!(matches!(values[1], ("mode", ParamValue::Text(t)) if t == "fast"));
        assert!(matches!(values[2], ("count", ParamValue::Integer(7))));
        assert!(matches!(values[3], ("scale", ParamValue::Number(n)) if *n == 1.5));
        assert!(matches!(values[4], ("strict", ParamValue::Boolean(true))));
        assert!(matches!(
            values[5],
            ("pause", ParamValue::Duration(250_000_000))
        ));
    }

    #[test]
    fn later_values_override_earlier_ones() {
        let file = RawParam {
            name: "mode".to_owned(),
            value: "slow".to_owned(),
            origin: Origin::OptionsFile("o.json".into()),
        };
        let params = resolve(&description(), &[file, flag("data=1"), flag("mode=fast")])
            .expect("valid parameters");
        assert!(matches!(&params[1].value, ParamValue::Text(t) if t == "fast"));
    }

    #[test]
    fn every_problem_is_reported_with_the_docs_of_its_parameter() {
        let err = resolve(
            &description(),
            &[flag("mode=medium"), flag("count=3.5"), flag("colour=red")],
        )
        .expect_err("three problems");
        assert!(err.contains("(4 problems)"), "{err}");
        assert!(err.contains("demo has no parameter \"colour\""), "{err}");
        assert!(err.contains("parameter data is required"), "{err}");
        assert!(err.contains("\"medium\" is not one of fast, slow"), "{err}");
        assert!(err.contains("\"3.5\" is not a whole number"), "{err}");
        assert!(
            err.contains("    count (integer, default \"3\")\n        The count."),
            "{err}"
        );
    }

    #[test]
    fn at_reads_a_file_and_double_at_escapes() {
        let dir = std::env::temp_dir().join(format!("wload-params-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("data.json"), "[1, 2]").expect("write");
        let file = RawParam {
            name: "data".to_owned(),
            value: "@data.json".to_owned(),
            origin: Origin::OptionsFile(dir.join("options.json")),
        };
        let params = resolve(&description(), &[file, flag("mode=@@fast")]);
        let err = params.expect_err("@fast is not a choice");
        assert!(err.contains("\"@fast\" is not one of"), "{err}");
        let file = RawParam {
            name: "data".to_owned(),
            value: "@data.json".to_owned(),
            origin: Origin::OptionsFile(dir.join("options.json")),
        };
        let params = resolve(&description(), &[file]).expect("valid parameters");
        assert!(matches!(&params[0].value, ParamValue::Json(j) if j == "[1, 2]"));
        let err = resolve(&description(), &[flag("data=@/nonexistent/wload.har")])
            .expect_err("missing file");
        assert!(
            err.contains("-p data: cannot read /nonexistent/wload.har"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_bad_description_is_the_authors_bug() {
        let mut d = description();
        d.params.push(spec("Bad Name", ParamKind::Text, None, &[]));
        d.params
            .push(spec("count", ParamKind::Integer, Some("many"), &[]));
        let err = check_description(&d)
            .expect_err("bad description")
            .to_string();
        assert!(err.contains("\"Bad Name\": a name is"), "{err}");
        assert!(err.contains("\"count\" is declared twice"), "{err}");
        assert!(
            err.contains("its default \"many\" is not a whole number"),
            "{err}"
        );
        check_description(&description()).expect("a good description");
    }

    #[test]
    fn options_file_params_keep_json_values_as_json() {
        let mut options = serde_json::json!({"vus": 2, "params": {"data": {"a": [1]}, "mode": "slow", "count": 4}})
            .as_object()
            .cloned()
            .expect("an object");
        let raw = take_from_options(&mut options, Path::new("o.json")).expect("params");
        assert!(!options.contains_key("params"));
        let values: HashMap<_, _> = raw
            .iter()
            .map(|r| (r.name.as_str(), r.value.as_str()))
            .collect();
        assert_eq!(values["data"], "{\"a\":[1]}");
        assert_eq!(values["mode"], "slow");
        assert_eq!(values["count"], "4");
    }
}
