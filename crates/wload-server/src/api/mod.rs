//! The HTTP API: JSON over HTTP/1.1, described by `openapi.json` (served
//! at `/openapi.json`). This module starts the listener, authenticates
//! each request and routes it; one module per resource handles it.
//!
//! Authentication: `Authorization: Bearer TOKEN`. The admin token (from
//! `--admin-token-file` or `WLOAD_ADMIN_TOKEN`) manages tenants; a
//! tenant's token reaches that tenant's tests and runs only. A missing or
//! wrong token is 401. Another tenant's test or run is 404, never 403:
//! a tenant cannot even learn that an id exists.

mod events;
pub mod reply;
mod runs;
pub(crate) mod tenants;
mod tests;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::auth;
use crate::runner::Runner;
use crate::store::{Store, Tenant};
use reply::Reply;

/// The OpenAPI 3 document of this API.
pub const OPENAPI: &str = include_str!("../../openapi.json");

/// Every route the router below and the resource modules answer, as
/// `(method, path template)`: the unit test holds `openapi.json` to this
/// list both ways, so a route cannot be added or dropped on one side only.
/// Change it with the `match` arms of `handle` and of each module's
/// `route`.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/healthz"),
    ("GET", "/openapi.json"),
    ("GET", "/v1/tenants"),
    ("POST", "/v1/tenants"),
    ("GET", "/v1/tenants/{id}"),
    ("PATCH", "/v1/tenants/{id}"),
    ("POST", "/v1/tenants/{id}/tokens"),
    ("GET", "/v1/tests"),
    ("POST", "/v1/tests"),
    ("GET", "/v1/tests/{id}"),
    ("DELETE", "/v1/tests/{id}"),
    ("GET", "/v1/runs"),
    ("POST", "/v1/runs"),
    ("GET", "/v1/runs/{id}"),
    ("GET", "/v1/runs/{id}/status"),
    ("PATCH", "/v1/runs/{id}/status"),
    ("GET", "/v1/runs/{id}/events"),
    ("GET", "/v1/runs/{id}/summary"),
    ("GET", "/v1/runs/{id}/summary.txt"),
    ("GET", "/v1/runs/{id}/hdr"),
    ("GET", "/v1/runs/{id}/intervals"),
    ("GET", "/v1/runs/{id}/console"),
];

/// The methods of the routes whose template matches `path` (a `{id}`
/// segment matches any one segment): empty for a path no route has.
pub fn allowed_methods(path: &str) -> Vec<&'static str> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    ROUTES
        .iter()
        .filter(|(_, template)| {
            let parts: Vec<&str> = template.trim_matches('/').split('/').collect();
            parts.len() == segments.len()
                && parts.iter().zip(&segments).all(|(p, s)| {
                    *p == *s || (p.starts_with('{') && p.ends_with('}') && !s.is_empty())
                })
        })
        .map(|(method, _)| *method)
        .collect()
}

/// How `wload serve` was started.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub addr: SocketAddr,
    /// The database, tests, compile cache and runs live here.
    pub data: PathBuf,
    /// The admin token; without one, tenants cannot be managed.
    pub admin_token: Option<String>,
    /// Tenants declared in a file, applied at start (see `provision`).
    pub tenants_file: Option<PathBuf>,
    /// The `wload` binary (for the worker processes).
    pub exe: PathBuf,
    /// Largest test accepted, in bytes.
    pub max_upload: u64,
    /// Wall time a run may take past its durationPerRun quota.
    pub wall_margin: Duration,
}

/// Everything a handler reaches.
pub struct Service {
    pub config: ServeConfig,
    pub store: Arc<Store>,
    pub runner: Arc<Runner>,
    admin_hash: Option<[u8; 32]>,
}

/// Who is calling.
pub enum Caller {
    Admin,
    Tenant(Box<Tenant>),
}

/// Run the service until SIGINT or SIGTERM; then stop the runs going and
/// wait for them to end (each is recorded as stopped).
pub async fn serve(config: ServeConfig) -> Result<()> {
    for dir in ["tests", "runs", "cache"] {
        std::fs::create_dir_all(config.data.join(dir))
            .with_context(|| format!("cannot create {}", config.data.join(dir).display()))?;
    }
    let store = Arc::new(Store::open(&config.data.join("wload.sqlite"))?);
    if let Some(path) = &config.tenants_file {
        let applied = crate::provision::apply_file(&store, path)?;
        eprintln!(
            "wload serve: {}: {} tenant(s) created, {} updated, {} token(s) added",
            path.display(),
            applied.created,
            applied.updated,
            applied.tokens_added
        );
    }
    let interrupted = store.interrupt_live_runs()?;
    if interrupted > 0 {
        eprintln!(
            "wload serve: {interrupted} run(s) were going when the service last stopped; \
             marked interrupted"
        );
    }
    let listener = TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.addr))?;
    let addr = listener.local_addr()?;
    let runner = Arc::new(Runner::new(
        store.clone(),
        config.exe.clone(),
        &config.data,
        config.wall_margin,
    ));
    let service = Arc::new(Service {
        admin_hash: config.admin_token.as_deref().map(auth::hash),
        config,
        store,
        runner,
    });
    if service.admin_hash.is_none() && service.config.tenants_file.is_none() {
        eprintln!(
            "wload serve: no admin token (--admin-token-file or WLOAD_ADMIN_TOKEN): tenants \
             cannot be created"
        );
    }
    eprintln!("wload serve: listening on http://{addr}");
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot watch SIGTERM")?;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let service = service.clone();
                tokio::spawn(async move {
                    let handler = service_fn(move |req| {
                        let service = service.clone();
                        async move { Ok::<_, std::convert::Infallible>(service.handle(req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .timer(hyper_util::rt::TokioTimer::new())
                        .header_read_timeout(Duration::from_secs(30))
                        .serve_connection(TokioIo::new(stream), handler)
                        .await;
                });
            }
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
        }
    }
    let going = service.runner.all_live();
    if !going.is_empty() {
        eprintln!("wload serve: stopping {} run(s)", going.len());
    }
    for run in &going {
        run.stop();
    }
    for run in going {
        let mut status = run.status.clone();
        let _ = status.wait_for(Option::is_none).await;
    }
    eprintln!("wload serve: stopped");
    Ok(())
}

impl Service {
    async fn handle(self: &Arc<Self>, req: Request<Incoming>) -> Reply {
        let path = req.uri().path().to_owned();
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let method = req.method().clone();
        // A route that exists, asked with a method it does not have: 405
        // and what it has, before any token is looked at (the routes are
        // public in openapi.json).
        let allowed = allowed_methods(&path);
        if !allowed.is_empty() && !allowed.contains(&method.as_str()) {
            return reply::method_not_allowed(&allowed);
        }
        // Unauthenticated: the API's description and liveness.
        match (&method, segments.as_slice()) {
            (&Method::GET, ["openapi.json"]) => {
                return reply::json(
                    StatusCode::OK,
                    &serde_json::from_str::<serde_json::Value>(OPENAPI).unwrap_or_default(),
                );
            }
            (&Method::GET, ["healthz"]) => {
                return reply::json(StatusCode::OK, &serde_json::json!({"status": "ok"}));
            }
            _ => {}
        }
        let caller = match self.authenticate(&req) {
            Ok(Some(caller)) => caller,
            Ok(None) => {
                return reply::error(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "a valid token is needed: Authorization: Bearer TOKEN",
                );
            }
            Err(e) => return reply::internal(&e),
        };
        let query = req.uri().query().unwrap_or("").to_owned();
        match (caller, segments.as_slice()) {
            (Caller::Admin, ["v1", "tenants", rest @ ..]) => {
                tenants::route(self, &method, rest, req).await
            }
            (Caller::Tenant(_), ["v1", "tenants", ..]) => reply::error(
                StatusCode::FORBIDDEN,
                "forbidden",
                "managing tenants needs the admin token",
            ),
            (Caller::Tenant(t), ["v1", "tests", rest @ ..]) => {
                tests::route(self, &t, &method, rest, &query, req).await
            }
            (Caller::Tenant(t), ["v1", "runs", rest @ ..]) => {
                runs::route(self, &t, &method, rest, &query, req).await
            }
            (Caller::Admin, ["v1", "tests" | "runs", ..]) => reply::error(
                StatusCode::FORBIDDEN,
                "forbidden",
                "tests and runs belong to tenants: use a tenant's token",
            ),
            _ => reply::not_found("route"),
        }
    }

    fn authenticate(&self, req: &Request<Incoming>) -> Result<Option<Caller>> {
        let Some(token) = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(auth::bearer)
        else {
            return Ok(None);
        };
        let hash = auth::hash(token);
        if let Some(admin) = &self.admin_hash
            && auth::same(admin, &hash)
        {
            return Ok(Some(Caller::Admin));
        }
        Ok(self
            .store
            .tenant_by_token(&hash)?
            .filter(|(stored, _)| auth::same(stored, &hash))
            .map(|(_, tenant)| Caller::Tenant(Box::new(tenant))))
    }
}

/// Read a request body of at most `limit` bytes.
pub async fn body(req: Request<Incoming>, limit: u64) -> Result<Bytes, Reply> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    match Limited::new(req.into_body(), limit).collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(reply::error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            &format!("the body is larger than {limit} bytes"),
        )),
        Err(e) => Err(reply::bad_request(&format!("cannot read the body: {e}"))),
    }
}

/// A JSON body of at most 1 MiB, parsed.
pub async fn json_body<T: serde::de::DeserializeOwned>(req: Request<Incoming>) -> Result<T, Reply> {
    let bytes = body(req, 1 << 20).await?;
    serde_json::from_slice(&bytes)
        .map_err(|e| reply::bad_request(&format!("invalid JSON body: {e}")))
}

/// `?key=value` of a query string, percent-decoded (`+` is a space).
pub fn query_param(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == key).then(|| {
            let spaced = v.replace('+', " ");
            percent_encoding::percent_decode_str(&spaced)
                .decode_utf8_lossy()
                .into_owned()
        })
    })
}

#[cfg(test)]
mod route_tests {
    use std::collections::BTreeSet;

    /// `(METHOD, path)` of every operation of `openapi.json`.
    fn documented() -> BTreeSet<(String, String)> {
        let doc: serde_json::Value = serde_json::from_str(super::OPENAPI).expect("openapi.json");
        let mut found = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().expect("paths") {
            for method in item.as_object().expect("path item").keys() {
                if [
                    "get", "put", "post", "delete", "patch", "head", "options", "trace",
                ]
                .contains(&method.as_str())
                {
                    found.insert((method.to_uppercase(), path.clone()));
                }
            }
        }
        found
    }

    #[test]
    fn a_path_knows_its_methods() {
        assert_eq!(
            super::allowed_methods("/v1/runs/r_1/status"),
            ["GET", "PATCH"]
        );
        assert_eq!(super::allowed_methods("/v1/tests/"), ["GET", "POST"]);
        assert_eq!(super::allowed_methods("/v1/tenants/t_1/tokens"), ["POST"]);
        assert!(super::allowed_methods("/v1/runs/r_1/nothing").is_empty());
        assert!(super::allowed_methods("/v1/runs//status").is_empty());
    }

    #[test]
    fn openapi_documents_every_route_and_no_other() {
        let routed: BTreeSet<(String, String)> = super::ROUTES
            .iter()
            .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
            .collect();
        assert_eq!(routed.len(), super::ROUTES.len(), "a route is listed twice");
        let documented = documented();
        let undocumented: Vec<_> = routed.difference(&documented).collect();
        let unrouted: Vec<_> = documented.difference(&routed).collect();
        assert!(
            undocumented.is_empty() && unrouted.is_empty(),
            "routed but not in openapi.json: {undocumented:?}; in openapi.json but not routed: \
             {unrouted:?}"
        );
    }
}
