//! `/v1/runs`: start a run of a tenant's test with a k6 options object
//! and env, list and read runs, change a running one (k6's `PATCH
//! /v1/status`: stop, pause/resume, VUs), follow it live (server-sent
//! events) and download its results: the summary as `wload run` prints
//! it, the k6 summary export, the HdrHistogram log, the interval metrics
//! and the console.

use std::collections::BTreeMap;
use std::sync::Arc;

use http::{Method, Request, StatusCode};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::reply::{self, Reply};
use super::{Service, body, json_body, query_param};
use crate::job::{Job, StatusPatch};
use crate::runner::StartError;
use crate::store::{RunRecord, Tenant};

/// `POST /v1/runs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewRun {
    /// The test's id (from its upload).
    test: String,
    #[serde(default)]
    options: Map<String, Value>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// A plugin's parameters, as text: what `-p NAME=VALUE` gives a local
    /// run, with any `@file` already read by the client (the service has
    /// no access to the user's files).
    #[serde(default)]
    params: BTreeMap<String, String>,
    /// Start with the VUs paused (k6 `--paused`).
    #[serde(default)]
    paused: bool,
}

/// Interval of the live metrics.
const INTERVAL_MS: u64 = 1_000;

pub async fn route(
    service: &Arc<Service>,
    tenant: &Tenant,
    method: &Method,
    rest: &[&str],
    query: &str,
    req: Request<Incoming>,
) -> Reply {
    match (method, rest) {
        (&Method::GET, [] | [""]) => {
            let limit = query_param(query, "limit")
                .and_then(|l| l.parse::<u32>().ok())
                .unwrap_or(50)
                .clamp(1, 1000);
            match service.store.runs(&tenant.id, limit) {
                Ok(list) => reply::json(StatusCode::OK, &json!({ "runs": list })),
                Err(e) => reply::internal(&e),
            }
        }
        // As large as an upload: a plugin's parameters can be a recording.
        (&Method::POST, [] | [""]) => match body(req, service.config.max_upload).await {
            Ok(bytes) => match serde_json::from_slice::<NewRun>(&bytes) {
                Ok(new) => start(service, tenant, new).await,
                Err(e) => reply::bad_request(&format!("invalid JSON body: {e}")),
            },
            Err(r) => r,
        },
        (_, [id, rest @ ..]) => {
            let record = match service.store.run(&tenant.id, id) {
                Ok(Some(r)) => r,
                Ok(None) => return reply::not_found("run"),
                Err(e) => return reply::internal(&e),
            };
            one(service, tenant, record, method, rest, req).await
        }
        _ => reply::not_found("route"),
    }
}

/// A request about one of the tenant's runs.
async fn one(
    service: &Arc<Service>,
    tenant: &Tenant,
    record: RunRecord,
    method: &Method,
    rest: &[&str],
    req: Request<Incoming>,
) -> Reply {
    let files = crate::job::RunFiles::new(&service.runner.run_dir(&record.id));
    match (method, rest) {
        (&Method::GET, []) => reply::json(StatusCode::OK, &with_status(service, record)),
        (&Method::GET, ["status"]) => reply::json(StatusCode::OK, &status_of(service, &record)),
        (&Method::PATCH, ["status"]) => {
            let patch = match json_body::<StatusPatch>(req).await {
                Ok(p) => p,
                Err(r) => return r,
            };
            match service.runner.live(&record.id) {
                Some(run) => match run.patch(patch).await {
                    Ok(status) => reply::json(StatusCode::OK, &status),
                    Err(message) => {
                        reply::error(StatusCode::UNPROCESSABLE_ENTITY, "cannot_change", &message)
                    }
                },
                None => reply::error(
                    StatusCode::CONFLICT,
                    "ended",
                    &format!("the run is {:?}: it can no longer change", record.status),
                ),
            }
        }
        (&Method::GET, ["events"]) => super::events::stream(service, &tenant.id, record),
        (&Method::GET, ["summary"]) => reply::file(&files.summary(), "application/json", "summary"),
        (&Method::GET, ["summary.txt"]) => reply::file(
            &files.summary_text(),
            "text/plain; charset=utf-8",
            "summary",
        ),
        (&Method::GET, ["hdr"]) => reply::file(&files.hdr(), "text/plain", "hdr log"),
        (&Method::GET, ["intervals"]) => {
            reply::file(&files.intervals(), "application/x-ndjson", "interval log")
        }
        (&Method::GET, ["console"]) => {
            reply::file(&files.console(), "text/plain; charset=utf-8", "console log")
        }
        _ => reply::not_found("route"),
    }
}

/// A run with its live status (k6's `/v1/status`) while it goes.
fn with_status(service: &Service, record: RunRecord) -> Value {
    let status = status_of(service, &record);
    let mut v = serde_json::to_value(record).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.insert("live".to_owned(), status);
    }
    v
}

fn status_of(service: &Service, record: &RunRecord) -> Value {
    match service.runner.live(&record.id) {
        Some(run) => run.status.borrow().clone().unwrap_or(Value::Null),
        None => json!({
            "paused": false,
            "vus": 0,
            "vus-max": record.max_vus.unwrap_or(0),
            "stopped": true,
            "running": false,
        }),
    }
}

/// Options keys that name files where a local run reads them: on the
/// service they would name the service's own files.
const FILE_OPTIONS: [(&str, &str); 2] = [
    (
        "params",
        "give a plugin's parameters in the run's \"params\" (`wload run --server` sends \
         -p NAME=VALUE and the options file's params there, with @FILE read)",
    ),
    (
        "with",
        "the service runs uploaded components as they are: compose a test with its library \
         plugins before uploading it",
    ),
];

/// How a run's record keeps its parameters: short values as given, long
/// ones (a recording) by size and digest, so that listing runs stays small.
fn recorded_params(params: &BTreeMap<String, String>) -> Map<String, Value> {
    const INLINE: usize = 1024;
    params
        .iter()
        .map(|(name, text)| {
            let kept = if text.len() <= INLINE {
                text.clone()
            } else {
                format!(
                    "({} bytes, sha256:{})",
                    text.len(),
                    crate::auth::hex(&Sha256::digest(text.as_bytes()))
                )
            };
            (name.clone(), Value::String(kept))
        })
        .collect()
}

async fn start(service: &Arc<Service>, tenant: &Tenant, new: NewRun) -> Reply {
    if let Some((key, why)) = FILE_OPTIONS
        .iter()
        .find(|(key, _)| new.options.contains_key(*key))
    {
        return reply::error(
            StatusCode::BAD_REQUEST,
            "invalid_run",
            &format!("options.{key} is not taken by the service: {why}"),
        );
    }
    match service.store.test(&tenant.id, &new.test) {
        Ok(Some(_)) => {}
        Ok(None) => return reply::not_found("test"),
        Err(e) => return reply::internal(&e),
    }
    let quotas = &tenant.quotas;
    let slot = match service.runner.reserve(&tenant.id, quotas) {
        Ok(slot) => slot,
        Err(refusal) => return quota_refused(StatusCode::TOO_MANY_REQUESTS, refusal),
    };
    let since = crate::time::now().saturating_sub(quotas.period as i64);
    let used = match service.store.vu_hours_since(&tenant.id, since) {
        Ok(u) => u,
        Err(e) => return reply::internal(&e),
    };
    let id = match crate::auth::new_id("r_") {
        Ok(id) => id,
        Err(e) => return reply::internal(&e),
    };
    let job = Job {
        test: super::tests::test_path(service, &new.test),
        name: service
            .store
            .test(&tenant.id, &new.test)
            .ok()
            .flatten()
            .map_or_else(|| new.test.clone(), |t| t.name),
        cache: service.config.data.join("cache"),
        options: new.options.clone(),
        env: new.env.clone(),
        params: new.params.clone(),
        memory_per_vu: quotas.memory_per_vu,
        cpu_per_call_ms: quotas.cpu_per_call_ms,
        // Its share of the tenant's rate; the runner re-splits it among
        // the tenant's runs once this one has started.
        rps_limit: quotas.rps_limit().map(|r| r / f64::from(slot.before + 1)),
        egress: tenant.egress.clone(),
        max_vus: quotas.vus_per_run,
        max_duration_secs: quotas.duration_per_run,
        vu_hours_left: (quotas.vu_hours_per_period - used).max(0.0),
        paused: new.paused,
        interval_ms: INTERVAL_MS,
    };
    let mut request = json!({"options": new.options, "env": new.env, "paused": new.paused});
    if !new.params.is_empty() {
        request["params"] = Value::Object(recorded_params(&new.params));
    }
    if let Err(e) = service
        .store
        .insert_run(&tenant.id, &id, &new.test, &request)
    {
        return reply::internal(&e);
    }
    let started = service.runner.start(&tenant.id, &id, &job, slot).await;
    let forget = || {
        let _ = service.store.delete_run(&id);
        let _ = std::fs::remove_dir_all(service.runner.run_dir(&id));
    };
    match started {
        Ok(()) => match service.store.run(&tenant.id, &id) {
            Ok(Some(record)) => reply::json(StatusCode::CREATED, &with_status(service, record)),
            Ok(None) => reply::not_found("run"),
            Err(e) => reply::internal(&e),
        },
        Err(StartError::Refused(refusal)) => {
            forget();
            quota_refused(StatusCode::UNPROCESSABLE_ENTITY, refusal)
        }
        Err(StartError::Invalid(message)) => {
            forget();
            reply::error(StatusCode::BAD_REQUEST, "invalid_run", &message)
        }
        Err(StartError::Internal(e)) => {
            let _ = service.store.run_ended(
                &id,
                crate::store::RunState::Failed,
                None,
                Some(&format!("{e:#}")),
                0.0,
            );
            reply::internal(&e)
        }
    }
}

fn quota_refused(status: StatusCode, refusal: crate::quota::Refusal) -> Reply {
    reply::error_with(
        status,
        json!({"code": "quota_exceeded", "limit": refusal.limit, "message": refusal.message}),
    )
}
