//! `wload serve`: the multi-tenant service. Many teams share one machine
//! and send it tests nobody reviewed; the service must accept a test from
//! anyone, run it beside others, and make sure that no test can take the
//! machine, reach what its tenant may not reach, or read another tenant's
//! results.
//!
//! How that is arranged (docs/server.md says it for users):
//! - [`store`]: tenants, their hashed tokens, tests, runs, in SQLite
//!   beside the files of each run, so that the service survives a restart
//!   and a `kill -9` (a run that was going is marked interrupted).
//! - [`auth`]: who is calling: the admin token, or a tenant's token.
//! - [`quota`]: what a tenant may use, checked before a run starts.
//! - [`provision`]: tenants declared in a file, applied at every start.
//! - [`runner`]: every run is a `wload worker` child process driving the
//!   engine under the tenant's sandbox limits and egress policy; a run
//!   that crashes or runs away takes its own process, never the service.
//! - [`worker`]: that child's side.
//! - [`api`]: the JSON HTTP API (OpenAPI 3 in `openapi.json`), live
//!   metrics as server-sent events.
//! - [`client`]: `wload run --server`, a run on a service shown as a
//!   local one.

pub mod api;
pub mod auth;
pub mod client;
pub mod job;
pub mod provision;
pub mod quota;
pub mod runner;
pub mod sse;
pub mod store;
pub mod time;
pub mod worker;

pub use api::{ServeConfig, serve};
