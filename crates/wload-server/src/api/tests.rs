//! `/v1/tests`: upload a test (the raw `.wasm` as the body, `?name=` for
//! its name), list, read and delete a tenant's tests. An upload is
//! checked before it is kept: a WebAssembly component (or a core module
//! carrying the world's metadata, as AssemblyScript builds), never a
//! `.cwasm` (native code: loading one would run whatever it contains),
//! then compiled once for the tenant's VU memory by a worker process. The
//! compiled code is cached by content hash, so runs start at once.

use std::path::PathBuf;
use std::sync::Arc;

use http::{Method, Request, StatusCode};
use hyper::body::Incoming;
use serde_json::json;
use sha2::{Digest, Sha256};

use wload_engine::component::{FileKind, detect, has_component_metadata};

use super::reply::{self, Reply};
use super::{Service, body, query_param};
use crate::store::Tenant;

pub async fn route(
    service: &Arc<Service>,
    tenant: &Tenant,
    method: &Method,
    rest: &[&str],
    query: &str,
    req: Request<Incoming>,
) -> Reply {
    match (method, rest) {
        (&Method::GET, [] | [""]) => match service.store.tests(&tenant.id) {
            Ok(list) => reply::json(StatusCode::OK, &json!({ "tests": list })),
            Err(e) => reply::internal(&e),
        },
        (&Method::POST, [] | [""]) => {
            let name = query_param(query, "name").unwrap_or_else(|| "test.wasm".to_owned());
            match body(req, service.config.max_upload).await {
                Ok(bytes) => upload(service, tenant, &name, &bytes).await,
                Err(r) => r,
            }
        }
        (&Method::GET, [id]) => match service.store.test(&tenant.id, id) {
            Ok(Some(t)) => reply::json(StatusCode::OK, &t),
            Ok(None) => reply::not_found("test"),
            Err(e) => reply::internal(&e),
        },
        (&Method::DELETE, [id]) => match service.store.delete_test(&tenant.id, id) {
            Ok((true, still_used)) => {
                if !still_used {
                    let _ = std::fs::remove_file(test_path(service, id));
                }
                reply::json(StatusCode::OK, &json!({ "deleted": id }))
            }
            Ok((false, _)) => reply::not_found("test"),
            Err(e) => reply::internal(&e),
        },
        _ => reply::not_found("route"),
    }
}

/// Where the bytes of test `digest` are kept.
pub fn test_path(service: &Service, digest: &str) -> PathBuf {
    service
        .config
        .data
        .join("tests")
        .join(format!("{digest}.wasm"))
}

fn unsupported(message: &str) -> Reply {
    reply::error(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "not_a_component",
        message,
    )
}

async fn upload(service: &Arc<Service>, tenant: &Tenant, name: &str, bytes: &[u8]) -> Reply {
    if name.is_empty() || name.len() > 200 || name.chars().any(char::is_control) {
        return reply::bad_request("name must have 1 to 200 printable characters");
    }
    match detect(bytes) {
        FileKind::Component => {}
        FileKind::CoreModule if has_component_metadata(bytes) => {}
        FileKind::CoreModule => {
            return unsupported(
                "this is a core WebAssembly module, not a component: build the test for \
                 wasm32-wasip2 (or with an SDK that makes components)",
            );
        }
        FileKind::Precompiled => {
            return unsupported(
                "this is a precompiled .cwasm: that is native code, which the service never \
                 loads; upload the .wasm component instead (it is compiled here, once)",
            );
        }
        FileKind::NotWasm => {
            return unsupported("this is not WebAssembly: upload the test's .wasm component");
        }
    }
    let digest = crate::auth::hex(&Sha256::digest(bytes));
    let path = test_path(service, &digest);
    let fresh = !path.exists();
    if fresh {
        // Written aside and renamed in: a run never sees half a file.
        let partial = path.with_extension(format!("part-{}", std::process::id()));
        if let Err(e) =
            std::fs::write(&partial, bytes).and_then(|()| std::fs::rename(&partial, &path))
        {
            let _ = std::fs::remove_file(&partial);
            return reply::internal(&anyhow::anyhow!("cannot store the test: {e}"));
        }
    }
    let cache = service.config.data.join("cache");
    if let Err(message) = service
        .runner
        .compile(&path, &cache, tenant.quotas.memory_per_vu)
        .await
    {
        if fresh {
            let _ = std::fs::remove_file(&path);
        }
        return reply::error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_test", &message);
    }
    match service
        .store
        .put_test(&tenant.id, &digest, name, bytes.len() as u64)
    {
        Ok(created) => match service.store.test(&tenant.id, &digest) {
            Ok(Some(record)) => reply::json(
                if created {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                },
                &record,
            ),
            Ok(None) => reply::not_found("test"),
            Err(e) => reply::internal(&e),
        },
        Err(e) => reply::internal(&e),
    }
}
