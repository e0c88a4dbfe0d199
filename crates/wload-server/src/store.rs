//! The service's state in SQLite: tenants, the hashes of their tokens,
//! their tests (by content hash) and their runs. Files too big for a row
//! (components, logs, summaries) live in the data directory beside the
//! database, named by the rows. WAL mode: a reader never waits for the
//! writer, and a committed row survives the process being killed.
//!
//! Every query of a tenant's data takes the tenant's id: there is no
//! function here that could return another tenant's test or run, so an
//! API handler cannot leak one by forgetting a check.

use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result, anyhow};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;

use wload_http::EgressPolicy;

use crate::quota::Quotas;
use crate::time;

/// A tenant, as the admin API shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tenant {
    pub id: String,
    pub name: String,
    pub quotas: Quotas,
    pub egress: EgressPolicy,
    pub created: String,
}

/// An uploaded test.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TestRecord {
    /// SHA-256 of the component, hex: the same bytes are one test.
    pub id: String,
    pub name: String,
    pub size: u64,
    pub created: String,
}

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// The worker is loading and planning it.
    Starting,
    Running,
    /// It ended by itself; `exitCode` says how (0, 99 thresholds failed…).
    Finished,
    /// Stopped through the API.
    Stopped,
    /// The worker failed (setup error, crash).
    Failed,
    /// The service stopped or died while it went.
    Interrupted,
}

impl RunState {
    fn as_str(self) -> &'static str {
        match self {
            RunState::Starting => "starting",
            RunState::Running => "running",
            RunState::Finished => "finished",
            RunState::Stopped => "stopped",
            RunState::Failed => "failed",
            RunState::Interrupted => "interrupted",
        }
    }

    fn parse(s: &str) -> RunState {
        match s {
            "starting" => RunState::Starting,
            "running" => RunState::Running,
            "finished" => RunState::Finished,
            "stopped" => RunState::Stopped,
            "interrupted" => RunState::Interrupted,
            _ => RunState::Failed,
        }
    }

    /// Whether the run may still change.
    pub fn is_live(self) -> bool {
        matches!(self, RunState::Starting | RunState::Running)
    }
}

/// A run, as the API shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    pub id: String,
    pub test: String,
    pub status: RunState,
    /// What the run was started with: `{options, env, paused}`.
    pub request: Value,
    pub created: String,
    pub started: Option<String>,
    pub ended: Option<String>,
    pub exit_code: Option<i64>,
    pub message: Option<String>,
    pub max_vus: Option<i64>,
    /// What it cost: max VUs × wall time.
    pub vu_hours: f64,
}

/// The database.
pub struct Store {
    db: Mutex<Connection>,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tenants (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    quotas TEXT NOT NULL,
    egress TEXT NOT NULL,
    created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tokens (
    hash BLOB PRIMARY KEY,
    tenant TEXT NOT NULL REFERENCES tenants(id),
    created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS tests (
    tenant TEXT NOT NULL REFERENCES tenants(id),
    digest TEXT NOT NULL,
    name TEXT NOT NULL,
    size INTEGER NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (tenant, digest)
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL REFERENCES tenants(id),
    test TEXT NOT NULL,
    status TEXT NOT NULL,
    request TEXT NOT NULL,
    created INTEGER NOT NULL,
    started INTEGER,
    ended INTEGER,
    exit_code INTEGER,
    message TEXT,
    max_vus INTEGER,
    vu_hours REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_by_tenant ON runs (tenant, created);
";

impl Store {
    /// Open (or create) the database at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        let db = Connection::open(path)
            .with_context(|| format!("cannot open the database {}", path.display()))?;
        db.pragma_update(None, "journal_mode", "WAL")
            .and_then(|()| db.pragma_update(None, "synchronous", "NORMAL"))
            .and_then(|()| db.pragma_update(None, "foreign_keys", "ON"))
            .and_then(|()| db.busy_timeout(std::time::Duration::from_secs(5)))
            .and_then(|()| db.execute_batch(SCHEMA))
            .with_context(|| format!("cannot set up the database {}", path.display()))?;
        Ok(Store { db: Mutex::new(db) })
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        let db = self
            .db
            .lock()
            .map_err(|_| anyhow!("the database lock is poisoned"))?;
        f(&db).context("database error")
    }

    // Tenants.

    /// A new tenant, with its first token if it has one.
    pub fn create_tenant(&self, tenant: &Tenant, token_hash: Option<&[u8]>) -> Result<()> {
        let quotas = serde_json::to_string(&tenant.quotas)?;
        let egress = serde_json::to_string(&tenant.egress)?;
        self.with(|db| {
            let tx = db.unchecked_transaction()?;
            tx.execute(
                "INSERT INTO tenants (id, name, quotas, egress, created) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![tenant.id, tenant.name, quotas, egress, time::now()],
            )?;
            if let Some(hash) = token_hash {
                tx.execute(
                    "INSERT INTO tokens (hash, tenant, created) VALUES (?1, ?2, ?3)",
                    params![hash, tenant.id, time::now()],
                )?;
            }
            tx.commit()
        })
    }

    pub fn tenant_named(&self, name: &str) -> Result<Option<Tenant>> {
        self.tenant_where("name = ?1", name)
    }

    pub fn tenant(&self, id: &str) -> Result<Option<Tenant>> {
        self.tenant_where("id = ?1", id)
    }

    fn tenant_where(&self, clause: &str, value: &str) -> Result<Option<Tenant>> {
        let sql = format!("SELECT id, name, quotas, egress, created FROM tenants WHERE {clause}");
        self.with(|db| db.query_row(&sql, [value], tenant_row).optional())?
            .transpose()
    }

    pub fn tenants(&self) -> Result<Vec<Tenant>> {
        self.with(|db| {
            let mut q =
                db.prepare("SELECT id, name, quotas, egress, created FROM tenants ORDER BY name")?;
            q.query_map([], tenant_row)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })?
        .into_iter()
        .collect()
    }

    pub fn update_tenant(&self, tenant: &Tenant) -> Result<()> {
        let quotas = serde_json::to_string(&tenant.quotas)?;
        let egress = serde_json::to_string(&tenant.egress)?;
        self.with(|db| {
            db.execute(
                "UPDATE tenants SET quotas = ?2, egress = ?3 WHERE id = ?1",
                params![tenant.id, quotas, egress],
            )
        })?;
        Ok(())
    }

    pub fn add_token(&self, tenant: &str, token_hash: &[u8]) -> Result<()> {
        self.with(|db| {
            db.execute(
                "INSERT INTO tokens (hash, tenant, created) VALUES (?1, ?2, ?3)",
                params![token_hash, tenant, time::now()],
            )
        })?;
        Ok(())
    }

    /// The tenant a token hash belongs to. The lookup is by hash (an
    /// index, not a comparison of secrets); the caller compares the hash
    /// found with its own in constant time.
    pub fn tenant_by_token(&self, token_hash: &[u8]) -> Result<Option<(Vec<u8>, Tenant)>> {
        let found: Option<(Vec<u8>, String)> = self.with(|db| {
            db.query_row(
                "SELECT hash, tenant FROM tokens WHERE hash = ?1",
                [token_hash],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })?;
        match found {
            Some((hash, id)) => Ok(self.tenant(&id)?.map(|t| (hash, t))),
            None => Ok(None),
        }
    }

    // Tests.

    /// Record an upload; `false` when the tenant had it already.
    pub fn put_test(&self, tenant: &str, digest: &str, name: &str, size: u64) -> Result<bool> {
        let n = self.with(|db| {
            db.execute(
                "INSERT OR IGNORE INTO tests (tenant, digest, name, size, created)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![tenant, digest, name, size as i64, time::now()],
            )
        })?;
        Ok(n == 1)
    }

    pub fn test(&self, tenant: &str, digest: &str) -> Result<Option<TestRecord>> {
        self.with(|db| {
            db.query_row(
                "SELECT digest, name, size, created FROM tests WHERE tenant = ?1 AND digest = ?2",
                [tenant, digest],
                test_row,
            )
            .optional()
        })
    }

    pub fn tests(&self, tenant: &str) -> Result<Vec<TestRecord>> {
        self.with(|db| {
            let mut q = db.prepare(
                "SELECT digest, name, size, created FROM tests WHERE tenant = ?1 ORDER BY created",
            )?;
            q.query_map([tenant], test_row)?.collect()
        })
    }

    /// Forget a tenant's test; returns whether it existed and whether any
    /// tenant still has those bytes (so the file must stay).
    pub fn delete_test(&self, tenant: &str, digest: &str) -> Result<(bool, bool)> {
        self.with(|db| {
            let n = db.execute(
                "DELETE FROM tests WHERE tenant = ?1 AND digest = ?2",
                [tenant, digest],
            )?;
            let still: i64 = db.query_row(
                "SELECT COUNT(*) FROM tests WHERE digest = ?1",
                [digest],
                |r| r.get(0),
            )?;
            Ok((n == 1, still > 0))
        })
    }

    // Runs.

    pub fn insert_run(&self, tenant: &str, id: &str, test: &str, request: &Value) -> Result<()> {
        let request = serde_json::to_string(request)?;
        self.with(|db| {
            db.execute(
                "INSERT INTO runs (id, tenant, test, status, request, created)
                 VALUES (?1, ?2, ?3, 'starting', ?4, ?5)",
                params![id, tenant, test, request, time::now()],
            )
        })?;
        Ok(())
    }

    /// The run was admitted and its VUs are about to start.
    pub fn run_started(&self, id: &str, max_vus: u32) -> Result<()> {
        self.with(|db| {
            db.execute(
                "UPDATE runs SET status = 'running', started = ?2, max_vus = ?3 WHERE id = ?1",
                params![id, time::now(), max_vus],
            )
        })?;
        Ok(())
    }

    /// The run ended (or was refused: then it is deleted, see
    /// [`Store::delete_run`]).
    pub fn run_ended(
        &self,
        id: &str,
        state: RunState,
        exit_code: Option<i32>,
        message: Option<&str>,
        vu_hours: f64,
    ) -> Result<()> {
        self.with(|db| {
            db.execute(
                "UPDATE runs SET status = ?2, ended = ?3, exit_code = ?4, message = ?5,
                 vu_hours = ?6 WHERE id = ?1",
                params![
                    id,
                    state.as_str(),
                    time::now(),
                    exit_code,
                    message,
                    vu_hours
                ],
            )
        })?;
        Ok(())
    }

    pub fn delete_run(&self, id: &str) -> Result<()> {
        self.with(|db| db.execute("DELETE FROM runs WHERE id = ?1", [id]))?;
        Ok(())
    }

    pub fn run(&self, tenant: &str, id: &str) -> Result<Option<RunRecord>> {
        self.with(|db| {
            db.query_row(
                &format!("{RUN_COLUMNS} WHERE tenant = ?1 AND id = ?2"),
                [tenant, id],
                run_row,
            )
            .optional()
        })?
        .transpose()
    }

    /// A tenant's runs, newest first.
    pub fn runs(&self, tenant: &str, limit: u32) -> Result<Vec<RunRecord>> {
        self.with(|db| {
            let mut q = db.prepare(&format!(
                "{RUN_COLUMNS} WHERE tenant = ?1 ORDER BY created DESC, rowid DESC LIMIT ?2"
            ))?;
            q.query_map(params![tenant, limit], run_row)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })?
        .into_iter()
        .collect()
    }

    /// VU-hours of the tenant's runs created since `since` (Unix seconds).
    pub fn vu_hours_since(&self, tenant: &str, since: i64) -> Result<f64> {
        self.with(|db| {
            db.query_row(
                "SELECT COALESCE(SUM(vu_hours), 0) FROM runs WHERE tenant = ?1 AND created >= ?2",
                params![tenant, since],
                |r| r.get(0),
            )
        })
    }

    /// At start-up: every run the database still has as going was cut by
    /// the end of the previous service process (its worker died with it).
    pub fn interrupt_live_runs(&self) -> Result<usize> {
        self.with(|db| {
            db.execute(
                "UPDATE runs SET status = 'interrupted', ended = ?1,
                 message = 'the service stopped while the run was going'
                 WHERE status IN ('starting', 'running')",
                [time::now()],
            )
        })
    }
}

const RUN_COLUMNS: &str = "SELECT id, test, status, request, created, started, ended, exit_code, \
                           message, max_vus, vu_hours FROM runs";

fn tenant_row(r: &rusqlite::Row) -> rusqlite::Result<Result<Tenant>> {
    let quotas: String = r.get(2)?;
    let egress: String = r.get(3)?;
    let id: String = r.get(0)?;
    let parsed = serde_json::from_str::<Quotas>(&quotas)
        .and_then(|q| Ok((q, serde_json::from_str::<EgressPolicy>(&egress)?)))
        .with_context(|| format!("tenant {id}'s quotas or egress policy in the database"));
    Ok(parsed.map(|(quotas, egress)| Tenant {
        name: r.get(1).unwrap_or_default(),
        created: time::rfc3339(r.get(4).unwrap_or_default()),
        id,
        quotas,
        egress,
    }))
}

fn test_row(r: &rusqlite::Row) -> rusqlite::Result<TestRecord> {
    Ok(TestRecord {
        id: r.get(0)?,
        name: r.get(1)?,
        size: r.get::<_, i64>(2)? as u64,
        created: time::rfc3339(r.get(3)?),
    })
}

fn run_row(r: &rusqlite::Row) -> rusqlite::Result<Result<RunRecord>> {
    let request: String = r.get(3)?;
    let status: String = r.get(2)?;
    let at = |i: usize| -> rusqlite::Result<Option<String>> {
        Ok(r.get::<_, Option<i64>>(i)?.map(time::rfc3339))
    };
    let record = RunRecord {
        id: r.get(0)?,
        test: r.get(1)?,
        status: RunState::parse(&status),
        request: Value::Null,
        created: time::rfc3339(r.get(4)?),
        started: at(5)?,
        ended: at(6)?,
        exit_code: r.get(7)?,
        message: r.get(8)?,
        max_vus: r.get(9)?,
        vu_hours: r.get(10)?,
    };
    Ok(serde_json::from_str(&request)
        .map(|request| RunRecord { request, ..record })
        .context("a run's request in the database"))
}

/// A store in a fresh temporary directory, for unit tests.
#[cfg(test)]
pub(crate) fn temp_db() -> (std::path::PathBuf, Store) {
    let dir = std::env::temp_dir().join(crate::auth::new_id("wload-store-").unwrap());
    std::fs::create_dir_all(&dir).unwrap();
    let store = Store::open(&dir.join("db.sqlite")).unwrap();
    (dir, store)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(id: &str) -> Tenant {
        Tenant {
            id: id.to_owned(),
            name: format!("team-{id}"),
            quotas: Quotas::default(),
            egress: serde_json::from_value(serde_json::json!({"allow": ["127.0.0.1:*"]})).unwrap(),
            created: String::new(),
        }
    }

    #[test]
    fn a_tenant_sees_only_its_own_tests_and_runs() {
        let (dir, store) = temp_db();
        store.create_tenant(&tenant("a"), Some(&[1; 32])).unwrap();
        store.create_tenant(&tenant("b"), Some(&[2; 32])).unwrap();
        assert!(store.put_test("a", "d1", "x.wasm", 10).unwrap());
        assert!(!store.put_test("a", "d1", "x.wasm", 10).unwrap());
        store
            .insert_run("a", "r1", "d1", &serde_json::json!({}))
            .unwrap();
        assert!(store.test("b", "d1").unwrap().is_none());
        assert!(store.run("b", "r1").unwrap().is_none());
        assert!(store.runs("b", 10).unwrap().is_empty());
        assert_eq!(store.runs("a", 10).unwrap().len(), 1);
        let (hash, t) = store.tenant_by_token(&[2; 32]).unwrap().unwrap();
        assert_eq!((hash, t.id.as_str()), (vec![2; 32], "b"));
        assert!(store.tenant_by_token(&[3; 32]).unwrap().is_none());
        // Both tenants upload the same bytes: deleting one keeps the file.
        store.put_test("b", "d1", "y.wasm", 10).unwrap();
        assert_eq!(store.delete_test("a", "d1").unwrap(), (true, true));
        assert_eq!(store.delete_test("b", "d1").unwrap(), (true, false));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn live_runs_are_interrupted_on_the_next_start_and_finished_ones_kept() {
        let (dir, store) = temp_db();
        store.create_tenant(&tenant("a"), Some(&[1; 32])).unwrap();
        store
            .insert_run("a", "r1", "d", &serde_json::json!({}))
            .unwrap();
        store
            .insert_run("a", "r2", "d", &serde_json::json!({}))
            .unwrap();
        store.run_started("r1", 5).unwrap();
        store.run_started("r2", 5).unwrap();
        store
            .run_ended("r2", RunState::Finished, Some(0), None, 0.5)
            .unwrap();
        drop(store);
        let store = Store::open(&dir.join("db.sqlite")).unwrap();
        assert_eq!(store.interrupt_live_runs().unwrap(), 1);
        assert_eq!(
            store.run("a", "r1").unwrap().unwrap().status,
            RunState::Interrupted
        );
        let done = store.run("a", "r2").unwrap().unwrap();
        assert_eq!((done.status, done.exit_code), (RunState::Finished, Some(0)));
        assert_eq!(store.vu_hours_since("a", 0).unwrap(), 0.5);
        let _ = std::fs::remove_dir_all(dir);
    }
}
