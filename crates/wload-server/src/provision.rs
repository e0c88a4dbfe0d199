//! Tenants declared in a file (`wload serve --tenants FILE`), applied at
//! every start: the way a platform team keeps its tenants in version
//! control and its tokens in a secret store, as Grafana's provisioning
//! files do for data sources. The file names each tenant, its quotas, its
//! egress policy and the SHA-256 of its tokens (never a token: the file
//! is meant to be committed); the service creates the tenants it does not
//! have and sets the quotas and policy of those it has, so that the file
//! is the truth for what it lists. Tenants made through the API and not
//! in the file are left alone, as are tokens issued through the API.
//!
//! Every problem of the file is reported at once, before anything is
//! changed: a file with one bad tenant changes no tenant.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use wload_http::EgressPolicy;

use crate::api::tenants::problems;
use crate::auth;
use crate::quota::Quotas;
use crate::store::{Store, Tenant};

/// The file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TenantsFile {
    tenants: Vec<Declared>,
}

/// One tenant of the file.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Declared {
    name: String,
    #[serde(default)]
    quotas: Quotas,
    #[serde(default)]
    egress: Option<EgressPolicy>,
    /// SHA-256 of each token, in hex (`printf %s "$TOKEN" | sha256sum`).
    #[serde(default)]
    token_sha256: Vec<String>,
}

/// What applying the file did, for the service's log.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Applied {
    pub created: usize,
    pub updated: usize,
    pub tokens_added: usize,
}

/// Read `path` and apply it to `store`; an error lists every problem.
pub fn apply_file(store: &Store, path: &Path) -> Result<Applied> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the tenants file {}", path.display()))?;
    let file: TenantsFile = serde_json::from_str(&text).with_context(|| {
        format!(
            "the tenants file {} is not valid: expected {{\"tenants\": [{{\"name\": …, \
             \"quotas\": {{…}}, \"egress\": {{\"allow\": […]}}, \"tokenSha256\": [\"…\"]}}]}}",
            path.display()
        )
    })?;
    apply(store, file).with_context(|| format!("in the tenants file {}", path.display()))
}

fn apply(store: &Store, file: TenantsFile) -> Result<Applied> {
    let mut found = Vec::new();
    let mut planned = Vec::new();
    for (i, declared) in file.tenants.into_iter().enumerate() {
        let name = declared.name.trim().to_owned();
        let at = if name.is_empty() {
            format!("tenant #{}", i + 1)
        } else {
            format!("tenant {name:?}")
        };
        // As through the API: nothing is reachable until the file says where.
        let egress = declared
            .egress
            .unwrap_or_else(|| EgressPolicy::tenant(Some(Vec::new())));
        let mut wrong = problems(&name, &declared.quotas, &egress);
        if planned.iter().any(|(n, ..): &(String, _, _, _)| *n == name) {
            wrong.push("is listed twice".to_owned());
        }
        let mut hashes = Vec::new();
        for h in &declared.token_sha256 {
            let Some(hash) = parse_sha256(h) else {
                wrong.push(format!(
                    "tokenSha256 {h:?} is not a SHA-256 in hex (64 characters 0-9a-f): \
                     printf %s \"$TOKEN\" | sha256sum"
                ));
                continue;
            };
            // A token opens one tenant: another's in the file or in the
            // store would make it open two.
            let other = match planned
                .iter()
                .find(|(_, _, _, hs): &&(String, _, _, Vec<[u8; 32]>)| hs.contains(&hash))
            {
                Some((n, ..)) => Some(n.clone()),
                None => store
                    .tenant_by_token(&hash)?
                    .map(|(_, t)| t.name)
                    .filter(|n| *n != name),
            };
            match other {
                Some(other) => wrong.push(format!(
                    "a token of it is already tenant {other:?}'s; give each tenant tokens of \
                     its own"
                )),
                None => hashes.push(hash),
            }
        }
        found.extend(wrong.into_iter().map(|p| format!("{at}: {p}")));
        planned.push((name, declared.quotas, egress, hashes));
    }
    if !found.is_empty() {
        bail!("{}", found.join("\n"));
    }
    let mut applied = Applied::default();
    for (name, quotas, egress, hashes) in planned {
        let tenant = match store.tenant_named(&name)? {
            Some(mut t) => {
                t.quotas = quotas;
                t.egress = egress;
                store.update_tenant(&t)?;
                applied.updated += 1;
                t
            }
            None => {
                let t = Tenant {
                    id: auth::new_id("t_")?,
                    name,
                    quotas,
                    egress,
                    created: crate::time::rfc3339(crate::time::now()),
                };
                store.create_tenant(&t, None)?;
                applied.created += 1;
                t
            }
        };
        for hash in hashes {
            if store.tenant_by_token(&hash)?.is_none() {
                store.add_token(&tenant.id, &hash)?;
                applied.tokens_added += 1;
            }
        }
    }
    Ok(applied)
}

fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store() -> Store {
        crate::store::temp_db().1
    }

    fn file(v: serde_json::Value) -> TenantsFile {
        serde_json::from_value(v).expect("a tenants file")
    }

    fn sha(token: &str) -> String {
        auth::hex(&auth::hash(token))
    }

    #[test]
    fn the_file_creates_then_updates_its_tenants_and_their_tokens_work() {
        let store = store();
        let first = file(json!({"tenants": [
            {"name": "checkout", "quotas": {"vusPerRun": 50},
             "egress": {"allow": ["127.0.0.1:8080"]}, "tokenSha256": [sha("wl_a")]},
            {"name": "search", "egress": {"allow": []}},
        ]}));
        assert_eq!(
            apply(&store, first).expect("applied"),
            Applied {
                created: 2,
                updated: 0,
                tokens_added: 1
            }
        );
        let (_, owner) = store
            .tenant_by_token(&auth::hash("wl_a"))
            .unwrap()
            .expect("the token is the tenant's");
        assert_eq!(
            (owner.name.as_str(), owner.quotas.vus_per_run),
            ("checkout", 50)
        );

        // Applied again with new quotas and a second token: the same
        // tenant (its tests and runs stay), the new figures, both tokens.
        let again = file(json!({"tenants": [
            {"name": "checkout", "quotas": {"vusPerRun": 80},
             "egress": {"allow": ["127.0.0.1:8080"]}, "tokenSha256": [sha("wl_a"), sha("wl_b")]},
        ]}));
        assert_eq!(
            apply(&store, again).expect("applied"),
            Applied {
                created: 0,
                updated: 1,
                tokens_added: 1
            }
        );
        let (_, same) = store.tenant_by_token(&auth::hash("wl_b")).unwrap().unwrap();
        assert_eq!((same.id, same.quotas.vus_per_run), (owner.id, 80));
        assert_eq!(store.tenants().unwrap().len(), 2, "search is left alone");
    }

    #[test]
    fn every_problem_is_named_and_nothing_changes() {
        let store = store();
        let bad = file(json!({"tenants": [
            {"name": "ok", "egress": {"allow": []}},
            {"name": "", "egress": {"allow": []}},
            {"name": "open", "egress": {"blockHostnames": ["x.test"]}},
            {"name": "q", "quotas": {"concurrentRuns": 0}, "egress": {"allow": []},
             "tokenSha256": ["abc"]},
            {"name": "ok", "egress": {"allow": []}},
        ]}));
        let err = format!("{:#}", apply(&store, bad).expect_err("refused"));
        for said in [
            "tenant #2: name must have 1 to 100 characters",
            "tenant \"open\": egress.allow is needed",
            "tenant \"q\": concurrentRuns must be at least 1",
            "tenant \"q\": tokenSha256 \"abc\" is not a SHA-256",
            "tenant \"ok\": is listed twice",
        ] {
            assert!(err.contains(said), "{said:?} in {err}");
        }
        assert!(store.tenants().unwrap().is_empty(), "nothing was created");
    }

    #[test]
    fn one_token_cannot_open_two_tenants() {
        let store = store();
        let shared = sha("wl_shared");
        let f = file(json!({"tenants": [
            {"name": "a", "egress": {"allow": []}, "tokenSha256": [shared]},
            {"name": "b", "egress": {"allow": []}, "tokenSha256": [shared]},
        ]}));
        let err = format!("{:#}", apply(&store, f).expect_err("refused"));
        assert!(
            err.contains("tenant \"b\": a token of it is already tenant \"a\"'s"),
            "{err}"
        );
        assert!(store.tenants().unwrap().is_empty(), "nothing was created");
        // Nor with a tenant made before (through the API, or an older file).
        let a = file(
            json!({"tenants": [{"name": "a", "egress": {"allow": []}, "tokenSha256": [shared]}]}),
        );
        apply(&store, a).expect("applied");
        let b = file(
            json!({"tenants": [{"name": "b", "egress": {"allow": []}, "tokenSha256": [shared]}]}),
        );
        let err = format!("{:#}", apply(&store, b).expect_err("refused"));
        assert!(err.contains("already tenant \"a\"'s"), "{err}");
    }
}
