//! `--out influxdb[=URL]`: the run's metrics written to InfluxDB 1.x in
//! its line protocol, in k6's layout (its `influxdb` output): one
//! measurement per metric, the series' tags as tags, the database named
//! by the URL's path (`http://localhost:8086/k6`), created at the start.
//!
//! Where k6 writes one point per sample, wload writes one point per
//! output interval and series, with the interval's aggregate in the
//! `value` field (a counter's sum, a gauge's last value, a rate's ratio,
//! a trend's mean) and its exact figures beside it (`count`, `passes`,
//! `fails`, `sum`, `min`, `max`, `med`, `p90`, `p95`, `p99`): sums of
//! those over a run are the summary's totals. Points are batched per push
//! interval. The settings are k6's `K6_INFLUXDB_*` variables with a
//! `WLOAD_` prefix (docs/guide.md, "Grafana").

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, anyhow};
use wload_http::TlsOptions;
use wload_metrics::{MetricDef, Sink, TagSet};
use wload_units::parse_duration;

use super::push::{Endpoint, Push, Pusher, basic_auth, parse_bool};
use super::{IntervalView, Output};
use crate::trend_stat;

/// k6's default: a local InfluxDB, database `k6`.
pub const DEFAULT_URL: &str = "http://localhost:8086/k6";

const ENV: &str = "WLOAD_INFLUXDB_";

const SETTINGS: [&str; 12] = [
    "ADDR",
    "DB",
    "USERNAME",
    "PASSWORD",
    "INSECURE",
    "CA_CERTIFICATE",
    "PUSH_INTERVAL",
    "PRECISION",
    "RETENTION",
    "CONSISTENCY",
    "TAGS_AS_FIELDS",
    "TIMEOUT",
];

/// What a database name escapes in a URL path.
const NAME_ESCAPES: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.');

/// Points per request: InfluxDB's advice for batches is 5,000 to 10,000.
const BATCH: usize = 5000;

/// The type a tag moved into a field is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    String,
    Int,
    Float,
    Bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InfluxConfig {
    /// `http://host:port` (and any path before the database).
    pub addr: String,
    pub db: String,
    /// `Authorization` header, with a user.
    pub auth: Option<String>,
    pub insecure: bool,
    pub ca_certificate: Option<PathBuf>,
    pub push_interval: Duration,
    /// `ns`, `u`, `ms`, `s`, `m` or `h`.
    pub precision: String,
    pub retention: Option<String>,
    pub consistency: Option<String>,
    /// Tags written as fields instead (not indexed).
    pub tags_as_fields: Vec<(String, FieldType)>,
    pub timeout: Duration,
}

impl InfluxConfig {
    /// The settings from `WLOAD_INFLUXDB_*`; `url` is the flag's
    /// (`--out influxdb=URL`: address, database, `user:password@`).
    pub fn from_env(url: Option<&str>, env: &BTreeMap<String, String>) -> Result<Self, String> {
        let get = |key: &str| env.get(&format!("{ENV}{key}")).map(String::as_str);
        let var = |key: &str| format!("{ENV}{key}");
        let mut problems = Vec::new();
        for name in env.keys().filter_map(|k| k.strip_prefix(ENV)) {
            if !SETTINGS.contains(&name) {
                problems.push(format!(
                    "{ENV}{name} is not a setting of --out influxdb; they are {ENV}{}",
                    SETTINGS.join(&format!(", {ENV}"))
                ));
            }
        }
        let text = url
            .map(str::to_owned)
            .or_else(|| {
                get("ADDR").map(|a| {
                    let db = get("DB").unwrap_or("k6");
                    let db = percent_encoding::utf8_percent_encode(db, NAME_ESCAPES);
                    format!("{}/{db}", a.trim_end_matches('/'))
                })
            })
            .unwrap_or_else(|| DEFAULT_URL.to_owned());
        let (mut addr, mut db, mut auth) = (String::new(), String::new(), None);
        match url::Url::parse(&text) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => {
                let path = u.path().trim_matches('/');
                let (prefix, name) = path.rsplit_once('/').unwrap_or(("", path));
                db = percent_encoding::percent_decode_str(name)
                    .decode_utf8_lossy()
                    .into_owned();
                let mut base = u.clone();
                base.set_path(prefix);
                base.set_query(None);
                let _ = base.set_username("");
                let _ = base.set_password(None);
                addr = base.as_str().trim_end_matches('/').to_owned();
                if !u.username().is_empty() {
                    auth = Some(basic_auth(u.username(), u.password().unwrap_or("")));
                }
                if u.query().is_some() {
                    problems.push(format!(
                        "--out influxdb={text}: settings go in {ENV}* variables, not the query"
                    ));
                }
            }
            _ => problems.push(format!(
                "--out influxdb: {text:?} is not an http:// or https:// URL with the database \
                 as its path (e.g. http://localhost:8086/k6)"
            )),
        }
        // The URL's database, else the variable's, else k6's default.
        if db.is_empty() {
            db = get("DB").unwrap_or("k6").to_owned();
        }
        match (get("USERNAME"), get("PASSWORD")) {
            (Some(user), password) => auth = Some(basic_auth(user, password.unwrap_or(""))),
            (None, Some(_)) => problems.push(format!(
                "{ENV}PASSWORD is set without {ENV}USERNAME: set both"
            )),
            (None, None) => {}
        }
        let insecure = match get("INSECURE") {
            None => false,
            Some(v) => parse_bool(&var("INSECURE"), v).unwrap_or_else(|e| {
                problems.push(e);
                false
            }),
        };
        let duration = |key: &str, default: Duration, problems: &mut Vec<String>| match get(key) {
            None => default,
            Some(v) => match parse_duration(v) {
                Ok(d) if !d.is_zero() => d,
                _ => {
                    problems.push(format!(
                        "{}={v:?} is not a duration above zero, e.g. 1s",
                        var(key)
                    ));
                    default
                }
            },
        };
        let push_interval = duration("PUSH_INTERVAL", Duration::from_secs(1), &mut problems);
        let timeout = duration("TIMEOUT", Duration::from_secs(5), &mut problems);
        let precision = get("PRECISION").unwrap_or("ns").to_owned();
        if divisor(&precision).is_none() {
            problems.push(format!(
                "{ENV}PRECISION={precision:?}: use ns, u, ms, s, m or h"
            ));
        }
        let mut tags_as_fields = Vec::new();
        for item in get("TAGS_AS_FIELDS")
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let (name, kind) = item.split_once(':').unwrap_or((item, "string"));
            let kind = match kind {
                "string" => FieldType::String,
                "int" => FieldType::Int,
                "float" => FieldType::Float,
                "bool" => FieldType::Bool,
                other => {
                    problems.push(format!(
                        "{ENV}TAGS_AS_FIELDS: {other:?} in {item:?} is not a field type; use \
                         string, int, float or bool (e.g. vu:int,url)"
                    ));
                    FieldType::String
                }
            };
            tags_as_fields.push((name.to_owned(), kind));
        }
        if !problems.is_empty() {
            return Err(problems.join("\n"));
        }
        Ok(InfluxConfig {
            addr,
            db,
            auth,
            insecure,
            ca_certificate: get("CA_CERTIFICATE").map(PathBuf::from),
            push_interval,
            precision,
            retention: get("RETENTION").map(str::to_owned),
            consistency: get("CONSISTENCY").map(str::to_owned),
            tags_as_fields,
            timeout,
        })
    }

    fn write_url(&self) -> String {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        q.append_pair("db", &self.db);
        q.append_pair("precision", &self.precision);
        if let Some(rp) = &self.retention {
            q.append_pair("rp", rp);
        }
        if let Some(c) = &self.consistency {
            q.append_pair("consistency", c);
        }
        format!("{}/write?{}", self.addr, q.finish())
    }
}

/// Nanoseconds per unit of a precision.
fn divisor(precision: &str) -> Option<u64> {
    Some(match precision {
        "ns" | "n" => 1,
        "u" | "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

pub struct InfluxOut {
    config: InfluxConfig,
    pusher: Pusher,
    /// Lines not pushed yet.
    lines: Vec<String>,
    pushed_at: f64,
}

impl InfluxOut {
    pub fn open(url: Option<&str>, env: &BTreeMap<String, String>) -> Result<InfluxOut> {
        let config = InfluxConfig::from_env(url, env).map_err(|e| anyhow!(e))?;
        let endpoint = Endpoint {
            label: format!("--out influxdb ({}, database {})", config.addr, config.db),
            headers: config
                .auth
                .iter()
                .map(|a| ("Authorization".to_owned(), a.clone()))
                .collect(),
            tls: TlsOptions {
                insecure_skip_verify: config.insecure,
                ca_files: config.ca_certificate.iter().cloned().collect(),
                client_cert: None,
            },
            timeout: config.timeout,
        };
        let pusher = Pusher::start(endpoint)?;
        // As k6 does: the database is there before the first write (an
        // existing one is left as it is).
        let create = format!("CREATE DATABASE {}", quote_identifier(&config.db));
        pusher.push(Push {
            url: format!("{}/query", config.addr),
            headers: vec![(
                "Content-Type",
                "application/x-www-form-urlencoded".to_owned(),
            )],
            body: url::form_urlencoded::Serializer::new(String::new())
                .append_pair("q", &create)
                .finish()
                .into(),
        });
        Ok(InfluxOut {
            config,
            pusher,
            lines: Vec::new(),
            pushed_at: 0.0,
        })
    }

    fn flush(&mut self) {
        let lines = std::mem::take(&mut self.lines);
        for chunk in lines.chunks(BATCH) {
            let mut body = chunk.join("\n");
            body.push('\n');
            self.pusher.push(Push {
                url: self.config.write_url(),
                headers: vec![("Content-Type", "text/plain; charset=utf-8".to_owned())],
                body: body.into(),
            });
        }
    }
}

impl Output for InfluxOut {
    fn write(&mut self, view: &IntervalView) -> Result<()> {
        let unit = divisor(&self.config.precision).unwrap_or(1);
        let stamp = (view.time * 1e9) as u64 / unit;
        let rows = view.sorted();
        lines(&rows, stamp, &self.config.tags_as_fields, &mut self.lines);
        if view.end - self.pushed_at >= self.config.push_interval.as_secs_f64() {
            self.pushed_at = view.end;
            self.flush();
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.flush();
        self.pusher.finish();
        Ok(())
    }
}

/// The lines of one interval's series, stamped `stamp`. Points with the
/// same measurement and tags at one time are one point to InfluxDB:
/// series that differ only by a tag moved into a field are written one
/// time unit apart instead, so that none overwrites another.
fn lines(
    rows: &[(&MetricDef, &TagSet, &Sink)],
    stamp: u64,
    tags_as_fields: &[(String, FieldType)],
    out: &mut Vec<String>,
) {
    let mut taken: HashMap<String, u64> = HashMap::new();
    for (def, tags, sink) in rows {
        if sink.samples() == 0 {
            continue;
        }
        let (key, fields) = point(def, tags, sink, tags_as_fields);
        let n = taken.entry(key.clone()).or_default();
        let mut line = key;
        line.push(' ');
        line.push_str(&fields);
        let _ = write!(line, " {}", stamp + *n);
        *n += 1;
        out.push(line);
    }
}

/// `measurement,tags` and `fields` of one series in one interval.
fn point(
    def: &MetricDef,
    tags: &TagSet,
    sink: &Sink,
    tags_as_fields: &[(String, FieldType)],
) -> (String, String) {
    let mut key = String::with_capacity(64);
    escape(&def.name, &[',', ' '], &mut key);
    let mut extra = String::new();
    for (k, v) in tags.iter() {
        if let Some((_, kind)) = tags_as_fields.iter().find(|(name, _)| name == k) {
            extra.push(',');
            escape(k, &[',', '=', ' '], &mut extra);
            extra.push('=');
            field_value(v, *kind, &mut extra);
            continue;
        }
        // InfluxDB refuses empty tag values.
        if v.is_empty() {
            continue;
        }
        key.push(',');
        escape(k, &[',', '=', ' '], &mut key);
        key.push('=');
        escape(v, &[',', '=', ' '], &mut key);
    }
    let mut fields = String::with_capacity(96);
    let float = |fields: &mut String, name: &str, v: f64| {
        if v.is_finite() {
            if !fields.is_empty() {
                fields.push(',');
            }
            // `{:?}` keeps a `.0`: InfluxDB then types the field float,
            // the same in every point.
            let _ = write!(fields, "{name}={v:?}");
        }
    };
    let int = |fields: &mut String, name: &str, v: u64| {
        if !fields.is_empty() {
            fields.push(',');
        }
        let _ = write!(fields, "{name}={v}i");
    };
    match sink {
        Sink::Counter { sum, count } => {
            float(&mut fields, "value", *sum);
            int(&mut fields, "count", *count);
        }
        Sink::Gauge { last, min, max, .. } => {
            float(&mut fields, "value", *last);
            float(&mut fields, "min", *min);
            float(&mut fields, "max", *max);
        }
        Sink::Rate { trues, total } => {
            let ratio = if *total == 0 {
                0.0
            } else {
                *trues as f64 / *total as f64
            };
            float(&mut fields, "value", ratio);
            int(&mut fields, "passes", *trues);
            int(&mut fields, "fails", total - trues);
        }
        Sink::Trend(t) => {
            float(&mut fields, "value", t.avg());
            int(&mut fields, "count", t.count);
            float(&mut fields, "sum", t.sum);
            for (name, stat) in [
                ("min", "min"),
                ("max", "max"),
                ("med", "med"),
                ("p90", "p(90)"),
                ("p95", "p(95)"),
                ("p99", "p(99)"),
            ] {
                float(&mut fields, name, trend_stat(t, stat));
            }
        }
    }
    fields.push_str(&extra);
    (key, fields)
}

/// A tag value moved into a field, typed as asked; one that does not
/// parse as its type is written as a string.
fn field_value(v: &str, kind: FieldType, out: &mut String) {
    match kind {
        FieldType::Int if v.parse::<i64>().is_ok() => {
            let _ = write!(out, "{v}i");
        }
        FieldType::Float if v.parse::<f64>().is_ok_and(f64::is_finite) => {
            let _ = write!(out, "{:?}", v.parse::<f64>().unwrap_or_default());
        }
        FieldType::Bool if matches!(v, "true" | "false") => out.push_str(v),
        _ => {
            out.push('"');
            for c in v.chars() {
                if matches!(c, '"' | '\\') {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
        }
    }
}

/// Line-protocol escaping of names and tag values: `special` characters
/// get a backslash; line breaks, which cannot be escaped, become spaces.
fn escape(s: &str, special: &[char], out: &mut String) {
    for c in s.chars() {
        let c = if c == '\n' || c == '\r' { ' ' } else { c };
        if special.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
}

/// An InfluxQL identifier in double quotes.
fn quote_identifier(name: &str) -> String {
    let mut out = String::from("\"");
    for c in name.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use wload_metrics::{MetricKind, TrendSink, ValueKind};

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (format!("{ENV}{k}"), v.to_string()))
            .collect()
    }

    #[test]
    fn the_url_names_the_database_and_settings_are_k6s() {
        let c = InfluxConfig::from_env(None, &BTreeMap::new()).unwrap();
        assert_eq!(
            (c.addr.as_str(), c.db.as_str()),
            ("http://localhost:8086", "k6")
        );
        assert_eq!(c.push_interval, Duration::from_secs(1));
        assert_eq!(
            c.write_url(),
            "http://localhost:8086/write?db=k6&precision=ns"
        );
        let c = InfluxConfig::from_env(
            Some("https://me:secret@127.0.0.1:8087/prefix/load%20tests"),
            &env(&[
                ("RETENTION", "week"),
                ("PRECISION", "ms"),
                ("TAGS_AS_FIELDS", "vu:int,url"),
            ]),
        )
        .unwrap();
        assert_eq!(c.addr, "https://127.0.0.1:8087/prefix");
        assert_eq!(c.db, "load tests");
        assert_eq!(c.auth.as_deref(), Some(basic_auth("me", "secret").as_str()));
        assert_eq!(
            c.write_url(),
            "https://127.0.0.1:8087/prefix/write?db=load+tests&precision=ms&rp=week"
        );
        assert_eq!(
            c.tags_as_fields,
            [
                ("vu".to_owned(), FieldType::Int),
                ("url".to_owned(), FieldType::String)
            ]
        );
        let c = InfluxConfig::from_env(
            None,
            &env(&[("ADDR", "http://127.0.0.1:9/"), ("DB", "mine")]),
        )
        .unwrap();
        assert_eq!(
            (c.addr.as_str(), c.db.as_str()),
            ("http://127.0.0.1:9", "mine")
        );
    }

    #[test]
    fn bad_settings_are_all_named() {
        let err = InfluxConfig::from_env(
            Some("localhost:8086"),
            &env(&[
                ("PRECISION", "1ns"),
                ("PUSH_INTERVAL", "0s"),
                ("TAGS_AS_FIELDS", "vu:integer"),
                ("BATCH", "10"),
            ]),
        )
        .unwrap_err();
        for part in [
            "PRECISION=\"1ns\"",
            "PUSH_INTERVAL=\"0s\"",
            "\"integer\"",
            "BATCH is not a setting",
            "not an http:// or https:// URL",
        ] {
            assert!(err.contains(part), "{part} missing from:\n{err}");
        }
    }

    #[test]
    fn points_are_k6s_layout_with_the_interval_figures() {
        let def = |name: &str, kind| MetricDef {
            name: name.into(),
            kind,
            value: ValueKind::Default,
            builtin: true,
        };
        let tags = TagSet::new([
            ("name", "GET /a b"),
            ("status", "200"),
            ("vu", "3"),
            ("empty", ""),
            ("k,=", "v\n"),
        ]);
        let asked = [("vu".to_owned(), FieldType::Int)];
        let (key, fields) = point(
            &def("http_reqs", MetricKind::Counter),
            &tags,
            &Sink::Counter { sum: 4.0, count: 4 },
            &asked,
        );
        assert_eq!(key, r"http_reqs,k\,\==v\ ,name=GET\ /a\ b,status=200");
        assert_eq!(fields, "value=4.0,count=4i,vu=3i");
        let (_, fields) = point(
            &def("checks", MetricKind::Rate),
            &TagSet::empty(),
            &Sink::Rate { trues: 3, total: 4 },
            &[],
        );
        assert_eq!(fields, "value=0.75,passes=3i,fails=1i");
        let mut t = TrendSink::new(true);
        t.add(10.0);
        t.add(30.0);
        let (_, fields) = point(
            &def("http_req_duration", MetricKind::Trend),
            &TagSet::empty(),
            &Sink::Trend(t),
            &[],
        );
        assert!(
            fields.starts_with("value=20.0,count=2i,sum=40.0,min=10.0,max=30.0,med="),
            "{fields}"
        );
        // Two series that differ only by a tag written as a field.
        let reqs = def("http_reqs", MetricKind::Counter);
        let (a, b) = (TagSet::new([("url", "/a")]), TagSet::new([("url", "/b")]));
        let one = Sink::Counter { sum: 1.0, count: 1 };
        let rows = [(&reqs, &a, &one), (&reqs, &b, &one)];
        let mut out = Vec::new();
        lines(
            &rows,
            100,
            &[("url".to_owned(), FieldType::String)],
            &mut out,
        );
        assert_eq!(
            out,
            [
                r#"http_reqs value=1.0,count=1i,url="/a" 100"#,
                r#"http_reqs value=1.0,count=1i,url="/b" 101"#
            ]
        );
        let mut out = Vec::new();
        lines(&rows, 100, &[], &mut out);
        assert_eq!(
            out,
            [
                "http_reqs,url=/a value=1.0,count=1i 100",
                "http_reqs,url=/b value=1.0,count=1i 100"
            ]
        );
        let mut s = String::new();
        field_value("a \"q\" \\", FieldType::String, &mut s);
        assert_eq!(s, r#""a \"q\" \\""#);
        assert_eq!(quote_identifier("k6\"x"), r#""k6\"x""#);
    }
}
