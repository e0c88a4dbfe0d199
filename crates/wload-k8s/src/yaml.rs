//! A YAML writer for the manifests, which are JSON values: block style,
//! as people write Kubernetes manifests and as `kubectl` shows them.
//!
//! JSON is a subset of YAML 1.2, so any scalar this cannot prove plain
//! (a word YAML 1.1 reads as a boolean, anything that could be a number,
//! any punctuation YAML gives a meaning to) is written as a JSON string,
//! which every YAML parser reads back as the same string. The manifests
//! are ours, so this needs no more of YAML than that. Keys come in
//! alphabetical order (serde_json's maps are sorted), as `kubectl get -o
//! yaml` prints them.

use serde_json::Value;

/// `docs` as one YAML stream, `---` before each document.
pub fn stream(docs: &[Value]) -> String {
    let mut out = String::new();
    for doc in docs {
        out.push_str("---\n");
        node(&mut out, doc, 0);
    }
    out
}

/// Write a document: a non-empty map or list as lines at `indent`, a
/// scalar or an empty collection on one line.
fn node(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                push_indent(out, indent);
                out.push_str(&scalar_text(k));
                out.push(':');
                entry_value(out, v, indent);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                // The item as if it were a map or list indented under the
                // dash, then the dash written over its first indent.
                let mut inner = String::new();
                match item {
                    Value::Object(m) if !m.is_empty() => node(&mut inner, item, indent + 2),
                    Value::Array(a) if !a.is_empty() => node(&mut inner, item, indent + 2),
                    _ => {
                        push_indent(&mut inner, indent + 2);
                        inner.push_str(&inline(item));
                        inner.push('\n');
                    }
                }
                push_indent(out, indent);
                out.push_str("- ");
                out.push_str(&inner[indent + 2..]);
            }
        }
        _ => {
            push_indent(out, indent);
            out.push_str(&inline(v));
            out.push('\n');
        }
    }
}

/// What follows `key:`.
fn entry_value(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            node(out, v, indent + 2);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            node(out, v, indent + 2);
        }
        _ => {
            out.push(' ');
            out.push_str(&inline(v));
            out.push('\n');
        }
    }
}

fn push_indent(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

/// A scalar or an empty collection, in flow style.
fn inline(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => scalar_text(s),
        Value::Array(_) => "[]".to_owned(),
        Value::Object(_) => "{}".to_owned(),
    }
}

/// Words YAML 1.1 parsers (PyYAML, many tools) read as booleans or null.
const RESERVED: [&str; 11] = [
    "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", "nan",
];

/// `s` plain when it starts with a letter or `/` and holds only letters,
/// digits and `. _ / -`, and is no reserved word; else a JSON string.
fn scalar_text(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '/')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-'))
        && !RESERVED.iter().any(|r| r.eq_ignore_ascii_case(s));
    if plain {
        s.to_owned()
    } else {
        Value::String(s.to_owned()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn maps_and_lists_are_block_style_and_risky_scalars_quoted() {
        let doc = json!({
            "apiVersion": "batch/v1",
            "spec": {
                "parallelism": 4,
                "empty": {},
                "none": [],
                "args": ["run", "--vus", "10", "yes", "1/4:1/2", "a b", "x: y"],
                "containers": [
                    {"name": "wload", "env": [{"name": "A", "value": "on"}]},
                    [1, 2],
                ],
                "label.io/key": "v-1",
                "ok": true,
            },
        });
        assert_eq!(
            stream(&[doc]),
            r#"---
apiVersion: batch/v1
spec:
  args:
    - run
    - "--vus"
    - "10"
    - "yes"
    - "1/4:1/2"
    - "a b"
    - "x: y"
  containers:
    - env:
        - name: A
          value: "on"
      name: wload
    - - 1
      - 2
  empty: {}
  label.io/key: v-1
  none: []
  ok: true
  parallelism: 4
"#
        );
    }

    #[test]
    fn control_characters_and_newlines_stay_in_one_json_string() {
        assert_eq!(scalar_text("a\nb\t\"c\""), r#""a\nb\t\"c\"""#);
        assert_eq!(scalar_text(""), r#""""#);
        assert_eq!(scalar_text("Null"), r#""Null""#);
        assert_eq!(scalar_text("e5"), "e5");
        assert_eq!(scalar_text("500m"), r#""500m""#);
        assert_eq!(scalar_text("/etc/wload"), "/etc/wload");
    }
}
