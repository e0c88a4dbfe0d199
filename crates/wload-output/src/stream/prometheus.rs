//! `--out prometheus-rw[=URL]`: the run's metrics pushed to a Prometheus
//! remote-write endpoint with k6's conventions (its
//! `experimental-prometheus-rw` output), so that k6's Grafana dashboards
//! and queries work on wload's runs unchanged.
//!
//! Every series is the run's total so far, as in k6: counters
//! `k6_NAME_total` (a Prometheus counter), gauges `k6_NAME` (the last
//! value), rates `k6_NAME_rate` (passes / total), and trends either as
//! chosen statistics (`k6_NAME_p99`, seconds for time trends) or, with
//! `WLOAD_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM=true`, as one native
//! histogram each (`k6_NAME_seconds`) converted from wload's
//! HdrHistograms. Tags become labels. Each push interval sends the series
//! that changed; the end of the run can mark them all stale. The settings
//! are k6's `K6_PROMETHEUS_RW_*` variables with a `WLOAD_` prefix
//! (docs/guide.md, "Grafana").

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, anyhow};
use wload_http::TlsOptions;
use wload_metrics::{MetricDef, Sink, TagSet, TrendSink};
use wload_units::parse_duration;

use super::prometheus_wire::{self as wire, Label, NativeHistogram, STALE_NAN, TimeSeries};
use super::push::{Endpoint, Push, Pusher, basic_auth, parse_bool, parse_pairs};
use super::{IntervalView, Output};
use crate::trend_stat;

/// k6's default endpoint: a local Prometheus.
pub const DEFAULT_URL: &str = "http://localhost:9090/api/v1/write";

/// The settings' prefix.
const ENV: &str = "WLOAD_PROMETHEUS_RW_";

/// Every setting (the `HEADERS_<name>` family aside), for the message
/// about a misspelt one.
const SETTINGS: [&str; 16] = [
    "SERVER_URL",
    "PUSH_INTERVAL",
    "HTTP_HEADERS",
    "USERNAME",
    "PASSWORD",
    "BEARER_TOKEN",
    "INSECURE_SKIP_TLS_VERIFY",
    "CA_CERTIFICATE",
    "CLIENT_CERTIFICATE",
    "CLIENT_CERTIFICATE_KEY",
    "TREND_AS_NATIVE_HISTOGRAM",
    "TREND_STATS",
    "STALE_MARKERS",
    "METRIC_PREFIX",
    "LABELS",
    "TIMEOUT",
];

/// The output's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PrometheusConfig {
    pub url: String,
    pub push_interval: Duration,
    pub headers: Vec<(String, String)>,
    pub insecure_skip_tls_verify: bool,
    pub ca_certificate: Option<PathBuf>,
    pub client_certificate: Option<(PathBuf, PathBuf)>,
    pub trend_as_native_histogram: bool,
    /// `p(99)`, `avg`… as k6 spells them.
    pub trend_stats: Vec<String>,
    pub stale_markers: bool,
    pub prefix: String,
    /// Added to every series (a tag of the same name wins).
    pub labels: Vec<(String, String)>,
    pub timeout: Duration,
}

impl PrometheusConfig {
    /// The settings from `WLOAD_PROMETHEUS_RW_*` in `env`; `url` is the
    /// flag's (`--out prometheus-rw=URL`), which wins over the variable.
    pub fn from_env(url: Option<&str>, env: &BTreeMap<String, String>) -> Result<Self, String> {
        let get = |key: &str| env.get(&format!("{ENV}{key}")).map(String::as_str);
        let var = |key: &str| format!("{ENV}{key}");
        let mut problems = Vec::new();
        for name in env.keys().filter_map(|k| k.strip_prefix(ENV)) {
            if !SETTINGS.contains(&name) && !name.starts_with("HEADERS_") {
                problems.push(format!(
                    "{ENV}{name} is not a setting of --out prometheus-rw; they are {ENV}{} \
                     and {ENV}HEADERS_<name>",
                    SETTINGS.join(&format!(", {ENV}"))
                ));
            }
        }
        let flag = |key: &str, default: bool, problems: &mut Vec<String>| match get(key) {
            None => default,
            Some(v) => parse_bool(&var(key), v).unwrap_or_else(|e| {
                problems.push(e);
                default
            }),
        };
        let insecure_skip_tls_verify = flag("INSECURE_SKIP_TLS_VERIFY", false, &mut problems);
        let trend_as_native_histogram = flag("TREND_AS_NATIVE_HISTOGRAM", false, &mut problems);
        let stale_markers = flag("STALE_MARKERS", false, &mut problems);
        let duration = |key: &str, default: Duration, problems: &mut Vec<String>| match get(key) {
            None => default,
            Some(v) => match parse_duration(v) {
                Ok(d) if !d.is_zero() => d,
                Ok(_) => {
                    problems.push(format!("{}={v:?} must be above zero, e.g. 5s", var(key)));
                    default
                }
                Err(e) => {
                    problems.push(format!("{}={v:?}: {e}", var(key)));
                    default
                }
            },
        };
        let push_interval = duration("PUSH_INTERVAL", Duration::from_secs(5), &mut problems);
        let timeout = duration("TIMEOUT", Duration::from_secs(5), &mut problems);

        let mut headers = Vec::new();
        for (k, v) in env {
            if let Some(name) = k.strip_prefix(&format!("{ENV}HEADERS_"))
                && !name.is_empty()
            {
                headers.push((name.to_owned(), v.clone()));
            }
        }
        if let Some(v) = get("HTTP_HEADERS") {
            match parse_pairs(&var("HTTP_HEADERS"), v) {
                Ok(pairs) => headers.extend(pairs),
                Err(e) => problems.push(e),
            }
        }
        match (get("USERNAME"), get("PASSWORD"), get("BEARER_TOKEN")) {
            (Some(_), _, Some(_)) => problems.push(format!(
                "{ENV}USERNAME and {ENV}BEARER_TOKEN are two kinds of authentication: set one"
            )),
            (Some(user), password, None) => headers.push((
                "Authorization".into(),
                basic_auth(user, password.unwrap_or("")),
            )),
            (None, Some(_), _) => problems.push(format!(
                "{ENV}PASSWORD is set without {ENV}USERNAME: set both for basic authentication"
            )),
            (None, None, Some(token)) => {
                headers.push(("Authorization".into(), format!("Bearer {token}")))
            }
            (None, None, None) => {}
        }
        let client_certificate = match (get("CLIENT_CERTIFICATE"), get("CLIENT_CERTIFICATE_KEY")) {
            (Some(c), Some(k)) => Some((PathBuf::from(c), PathBuf::from(k))),
            (None, None) => None,
            _ => {
                problems.push(format!(
                    "{ENV}CLIENT_CERTIFICATE and {ENV}CLIENT_CERTIFICATE_KEY go together: set both"
                ));
                None
            }
        };
        let trend_stats: Vec<String> = get("TREND_STATS")
            .unwrap_or("p(99)")
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
        for stat in &trend_stats {
            if stat_suffix(stat).is_none() {
                problems.push(format!(
                    "{ENV}TREND_STATS: {stat:?} is not a trend statistic; use count, sum, \
                     min, max, avg, med or p(N) with N from 0 to 100, e.g. p(95),p(99),max"
                ));
            }
        }
        if trend_stats.is_empty() {
            problems.push(format!(
                "{ENV}TREND_STATS is empty: name at least one statistic, e.g. p(99)"
            ));
        }
        let prefix = get("METRIC_PREFIX").unwrap_or("k6_").to_owned();
        if !prefix.is_empty() && sanitize(&prefix, true) != prefix {
            problems.push(format!(
                "{ENV}METRIC_PREFIX={prefix:?}: a metric name prefix has only letters, digits, \
                 `_` and `:`, and does not start with a digit (e.g. wload_)"
            ));
        }
        let labels = match get("LABELS") {
            None => Vec::new(),
            Some(v) => parse_pairs(&var("LABELS"), v).unwrap_or_else(|e| {
                problems.push(e);
                Vec::new()
            }),
        };
        let url = url.or(get("SERVER_URL")).unwrap_or(DEFAULT_URL).to_owned();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            problems.push(format!(
                "--out prometheus-rw: {url:?} is not an http:// or https:// URL \
                 (e.g. http://localhost:9090/api/v1/write)"
            ));
        }
        if !problems.is_empty() {
            return Err(problems.join("\n"));
        }
        Ok(PrometheusConfig {
            url,
            push_interval,
            headers,
            insecure_skip_tls_verify,
            ca_certificate: get("CA_CERTIFICATE").map(PathBuf::from),
            client_certificate,
            trend_as_native_histogram,
            trend_stats,
            stale_markers,
            prefix,
            labels,
            timeout,
        })
    }
}

/// The name suffix of a trend statistic, as k6 writes it: `p(99)` →
/// `p99`, `p(99.9)` → `p999`.
fn stat_suffix(stat: &str) -> Option<String> {
    match stat {
        "count" | "sum" | "min" | "max" | "avg" | "med" => Some(stat.to_owned()),
        _ => {
            let q = stat.strip_prefix("p(")?.strip_suffix(')')?;
            let n: f64 = q.parse().ok()?;
            (0.0..=100.0)
                .contains(&n)
                .then(|| format!("p{}", q.replace('.', "")))
        }
    }
}

/// A metric (`metric`) or label name Prometheus accepts: letters, digits
/// and `_` (and `:` in metric names), not starting with a digit.
fn sanitize(name: &str, metric: bool) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || (metric && c == ':') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// What one series holds: the run's total so far.
enum State {
    Counter(f64),
    Gauge(f64),
    Rate { trues: u64, total: u64 },
    Stats(TrendSink),
    Native { hist: NativeHistogram, time: bool },
}

struct Series {
    /// Labels without `__name__`, sorted.
    labels: Vec<Label>,
    /// `k6_http_reqs` (suffixes come at encoding).
    name: String,
    state: State,
    /// Changed since the last push.
    dirty: bool,
}

pub struct PrometheusOut {
    config: PrometheusConfig,
    /// Per metric name, per tag set.
    series: HashMap<String, HashMap<TagSet, Series>>,
    /// Stat name suffixes, in `config.trend_stats` order.
    suffixes: Vec<String>,
    pusher: Pusher,
    /// Run seconds at the last push.
    pushed_at: f64,
    /// Timestamp of the last push, ms: each push's is later.
    last_ms: i64,
    /// Wall clock of the newest interval, ms.
    now_ms: i64,
}

impl PrometheusOut {
    pub fn open(url: Option<&str>, env: &BTreeMap<String, String>) -> Result<PrometheusOut> {
        let config = PrometheusConfig::from_env(url, env).map_err(|e| anyhow!(e))?;
        let endpoint = Endpoint {
            label: format!("--out prometheus-rw ({})", config.url),
            headers: config.headers.clone(),
            tls: TlsOptions {
                insecure_skip_verify: config.insecure_skip_tls_verify,
                ca_files: config.ca_certificate.iter().cloned().collect(),
                client_cert: config.client_certificate.clone(),
            },
            timeout: config.timeout,
        };
        let suffixes = config
            .trend_stats
            .iter()
            .filter_map(|s| stat_suffix(s))
            .collect();
        Ok(PrometheusOut {
            pusher: Pusher::start(endpoint)?,
            config,
            series: HashMap::new(),
            suffixes,
            pushed_at: 0.0,
            last_ms: 0,
            now_ms: 0,
        })
    }

    fn labels(&self, tags: &TagSet) -> Vec<Label> {
        let mut labels: Vec<Label> = tags
            .iter()
            .chain(
                self.config
                    .labels
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str())),
            )
            // Prometheus drops empty labels; it would refuse a
            // reserved `__` name.
            .filter(|(k, v)| !v.is_empty() && !k.starts_with("__"))
            .map(|(k, v)| Label {
                name: sanitize(k, false),
                value: v.to_owned(),
            })
            .collect();
        // Stable: of equal names the tag (first) is kept.
        labels.sort_by(|a, b| a.name.cmp(&b.name));
        labels.dedup_by(|later, kept| later.name == kept.name);
        labels
    }

    fn add(&mut self, def: &MetricDef, tags: &TagSet, sink: &Sink) {
        let native = self.config.trend_as_native_histogram;
        if !self.series.contains_key(&def.name) {
            self.series.insert(def.name.clone(), HashMap::new());
        }
        if !self.series[&def.name].contains_key(tags) {
            let state = match sink {
                Sink::Counter { .. } => State::Counter(0.0),
                Sink::Gauge { .. } => State::Gauge(0.0),
                Sink::Rate { .. } => State::Rate { trues: 0, total: 0 },
                Sink::Trend(t) if native => State::Native {
                    hist: NativeHistogram::default(),
                    time: t.is_time(),
                },
                Sink::Trend(t) => State::Stats(TrendSink::new(t.is_time())),
            };
            let series = Series {
                labels: self.labels(tags),
                name: sanitize(&format!("{}{}", self.config.prefix, def.name), true),
                state,
                dirty: false,
            };
            if let Some(m) = self.series.get_mut(&def.name) {
                m.insert(tags.clone(), series);
            }
        }
        let Some(series) = self.series.get_mut(&def.name).and_then(|m| m.get_mut(tags)) else {
            return;
        };
        series.dirty = true;
        match (&mut series.state, sink) {
            (State::Counter(total), Sink::Counter { sum, .. }) => *total += sum,
            (State::Gauge(value), Sink::Gauge { last, .. }) => *value = *last,
            (State::Rate { trues, total }, Sink::Rate { trues: t, total: n }) => {
                *trues += t;
                *total += n;
            }
            (State::Stats(run), Sink::Trend(t)) => run.merge(t),
            (State::Native { hist, time }, Sink::Trend(t)) => {
                // Seconds for time trends (Prometheus' base unit).
                if *time {
                    hist.add_hdr(t.histogram(), 1e9, t.sum / 1e3);
                } else {
                    hist.add_hdr(t.histogram(), 1e3, t.sum);
                }
            }
            // A metric keeps its kind for the whole run.
            _ => {}
        }
    }

    /// The time series of every changed series, stamped `ms`.
    fn changed(&mut self, ms: i64) -> Vec<TimeSeries> {
        let mut out = Vec::new();
        for series in self.series.values_mut().flat_map(|m| m.values_mut()) {
            if !series.dirty {
                continue;
            }
            series.dirty = false;
            encode_series(
                series,
                &self.suffixes,
                &self.config.trend_stats,
                ms,
                &mut out,
            );
        }
        out
    }

    fn push(&mut self, timeseries: Vec<TimeSeries>) -> Result<()> {
        if timeseries.is_empty() {
            return Ok(());
        }
        let body = wire::encode(&wire::WriteRequest { timeseries }).map_err(|e| anyhow!(e))?;
        self.pusher.push(Push {
            url: self.config.url.clone(),
            headers: vec![
                ("Content-Type", "application/x-protobuf".into()),
                ("Content-Encoding", "snappy".into()),
                ("X-Prometheus-Remote-Write-Version", "0.1.0".into()),
            ],
            body: body.into(),
        });
        Ok(())
    }

    fn next_ms(&mut self) -> i64 {
        self.last_ms = self.now_ms.max(self.last_ms + 1);
        self.last_ms
    }
}

/// One series as remote-write time series: one, or one per statistic.
fn encode_series(
    series: &Series,
    suffixes: &[String],
    stats: &[String],
    ms: i64,
    out: &mut Vec<TimeSeries>,
) {
    let one = |name: String, value: f64| TimeSeries {
        labels: with_name(&series.labels, name),
        samples: vec![wire::Sample {
            value,
            timestamp: ms,
        }],
        histograms: Vec::new(),
    };
    match &series.state {
        State::Counter(total) => out.push(one(format!("{}_total", series.name), *total)),
        State::Gauge(value) => out.push(one(series.name.clone(), *value)),
        State::Rate { trues, total } => {
            let rate = if *total == 0 {
                0.0
            } else {
                *trues as f64 / *total as f64
            };
            out.push(one(format!("{}_rate", series.name), rate));
        }
        State::Stats(t) => {
            for (suffix, stat) in suffixes.iter().zip(stats) {
                let value = match stat.as_str() {
                    "count" => t.count as f64,
                    "sum" => t.sum,
                    _ => trend_stat(t, stat),
                };
                // Seconds, Prometheus' base unit, for time trends.
                let value = if t.is_time() && stat != "count" {
                    value / 1e3
                } else {
                    value
                };
                out.push(one(format!("{}_{suffix}", series.name), value));
            }
        }
        State::Native { hist, time } => {
            let name = if *time {
                format!("{}_seconds", series.name)
            } else {
                series.name.clone()
            };
            out.push(TimeSeries {
                labels: with_name(&series.labels, name),
                samples: Vec::new(),
                histograms: vec![hist.to_proto(ms)],
            });
        }
    }
}

/// `labels` with `__name__` in its sorted place.
fn with_name(labels: &[Label], name: String) -> Vec<Label> {
    let mut out = Vec::with_capacity(labels.len() + 1);
    let name = Label {
        name: "__name__".into(),
        value: name,
    };
    let at = labels.partition_point(|l| l.name.as_str() < "__name__");
    out.extend_from_slice(&labels[..at]);
    out.push(name);
    out.extend_from_slice(&labels[at..]);
    out
}

impl Output for PrometheusOut {
    fn write(&mut self, view: &IntervalView) -> Result<()> {
        for (def, tags, sink) in view.sorted() {
            if sink.samples() > 0 {
                self.add(def, tags, sink);
            }
        }
        self.now_ms = (view.time * 1e3) as i64;
        if view.end - self.pushed_at >= self.config.push_interval.as_secs_f64() {
            self.pushed_at = view.end;
            let ms = self.next_ms();
            let changed = self.changed(ms);
            self.push(changed)?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        let ms = self.next_ms();
        let changed = self.changed(ms);
        self.push(changed)?;
        if self.config.stale_markers {
            let ms = self.next_ms();
            let mut stale = Vec::new();
            for series in self.series.values().flat_map(|m| m.values()) {
                encode_series(
                    series,
                    &self.suffixes,
                    &self.config.trend_stats,
                    ms,
                    &mut stale,
                );
            }
            // The same series, each ending with the stale NaN.
            for ts in &mut stale {
                ts.histograms.clear();
                ts.samples = vec![wire::Sample {
                    value: f64::from_bits(STALE_NAN),
                    timestamp: ms,
                }];
            }
            self.push(stale)?;
        }
        self.pusher.finish();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (format!("{ENV}{k}"), v.to_string()))
            .collect()
    }

    #[test]
    fn settings_default_to_k6s_and_the_flag_wins_over_the_variable() {
        let c = PrometheusConfig::from_env(None, &BTreeMap::new()).unwrap();
        assert_eq!(c.url, DEFAULT_URL);
        assert_eq!(c.push_interval, Duration::from_secs(5));
        assert_eq!(c.trend_stats, ["p(99)"]);
        assert_eq!(c.prefix, "k6_");
        assert!(!c.stale_markers && !c.trend_as_native_histogram);

        let e = env(&[
            ("SERVER_URL", "http://127.0.0.1:1/api/v1/write"),
            ("PUSH_INTERVAL", "250ms"),
            ("HEADERS_X-Scope-OrgID", "tenant"),
            ("HTTP_HEADERS", "a:1,b:2"),
            ("BEARER_TOKEN", "tok"),
            ("TREND_STATS", "p(95),p(99.9),avg,count"),
            ("STALE_MARKERS", "true"),
            ("METRIC_PREFIX", "wload_"),
            ("LABELS", "testid:t1"),
        ]);
        let c = PrometheusConfig::from_env(Some("http://127.0.0.1:2/w"), &e).unwrap();
        assert_eq!(c.url, "http://127.0.0.1:2/w");
        assert_eq!(c.push_interval, Duration::from_millis(250));
        assert!(
            c.headers
                .contains(&("X-Scope-OrgID".into(), "tenant".into()))
        );
        assert!(c.headers.contains(&("b".into(), "2".into())));
        assert!(
            c.headers
                .contains(&("Authorization".into(), "Bearer tok".into()))
        );
        let suffixes: Vec<_> = c
            .trend_stats
            .iter()
            .filter_map(|s| stat_suffix(s))
            .collect();
        assert_eq!(suffixes, ["p95", "p999", "avg", "count"]);
        assert!(c.stale_markers);
        assert_eq!(c.prefix, "wload_");
        assert_eq!(c.labels, [("testid".to_owned(), "t1".to_owned())]);
    }

    #[test]
    fn bad_settings_are_all_named() {
        let e = env(&[
            ("PUSH_INTERVAL", "often"),
            ("STALE_MARKERS", "yes"),
            ("TREND_STATS", "p(101),avg"),
            ("USERNAME", "u"),
            ("BEARER_TOKEN", "t"),
            ("TREND_AS_NATIVE_HISTOGRAMS", "true"),
            ("METRIC_PREFIX", "9x"),
        ]);
        let err = PrometheusConfig::from_env(Some("localhost:9090"), &e).unwrap_err();
        for part in [
            "PUSH_INTERVAL",
            "STALE_MARKERS=\"yes\"",
            "\"p(101)\"",
            "two kinds of authentication",
            "TREND_AS_NATIVE_HISTOGRAMS is not a setting",
            "METRIC_PREFIX=\"9x\"",
            "not an http:// or https:// URL",
        ] {
            assert!(err.contains(part), "{part} missing from:\n{err}");
        }
    }

    #[test]
    fn names_and_labels_follow_prometheus_rules() {
        assert_eq!(sanitize("k6_http_reqs", true), "k6_http_reqs");
        assert_eq!(sanitize("my-metric.x", true), "my_metric_x");
        assert_eq!(sanitize("a:b", true), "a:b");
        assert_eq!(sanitize("a:b", false), "a_b");
        assert_eq!(sanitize("1st", false), "_1st");
        let labels = vec![
            Label {
                name: "a".into(),
                value: "1".into(),
            },
            Label {
                name: "status".into(),
                value: "200".into(),
            },
        ];
        let named = with_name(&labels, "k6_x".into());
        let names: Vec<_> = named.iter().map(|l| l.name.as_str()).collect();
        // Byte order: `_` (0x5f) sorts after capitals, before lower case.
        assert_eq!(names, ["__name__", "a", "status"]);
        let upper = vec![Label {
            name: "Zed".into(),
            value: "1".into(),
        }];
        let named = with_name(&upper, "k6_x".into());
        assert_eq!(named[0].name, "Zed");
    }

    #[test]
    fn series_are_run_totals_in_k6s_names_and_units() {
        let config =
            PrometheusConfig::from_env(None, &env(&[("TREND_STATS", "count,avg,max,p(50)")]))
                .unwrap();
        let suffixes: Vec<_> = config
            .trend_stats
            .iter()
            .filter_map(|s| stat_suffix(s))
            .collect();
        let mut trend = TrendSink::new(true);
        trend.add(100.0);
        trend.add(300.0);
        let series = Series {
            labels: Vec::new(),
            name: "k6_http_req_duration".into(),
            state: State::Stats(trend),
            dirty: true,
        };
        let mut out = Vec::new();
        encode_series(&series, &suffixes, &config.trend_stats, 5, &mut out);
        let got: Vec<(String, f64)> = out
            .iter()
            .map(|ts| (ts.labels[0].value.clone(), ts.samples[0].value))
            .collect();
        assert_eq!(got[0], ("k6_http_req_duration_count".into(), 2.0));
        assert_eq!(got[1], ("k6_http_req_duration_avg".into(), 0.2));
        assert_eq!(got[2], ("k6_http_req_duration_max".into(), 0.3));
        assert_eq!(got[3].0, "k6_http_req_duration_p50");

        let rate = Series {
            labels: Vec::new(),
            name: "k6_checks".into(),
            state: State::Rate { trues: 3, total: 4 },
            dirty: true,
        };
        let counter = Series {
            labels: Vec::new(),
            name: "k6_http_reqs".into(),
            state: State::Counter(7.0),
            dirty: true,
        };
        let mut out = Vec::new();
        encode_series(&rate, &[], &[], 5, &mut out);
        encode_series(&counter, &[], &[], 5, &mut out);
        assert_eq!(out[0].labels[0].value, "k6_checks_rate");
        assert_eq!(out[0].samples[0].value, 0.75);
        assert_eq!(out[1].labels[0].value, "k6_http_reqs_total");
        assert_eq!(out[1].samples[0].value, 7.0);
    }
}
