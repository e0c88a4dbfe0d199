//! An OpenAPI 3 document (JSON or YAML) read into the operations one
//! iteration sends: each with its method, path template, filled-in URL,
//! headers, body and the statuses it declares.

use serde_json::{Map, Value};

use crate::values;

/// The methods a path item may have, in the order they are sent.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The parsed document, for resolving `$ref`s.
#[derive(Debug)]
pub struct Document {
    root: Value,
}

/// A status an operation declares: `200`, `2XX`, or `default` (any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Exact(u16),
    Class(u16),
    Default,
}

impl Status {
    pub fn matches(&self, status: u16) -> bool {
        match self {
            Status::Exact(s) => *s == status,
            Status::Class(c) => status / 100 == *c,
            // Anything the server answered; 0 is no answer at all.
            Status::Default => status != 0,
        }
    }

    /// The range of statuses it covers.
    pub fn range(&self) -> (u16, u16) {
        match self {
            Status::Exact(s) => (*s, *s),
            Status::Class(c) => (c * 100, c * 100 + 99),
            Status::Default => (100, 599),
        }
    }

    fn text(&self) -> String {
        match self {
            Status::Exact(s) => s.to_string(),
            Status::Class(c) => format!("{c}XX"),
            Status::Default => "default".to_owned(),
        }
    }
}

/// One operation, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// `GET`.
    pub method: String,
    /// `/pets/{id}`, as the document writes it.
    pub template: String,
    pub operation_id: Option<String>,
    /// The base URL, the path with its parameters filled in, the query.
    pub url: String,
    /// The `name` tag: the base URL and the path template.
    pub name: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub statuses: Vec<Status>,
    /// `GET /pets/{id} is 200 or 404`.
    pub check: String,
}

impl Operation {
    /// `METHOD /template`, how include/exclude and errors name it.
    pub fn key(&self) -> String {
        format!("{} {}", self.method, self.template)
    }

    /// Whether `selector` (an operationId, `METHOD /path` or `/path`)
    /// names it.
    pub fn selected_by(&self, selector: &str) -> bool {
        let s = selector.trim();
        self.operation_id.as_deref() == Some(s)
            || s == self.template
            || s.split_once(' ').is_some_and(|(m, p)| {
                m.eq_ignore_ascii_case(&self.method) && p.trim() == self.template
            })
    }
}

impl Document {
    #[cfg(test)]
    pub fn new(root: Value) -> Document {
        Document { root }
    }

    /// A document from its text, JSON or YAML, checked to be OpenAPI 3.
    pub fn parse(text: &str) -> Result<Document, String> {
        let root: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(json_err) => serde_yaml::from_str(text).map_err(|yaml_err| {
                format!("it is neither JSON ({json_err}) nor YAML ({yaml_err})")
            })?,
        };
        match root.get("openapi").and_then(Value::as_str) {
            Some(v) if v.starts_with("3.") => {}
            Some(v) => return Err(format!("it is OpenAPI {v}; this plugin reads OpenAPI 3.x")),
            None if root.get("swagger").is_some() => {
                return Err("it is Swagger 2.0; convert it to OpenAPI 3 (e.g. with \
                            swagger2openapi) first"
                    .to_owned());
            }
            None => return Err("it has no `openapi: 3.x` field: not an OpenAPI document".to_owned()),
        }
        if !root.get("paths").is_some_and(Value::is_object) {
            return Err("it has no `paths` object".to_owned());
        }
        Ok(Document { root })
    }

    /// `value`, or what its `$ref` points to (followed until it is not a
    /// reference). Only references into this document (`#/...`).
    pub fn resolve<'a>(&'a self, mut value: &'a Value) -> Result<&'a Value, String> {
        for _ in 0..32 {
            let Some(reference) = value.get("$ref").and_then(Value::as_str) else {
                return Ok(value);
            };
            let pointer = reference.strip_prefix('#').ok_or_else(|| {
                format!("$ref {reference:?} points outside the document, which this plugin does not follow")
            })?;
            value = self
                .root
                .pointer(pointer)
                .ok_or_else(|| format!("$ref {reference:?} points to nothing in the document"))?;
        }
        Err("a $ref chain loops".to_owned())
    }

    /// Every operation, paths in the document's order (sorted by path),
    /// methods in [`METHODS`]' order, against `base` (no trailing `/`).
    pub fn operations(&self, base: &str) -> Result<Vec<Operation>, String> {
        let mut out = Vec::new();
        let paths = self.root["paths"].as_object().cloned().unwrap_or_default();
        for (template, item) in &paths {
            let item = self.resolve(item)?;
            let shared = self.parameters(item)?;
            for method in METHODS {
                let Some(op) = item.get(method) else { continue };
                let key = format!("{} {template}", method.to_ascii_uppercase());
                let op = self
                    .operation(base, template, method, op, &shared)
                    .map_err(|e| format!("{key}: {e}"))?;
                out.push(op);
            }
        }
        Ok(out)
    }

    /// The `parameters` of a path item or operation, resolved.
    fn parameters(&self, holder: &Value) -> Result<Vec<Map<String, Value>>, String> {
        let mut out = Vec::new();
        for p in holder
            .get("parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match self.resolve(p)? {
                Value::Object(m) => out.push(m.clone()),
                _ => return Err("a parameter is not an object".to_owned()),
            }
        }
        Ok(out)
    }

    fn operation(
        &self,
        base: &str,
        template: &str,
        method: &str,
        op: &Value,
        shared: &[Map<String, Value>],
    ) -> Result<Operation, String> {
        // The operation's own parameters override the path item's of the
        // same name and location.
        let own = self.parameters(op)?;
        let mut params: Vec<Map<String, Value>> = shared
            .iter()
            .filter(|s| {
                !own.iter()
                    .any(|o| o.get("name") == s.get("name") && o.get("in") == s.get("in"))
            })
            .cloned()
            .collect();
        params.extend(own);

        let mut path = template.to_owned();
        let mut query = Vec::new();
        let mut headers = Vec::new();
        let mut cookies = Vec::new();
        for p in &params {
            let name = p.get("name").and_then(Value::as_str).ok_or("a parameter has no name")?;
            let place = p.get("in").and_then(Value::as_str).unwrap_or("query");
            let value = self.param_value(p).map_err(|e| format!("parameter {name}: {e}"))?;
            match place {
                "path" => {
                    path = path.replace(&format!("{{{name}}}"), &encode(&flat(&value)));
                }
                "query" => match &value {
                    Value::Array(items) => {
                        for v in items {
                            query.push(format!("{}={}", encode(name), encode(&flat(v))));
                        }
                    }
                    Value::Object(m) => {
                        for (k, v) in m {
                            query.push(format!("{}={}", encode(k), encode(&flat(v))));
                        }
                    }
                    v => query.push(format!("{}={}", encode(name), encode(&flat(v)))),
                },
                "header" => {
                    // OpenAPI: these three are described elsewhere, and a
                    // parameter of that name is ignored.
                    let lower = name.to_ascii_lowercase();
                    if !["accept", "content-type", "authorization"].contains(&lower.as_str()) {
                        headers.push((name.to_owned(), flat(&value)));
                    }
                }
                "cookie" => cookies.push(format!("{name}={}", flat(&value))),
                other => return Err(format!("parameter {name} is in {other:?}, not path, query, header or cookie")),
            }
        }
        if let Some(start) = path.find('{') {
            let end = path[start..].find('}').map_or(path.len(), |e| start + e + 1);
            return Err(format!(
                "the path parameter {} is not declared",
                &path[start..end]
            ));
        }
        if !cookies.is_empty() {
            headers.push(("cookie".to_owned(), cookies.join("; ")));
        }
        let body = match op.get("requestBody") {
            Some(rb) => self.body(self.resolve(rb)?, &mut headers)?,
            None => None,
        };
        let statuses = statuses(op)?;
        let mut url = format!("{base}{path}");
        if !query.is_empty() {
            url.push('?');
            url.push_str(&query.join("&"));
        }
        let method = method.to_ascii_uppercase();
        let check = format!(
            "{method} {template} is {}",
            or_list(&statuses.iter().map(Status::text).collect::<Vec<_>>())
        );
        Ok(Operation {
            method,
            template: template.to_owned(),
            operation_id: op.get("operationId").and_then(Value::as_str).map(str::to_owned),
            url,
            name: format!("{base}{template}"),
            headers,
            body,
            statuses,
            check,
        })
    }

    /// A parameter's value: its example, or one from its schema (or its
    /// `content`'s, sent as JSON text).
    fn param_value(&self, p: &Map<String, Value>) -> Result<Value, String> {
        if let Some(v) = p.get("example") {
            return Ok(v.clone());
        }
        if let Some(v) = first_example(p.get("examples"), self)? {
            return Ok(v);
        }
        if let Some(schema) = p.get("schema") {
            return values::generate(self, schema);
        }
        if let Some((_, media)) = p.get("content").and_then(Value::as_object).and_then(|c| c.iter().next()) {
            let v = match media.get("schema") {
                Some(schema) => values::generate(self, schema)?,
                None => Value::String("wload".to_owned()),
            };
            return Ok(Value::String(v.to_string()));
        }
        Ok(Value::String("wload".to_owned()))
    }

    /// The request body for the first media type this plugin can write:
    /// JSON (`application/json`, `*+json`), a form, or text.
    fn body(&self, rb: &Value, headers: &mut Vec<(String, String)>) -> Result<Option<Vec<u8>>, String> {
        let Some(content) = rb.get("content").and_then(Value::as_object) else {
            return Ok(None);
        };
        let pick = |want: &dyn Fn(&str) -> bool| content.iter().find(|(t, _)| want(&t.to_ascii_lowercase()));
        let json_like = |t: &str| t.starts_with("application/json") || t.contains("+json");
        let (media_type, media) = pick(&json_like)
            .or_else(|| pick(&|t| t.starts_with("application/x-www-form-urlencoded")))
            .or_else(|| pick(&|t| t.starts_with("text/")))
            .or_else(|| content.iter().next())
            .ok_or("the request body has no media type")?;
        let value = match (media.get("example"), first_example(media.get("examples"), self)?) {
            (Some(v), _) => v.clone(),
            (None, Some(v)) => v,
            (None, None) => match media.get("schema") {
                Some(schema) => values::generate(self, schema)?,
                None => Value::Object(Map::new()),
            },
        };
        let lower = media_type.to_ascii_lowercase();
        let bytes = if json_like(&lower) {
            value.to_string().into_bytes()
        } else if lower.starts_with("application/x-www-form-urlencoded") {
            match &value {
                Value::Object(m) => m
                    .iter()
                    .map(|(k, v)| format!("{}={}", encode(k), encode(&flat(v))))
                    .collect::<Vec<_>>()
                    .join("&")
                    .into_bytes(),
                v => flat(v).into_bytes(),
            }
        } else {
            flat(&value).into_bytes()
        };
        headers.push(("content-type".to_owned(), media_type.clone()));
        Ok(Some(bytes))
    }
}

/// The value of the first of an `examples` map (3.0: name → {value}).
fn first_example(examples: Option<&Value>, doc: &Document) -> Result<Option<Value>, String> {
    let Some((_, ex)) = examples.and_then(Value::as_object).and_then(|m| m.iter().next()) else {
        return Ok(None);
    };
    Ok(doc.resolve(ex)?.get("value").cloned())
}

/// The statuses `op` declares in `responses`.
fn statuses(op: &Value) -> Result<Vec<Status>, String> {
    let responses = op
        .get("responses")
        .and_then(Value::as_object)
        .ok_or("it declares no responses")?;
    let mut out = Vec::new();
    for key in responses.keys() {
        let upper = key.to_ascii_uppercase();
        let status = if upper == "DEFAULT" {
            Status::Default
        } else if let Some(class) = upper.strip_suffix("XX") {
            match class.parse::<u16>() {
                Ok(c @ 1..=5) if class.len() == 1 => Status::Class(c),
                _ => return Err(format!("response {key:?} is not a status, a class like 2XX or default")),
            }
        } else {
            match key.parse::<u16>() {
                Ok(s @ 100..=599) => Status::Exact(s),
                _ => return Err(format!("response {key:?} is not a status, a class like 2XX or default")),
            }
        };
        out.push(status);
    }
    if out.is_empty() {
        return Err("it declares no responses".to_owned());
    }
    // Exact statuses first, then classes, then default, as people read them.
    out.sort_by_key(|s| match s {
        Status::Exact(n) => (0, *n),
        Status::Class(c) => (1, *c),
        Status::Default => (2, 0),
    });
    Ok(out)
}

/// `a`, `a or b`, `a, b or c`.
fn or_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// A value as a parameter's text: strings as they are, the rest as JSON.
fn flat(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Percent-encoding of everything but RFC 3986's unreserved characters.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PETS: &str = r##"
openapi: 3.0.3
info: {title: pets, version: "1"}
paths:
  /pets/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: integer, minimum: 7}}
    get:
      operationId: getPet
      parameters:
        - {name: verbose, in: query, schema: {type: boolean}}
        - {name: X-Trace, in: header, schema: {type: string, example: abc}}
        - {name: Accept, in: header, schema: {type: string}}
      responses:
        "200": {description: ok}
        "404": {description: gone}
        4XX: {description: bad}
    put:
      requestBody:
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Pet"}
      responses:
        default: {description: any}
  /search:
    get:
      parameters:
        - {name: q, in: query, schema: {type: array, items: {type: string, enum: [a b, c]}, minItems: 2}}
      responses: {"200": {description: ok}}
components:
  schemas:
    Pet:
      type: object
      required: [name]
      properties:
        name: {type: string}
"##;

    #[test]
    fn every_operation_gets_a_valid_request_and_its_statuses() {
        let doc = Document::parse(PETS).unwrap();
        let ops = doc.operations("http://127.0.0.1:1").unwrap();
        let keys: Vec<String> = ops.iter().map(Operation::key).collect();
        assert_eq!(keys, ["GET /pets/{id}", "PUT /pets/{id}", "GET /search"]);
        let get = &ops[0];
        assert_eq!(get.url, "http://127.0.0.1:1/pets/7?verbose=true");
        assert_eq!(get.headers, [("X-Trace".to_owned(), "abc".to_owned())]);
        assert_eq!(get.check, "GET /pets/{id} is 200, 404 or 4XX");
        assert!(get.selected_by("getPet") && get.selected_by("get /pets/{id}") && get.selected_by("/pets/{id}"));
        assert!(!get.selected_by("PUT /pets/{id}"));
        let put = &ops[1];
        assert_eq!(put.body.as_deref(), Some(&b"{\"name\":\"wload\"}"[..]));
        assert_eq!(put.headers, [("content-type".to_owned(), "application/json".to_owned())]);
        assert_eq!(put.check, "PUT /pets/{id} is default");
        assert!(put.statuses[0].matches(503) && !put.statuses[0].matches(0));
        assert_eq!(ops[2].url, "http://127.0.0.1:1/search?q=a%20b&q=a%20b");
    }

    #[test]
    fn json_documents_read_too_and_others_are_refused_saying_why() {
        let json = serde_json::to_string(&serde_yaml::from_str::<Value>(PETS).unwrap()).unwrap();
        assert_eq!(Document::parse(&json).unwrap().operations("").unwrap().len(), 3);
        assert!(Document::parse("swagger: '2.0'\npaths: {}").unwrap_err().contains("Swagger 2.0"));
        assert!(Document::parse("openapi: 3.1.0\n").unwrap_err().contains("no `paths`"));
        assert!(Document::parse("{").unwrap_err().starts_with("it is neither JSON"));
        let undeclared = Document::parse(
            "openapi: 3.0.0\npaths:\n  /a/{x}:\n    get:\n      responses: {'200': {description: ok}}\n",
        )
        .unwrap();
        assert_eq!(
            undeclared.operations("").unwrap_err(),
            "GET /a/{x}: the path parameter {x} is not declared"
        );
    }
}
