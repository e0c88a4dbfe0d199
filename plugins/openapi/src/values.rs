//! Valid values from JSON Schemas (OpenAPI 3.0's dialect and 3.1's): the
//! document's own `example`, `default`, `const` or first `enum` value when
//! it has one, else the smallest value the constraints allow, so that a
//! generated request is one the server must accept.

use serde_json::{Map, Value, json};

use crate::document::Document;

/// How deep schemas nest before a value stops growing: a recursive schema
/// (a tree node with children) ends in an empty object or array.
const MAX_DEPTH: usize = 12;

/// A value `schema` accepts, as sent in a request (`readOnly` properties
/// left out).
pub fn generate(doc: &Document, schema: &Value) -> Result<Value, String> {
    value(doc, schema, 0)
}

fn value(doc: &Document, schema: &Value, depth: usize) -> Result<Value, String> {
    let schema = doc.resolve(schema)?;
    let Some(obj) = schema.as_object() else {
        // `true` or `{}`: anything goes.
        return Ok(json!("wload"));
    };
    for key in ["const", "example", "default"] {
        if let Some(v) = obj.get(key) {
            return Ok(v.clone());
        }
    }
    if let Some(v) = obj
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return Ok(v.clone());
    }
    if let Some(v) = obj.get("enum").and_then(Value::as_array).and_then(|a| {
        // A nullable enum lists null too: prefer a real value.
        a.iter().find(|v| !v.is_null()).or_else(|| a.first())
    }) {
        return Ok(v.clone());
    }
    if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
        return all_of(doc, obj, all, depth);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(first) = obj.get(key).and_then(Value::as_array).and_then(|a| a.first()) {
            return value(doc, first, depth + 1);
        }
    }
    match type_of(obj).as_deref() {
        Some("string") => Ok(Value::String(string(obj))),
        Some("integer") => Ok(json!(integer(obj))),
        Some("number") => Ok(json!(number(obj))),
        Some("boolean") => Ok(json!(true)),
        Some("null") => Ok(Value::Null),
        Some("array") => array(doc, obj, depth),
        Some("object") => object(doc, obj, depth),
        Some(other) => Err(format!("unknown schema type {other:?}")),
        None if obj.contains_key("properties") => object(doc, obj, depth),
        None if obj.contains_key("items") => array(doc, obj, depth),
        None => Ok(json!("wload")),
    }
}

/// The schema's type: 3.0's `type: string`, or the first non-null one of
/// 3.1's `type: [string, "null"]`.
fn type_of(obj: &Map<String, Value>) -> Option<String> {
    match obj.get("type")? {
        Value::String(t) => Some(t.clone()),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .or(Some("null"))
            .map(str::to_owned),
        _ => None,
    }
}

/// Every part's value, objects merged (the usual use of `allOf`: a base
/// schema and its extension).
fn all_of(
    doc: &Document,
    obj: &Map<String, Value>,
    parts: &[Value],
    depth: usize,
) -> Result<Value, String> {
    let mut merged = Map::new();
    let mut last = None;
    for part in parts {
        match value(doc, part, depth + 1)? {
            Value::Object(m) => merged.extend(m),
            other => last = Some(other),
        }
    }
    // Properties beside the allOf belong to the same object.
    if obj.contains_key("properties")
        && let Value::Object(m) = object(doc, obj, depth)?
    {
        merged.extend(m);
    }
    Ok(match last {
        Some(v) if merged.is_empty() => v,
        _ => Value::Object(merged),
    })
}

fn string(obj: &Map<String, Value>) -> String {
    let base = match obj.get("format").and_then(Value::as_str) {
        Some("date-time") => "2026-01-02T03:04:05Z",
        Some("date") => "2026-01-02",
        Some("time") => "03:04:05Z",
        Some("email") => "wload@example.com",
        Some("uuid") => "6f1f1b6e-2a53-4f7c-9d0e-3a1c5b7d9e21",
        Some("uri" | "url" | "uri-reference" | "iri") => "https://example.com/wload",
        Some("hostname") => "example.com",
        Some("ipv4") => "192.0.2.1",
        Some("ipv6") => "2001:db8::1",
        Some("byte") => "d2xvYWQ=",
        _ => "wload",
    };
    let min = obj.get("minLength").and_then(Value::as_u64).unwrap_or(0);
    let max = obj.get("maxLength").and_then(Value::as_u64);
    let mut s = base.to_owned();
    let len = |s: &str| s.chars().count() as u64;
    while len(&s) < min {
        s.push('x');
    }
    if let Some(max) = max
        && len(&s) > max
    {
        s = s
            .chars()
            .take(usize::try_from(max).unwrap_or(usize::MAX))
            .collect();
    }
    s
}

/// The smallest whole number the bounds allow, 1 when they allow it (ids
/// and counts usually start there), a multiple of `multipleOf`.
fn integer(obj: &Map<String, Value>) -> i64 {
    let (min, max) = bounds(obj);
    let mut n: i64 = match min {
        Some((m, exclusive)) => {
            let floor = m.ceil() as i64;
            if exclusive && (floor as f64) <= m {
                floor + 1
            } else {
                floor
            }
        }
        None => 1,
    };
    if let Some((m, exclusive)) = max
        && ((n as f64) > m || (exclusive && (n as f64) >= m))
    {
        n = if exclusive { m.ceil() as i64 - 1 } else { m.floor() as i64 };
        if min.is_none() {
            n = n.min(1);
        }
    }
    if let Some(step) = obj.get("multipleOf").and_then(Value::as_i64)
        && step > 0
        && n % step != 0
    {
        n += step - n.rem_euclid(step);
    }
    n
}

fn number(obj: &Map<String, Value>) -> f64 {
    let (min, max) = bounds(obj);
    let mut n = match min {
        Some((m, true)) => m + 0.5,
        Some((m, false)) => m,
        None => 1.0,
    };
    if let Some((m, exclusive)) = max
        && (n > m || (exclusive && n >= m))
    {
        n = match min {
            Some((lo, _)) => (lo + m) / 2.0,
            None if exclusive => m - 1.0,
            None => m,
        };
    }
    n
}

/// `(minimum, exclusive)` and `(maximum, exclusive)`, in 3.0's form
/// (`exclusiveMinimum: true` with `minimum`) or 3.1's (`exclusiveMinimum:
/// 5`).
type Bound = Option<(f64, bool)>;

fn bounds(obj: &Map<String, Value>) -> (Bound, Bound) {
    let one = |inclusive: &str, exclusive: &str| -> Bound {
        match obj.get(exclusive) {
            Some(Value::Number(n)) => n.as_f64().map(|n| (n, true)),
            Some(Value::Bool(true)) => obj.get(inclusive).and_then(Value::as_f64).map(|n| (n, true)),
            _ => obj.get(inclusive).and_then(Value::as_f64).map(|n| (n, false)),
        }
    };
    (
        one("minimum", "exclusiveMinimum"),
        one("maximum", "exclusiveMaximum"),
    )
}

fn array(doc: &Document, obj: &Map<String, Value>, depth: usize) -> Result<Value, String> {
    let max = obj.get("maxItems").and_then(Value::as_u64);
    let min = obj.get("minItems").and_then(Value::as_u64).unwrap_or(0);
    let n = if depth >= MAX_DEPTH || max == Some(0) {
        min
    } else {
        min.max(1)
    };
    let items = obj.get("items").cloned().unwrap_or(json!({}));
    (0..n).map(|_| value(doc, &items, depth + 1)).collect()
}

fn object(doc: &Document, obj: &Map<String, Value>, depth: usize) -> Result<Value, String> {
    let mut out = Map::new();
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            let is_required = required.contains(&name.as_str());
            // Deep in a recursive schema only what must be there is.
            if depth >= MAX_DEPTH && !is_required {
                continue;
            }
            let resolved = doc.resolve(prop)?;
            if resolved.get("readOnly") == Some(&Value::Bool(true)) {
                continue;
            }
            out.insert(name.clone(), value(doc, prop, depth + 1)?);
        }
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gen_(schema: Value) -> Value {
        let doc = Document::new(json!({
            "openapi": "3.0.3",
            "paths": {},
            "components": {"schemas": {
                "Pet": {"type": "object", "required": ["name"], "properties": {
                    "id": {"type": "integer", "readOnly": true},
                    "name": {"type": "string", "minLength": 8},
                    "tag": {"type": "string", "enum": ["cat", "dog"]},
                    "kids": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}
                }}
            }}
        }));
        generate(&doc, &schema).unwrap()
    }

    #[test]
    fn constraints_give_the_smallest_valid_value() {
        assert_eq!(gen_(json!({"type": "integer"})), json!(1));
        assert_eq!(gen_(json!({"type": "integer", "minimum": 10})), json!(10));
        assert_eq!(gen_(json!({"type": "integer", "minimum": 10, "exclusiveMinimum": true})), json!(11));
        assert_eq!(gen_(json!({"type": "integer", "exclusiveMinimum": 3})), json!(4));
        assert_eq!(gen_(json!({"type": "integer", "maximum": -5})), json!(-5));
        assert_eq!(gen_(json!({"type": "integer", "minimum": 3, "multipleOf": 5})), json!(5));
        assert_eq!(gen_(json!({"type": "number", "minimum": 0, "exclusiveMaximum": 1})), json!(0.0));
        assert_eq!(gen_(json!({"type": "number", "exclusiveMinimum": 0, "maximum": 0.25})), json!(0.125));
        assert_eq!(gen_(json!({"type": "string", "maxLength": 3})), json!("wlo"));
        assert_eq!(gen_(json!({"type": "string", "format": "uuid"})), json!("6f1f1b6e-2a53-4f7c-9d0e-3a1c5b7d9e21"));
        assert_eq!(gen_(json!({"type": ["string", "null"], "minLength": 6})), json!("wloadx"));
        assert_eq!(gen_(json!({"type": "array", "items": {"type": "boolean"}, "minItems": 2})), json!([true, true]));
        assert_eq!(gen_(json!({"type": "string", "example": "given"})), json!("given"));
        assert_eq!(gen_(json!({"enum": [null, "b"]})), json!("b"));
    }

    #[test]
    fn objects_follow_references_and_leave_read_only_properties_out() {
        let pet = gen_(json!({"$ref": "#/components/schemas/Pet"}));
        assert_eq!(pet["name"], json!("wloadxxx"));
        assert_eq!(pet["tag"], json!("cat"));
        assert!(pet.get("id").is_none(), "{pet}");
        // Recursion stops, and the value stays finite.
        assert!(pet["kids"][0]["kids"].is_array());
        let merged = gen_(json!({"allOf": [
            {"$ref": "#/components/schemas/Pet"},
            {"type": "object", "properties": {"owner": {"type": "string"}}}
        ]}));
        assert_eq!(merged["owner"], json!("wload"));
        assert_eq!(merged["name"], json!("wloadxxx"));
    }
}
