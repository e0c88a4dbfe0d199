//! `wload run --server URL`: the flags of a local run, turned into what a
//! run on a `wload serve` service takes (one k6 options object and the
//! env), and the flags that cannot apply there named, so that nothing a
//! user typed is silently ignored.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use serde_json::Map;

use wload_engine::config;
use wload_engine::plugin::params;
use wload_output::stream::OutSpec;
use wload_server::client::{self, RemoteRun};

use super::{LoadArgs, invalid_flags};

/// `--vu-memory`'s default.
const DEFAULT_VU_MEMORY: u64 = 64 << 20;

impl LoadArgs {
    /// Run `test` on the service at `server`.
    pub(super) async fn run_remote(&self, test: &Path, server: &str) -> Result<u8> {
        let mut problems = Vec::new();
        let mut hdr_out = None;
        for spec in &self.out {
            match OutSpec::parse(spec) {
                Ok(OutSpec::Hdr(path)) if hdr_out.is_none() => hdr_out = Some(path),
                Ok(_) => problems.push(format!(
                    "--out {spec}: a run on a service keeps one hdr log (--out hdr=FILE \
                     downloads it); its interval metrics are GET /v1/runs/ID/intervals"
                )),
                Err(e) => problems.push(e),
            }
        }
        // These are the service's to decide (quotas) or name local files.
        let local_only = [
            (
                "--vu-memory",
                self.vu_memory != DEFAULT_VU_MEMORY,
                "the tenant's memoryPerVu quota applies",
            ),
            (
                "--guest-timeout",
                self.guest_timeout != "10s",
                "the tenant's cpuPerCallMs quota applies",
            ),
            (
                "--execution-segment",
                self.execution_segment.is_some(),
                "a service run is one whole run",
            ),
            (
                "--no-cache",
                self.no_cache,
                "the service compiles each test once",
            ),
            (
                "--local-ips",
                self.http.local_ips.is_some(),
                "connections are made from the service's addresses",
            ),
            (
                "--tls-ca",
                !self.http.tls_ca.is_empty(),
                "it names a file on this machine",
            ),
            (
                "--tls-client-cert",
                self.http.tls_client_cert.is_some(),
                "it names a file on this machine",
            ),
            (
                "--dashboard",
                self.dashboard,
                "the run's intervals stay on the service",
            ),
            (
                "--report",
                self.report.is_some(),
                "the run's intervals stay on the service; write one with `wload report` \
                 from the run's summary",
            ),
            (
                "--with",
                !self.with.is_empty(),
                "the service runs uploaded components as they are; compose locally: \
                 `wload run TEST.wasm --with PLUGIN.wasm`",
            ),
            (
                "--allow-host",
                !self.allow_hosts.is_empty(),
                "on the service, a plugin may reach what it declares inside the tenant's \
                 egress policy",
            ),
            (
                "--allow-env",
                !self.allow_env.is_empty(),
                "on the service, a plugin reads the -e variables it declares",
            ),
        ];
        for (flag, set, why) in local_only {
            if set {
                problems.push(format!("{flag} cannot be used with --server: {why}"));
            }
        }
        let env_layer = config::env_layer(std::env::vars()).unwrap_or_else(|errors| {
            problems.extend(errors);
            Map::new()
        });
        let mut file_layer = match &self.config {
            Some(path) => match config::file_layer(path) {
                Ok(m) => m,
                Err(e) => {
                    problems.push(format!("{e:#}"));
                    Map::new()
                }
            },
            None => Map::new(),
        };
        let params = self.remote_params(&mut file_layer, &mut problems);
        if let Some(path) = &self.config
            && file_layer.contains_key("with")
        {
            problems.push(format!(
                "with in {} cannot be used with --server: the service runs uploaded components \
                 as they are; compose locally: `wload run TEST.wasm --with PLUGIN.wasm`",
                path.display()
            ));
        }
        let token = self.token.clone().unwrap_or_default();
        if token.is_empty() {
            problems.push("--server needs --token TOKEN (or WLOAD_TOKEN)".to_owned());
        }
        if !problems.is_empty() {
            return Err(invalid_flags(problems).into());
        }
        let options = config::merge(&[&file_layer, &env_layer, &self.cli_options()]);
        client::run(RemoteRun {
            server: server.to_owned(),
            token,
            test: test.to_owned(),
            options,
            env: self.env.iter().cloned().collect(),
            params,
            quiet: self.quiet,
            no_summary: self.no_summary,
            summary_export: self.summary_export.clone(),
            hdr_out,
        })
        .await
    }

    /// A plugin's parameters as the service takes them: the options
    /// file's `params` (taken out of `file_layer`), then `-p`, each `@FILE`
    /// read here, where the user's files are. Which names and values the
    /// plugin takes is the service's worker's to check, against the
    /// plugin's own description, as a local run does.
    fn remote_params(
        &self,
        file_layer: &mut Map<String, serde_json::Value>,
        problems: &mut Vec<String>,
    ) -> BTreeMap<String, String> {
        let mut given = match &self.config {
            Some(path) => params::take_from_options(file_layer, path).unwrap_or_else(|e| {
                problems.push(format!("{e:#}"));
                Vec::new()
            }),
            None => Vec::new(),
        };
        given.extend(self.params.iter().cloned());
        let mut texts = BTreeMap::new();
        for raw in given {
            match raw.text() {
                // Later ones win, as in a local run.
                Ok(text) => {
                    texts.insert(raw.name, text);
                }
                Err(e) => problems.push(e),
            }
        }
        texts
    }
}
