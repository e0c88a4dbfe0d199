//! `/v1/tenants` (admin token only): create a tenant (its first token is
//! in the answer, the only time it is shown), list and read them, change
//! a tenant's quotas and egress policy, and issue another token.

use std::sync::Arc;

use http::{Method, Request, StatusCode};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::json;
use wload_http::EgressPolicy;

use super::reply::{self, Reply};
use super::{Service, json_body};
use crate::auth;
use crate::quota::Quotas;
use crate::store::Tenant;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewTenant {
    name: String,
    #[serde(default)]
    quotas: Quotas,
    #[serde(default)]
    egress: Option<EgressPolicy>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TenantPatch {
    #[serde(default)]
    quotas: Option<Quotas>,
    #[serde(default)]
    egress: Option<EgressPolicy>,
}

pub async fn route(
    service: &Arc<Service>,
    method: &Method,
    rest: &[&str],
    req: Request<Incoming>,
) -> Reply {
    match (method, rest) {
        (&Method::GET, [] | [""]) => match service.store.tenants() {
            Ok(list) => reply::json(StatusCode::OK, &json!({ "tenants": list })),
            Err(e) => reply::internal(&e),
        },
        (&Method::POST, [] | [""]) => match json_body::<NewTenant>(req).await {
            Ok(new) => create(service, new),
            Err(r) => r,
        },
        (&Method::GET, [id]) => match service.store.tenant(id) {
            Ok(Some(t)) => reply::json(StatusCode::OK, &t),
            Ok(None) => reply::not_found("tenant"),
            Err(e) => reply::internal(&e),
        },
        (&Method::PATCH, [id]) => match json_body::<TenantPatch>(req).await {
            Ok(patch) => update(service, id, patch),
            Err(r) => r,
        },
        (&Method::POST, [id, "tokens"]) => {
            let token = match auth::new_token() {
                Ok(t) => t,
                Err(e) => return reply::internal(&e),
            };
            match service.store.tenant(id) {
                Ok(Some(_)) => match service.store.add_token(id, &auth::hash(&token)) {
                    Ok(()) => reply::json(StatusCode::CREATED, &json!({ "token": token })),
                    Err(e) => reply::internal(&e),
                },
                Ok(None) => reply::not_found("tenant"),
                Err(e) => reply::internal(&e),
            }
        }
        _ => reply::not_found("route"),
    }
}

/// Problems with a tenant's egress policy. A tenant's policy must list
/// its targets: an absent allowlist would open every public address, a
/// choice an admin makes by writing `"allow": ["*"]`, never by leaving a
/// field out.
fn egress_problems(egress: &EgressPolicy) -> Vec<String> {
    match egress.allow {
        Some(_) => Vec::new(),
        None => vec![
            "egress.allow is needed: list the targets the tenant may reach (\"*\" for every \
             public address; loopback, private and the other special ranges stay denied unless \
             an address or CIDR rule names them)"
                .to_owned(),
        ],
    }
}

fn invalid(problems: Vec<String>) -> Reply {
    reply::error_with(
        StatusCode::BAD_REQUEST,
        json!({
            "code": "invalid_tenant",
            "message": problems.join("; "),
            "problems": problems,
        }),
    )
}

/// Everything wrong with a tenant's name, quotas and egress policy (the
/// API's and the tenants file's checks, see `provision`).
pub(crate) fn problems(name: &str, quotas: &Quotas, egress: &EgressPolicy) -> Vec<String> {
    let mut found = Vec::new();
    if name.is_empty() || name.len() > 100 {
        found.push("name must have 1 to 100 characters".to_owned());
    }
    found.extend(quotas.validate());
    found.extend(egress_problems(egress));
    found
}

fn create(service: &Arc<Service>, new: NewTenant) -> Reply {
    let name = new.name.trim();
    // Nothing is reachable until the admin says where.
    let egress = new
        .egress
        .unwrap_or_else(|| EgressPolicy::tenant(Some(Vec::new())));
    let found = problems(name, &new.quotas, &egress);
    if !found.is_empty() {
        return invalid(found);
    }
    match service.store.tenant_named(name) {
        Ok(Some(_)) => {
            return reply::error(
                StatusCode::CONFLICT,
                "exists",
                &format!("a tenant named {name:?} exists"),
            );
        }
        Ok(None) => {}
        Err(e) => return reply::internal(&e),
    }
    let made = auth::new_id("t_").and_then(|id| Ok((id, auth::new_token()?)));
    let (id, token) = match made {
        Ok(pair) => pair,
        Err(e) => return reply::internal(&e),
    };
    let tenant = Tenant {
        id,
        name: name.to_owned(),
        quotas: new.quotas,
        egress,
        created: crate::time::rfc3339(crate::time::now()),
    };
    match service
        .store
        .create_tenant(&tenant, Some(&auth::hash(&token)))
    {
        Ok(()) => reply::json(
            StatusCode::CREATED,
            &json!({ "tenant": tenant, "token": token }),
        ),
        Err(e) => reply::internal(&e),
    }
}

fn update(service: &Arc<Service>, id: &str, patch: TenantPatch) -> Reply {
    let mut tenant = match service.store.tenant(id) {
        Ok(Some(t)) => t,
        Ok(None) => return reply::not_found("tenant"),
        Err(e) => return reply::internal(&e),
    };
    if let Some(q) = patch.quotas {
        tenant.quotas = q;
    }
    if let Some(e) = patch.egress {
        tenant.egress = e;
    }
    let mut found = tenant.quotas.validate();
    found.extend(egress_problems(&tenant.egress));
    if !found.is_empty() {
        return invalid(found);
    }
    match service.store.update_tenant(&tenant) {
        Ok(()) => reply::json(StatusCode::OK, &tenant),
        Err(e) => reply::internal(&e),
    }
}
