//! Plugin capabilities: what a plugin of the world
//! `wload:scenario/confined-plugin` (wit/test-0.2/scenario.wit, and 0.1's
//! in wit/scenario.wit: the same export) declares it reaches
//! outside its sandbox (hosts, env names), checked against what the run
//! grants (`--allow-host`, `--allow-env`; in `wload serve` the tenant's
//! egress policy, which every declared host must be inside), and the
//! confinement the plugin then runs under.
//!
//! A plugin is someone else's code: the person running it should see, and
//! agree to, where it sends traffic before it sends any (as Deno's
//! `--allow-net` / `--allow-env` do for scripts). The check happens before
//! any instance of the plugin is configured for the run, so a refusal
//! sends nothing. The hosts are then enforced where every connection is
//! checked, as an egress policy inside the run's own
//! ([`EgressPolicy::also`]): a request elsewhere fails like an egress
//! denial, and the tenant's policy of `wload serve` still applies.
//!
//! A plugin of the plain world `plugin` declares nothing: it keeps running
//! as it did before capabilities existed, under the run's egress policy
//! alone.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use anyhow::{Context, Result};
use wasmtime::component::{ComponentType, Lift};
use wload_http::EgressPolicy;
use wload_http::egress::AllowRule;

use super::{Param, ParamValue};
use crate::WasmtimeResult;
use crate::component::CompiledTest;
use crate::run::RunOptions;
use crate::sandbox::Sandbox;

/// The world whose plugins declare capabilities (0.1's, `@0.1.0`, runs
/// too).
pub const WORLD: &str = "wload:scenario/confined-plugin@0.2.0";

/// The export that declares them.
const EXPORT: &str = "capabilities";

/// What a plugin declares, as its `capabilities()` returns it (the
/// record `capabilities` of wit/test-0.2/scenario.wit, as of 0.1's).
#[derive(Debug, Clone, Default, PartialEq, Eq, ComponentType, Lift)]
#[component(record)]
pub struct Capabilities {
    pub hosts: Vec<String>,
    pub env: Vec<String>,
}

/// The plugin's declaration, `None` for a plugin of the plain world
/// `plugin`. Asked of an instance of its own on the probe `sandbox`, as
/// `describe` is, in a store that may contact no address.
pub async fn declared(compiled: &CompiledTest, sandbox: &Sandbox) -> Result<Option<Capabilities>> {
    let component = compiled.component(&sandbox.engine)?;
    if component.get_export_index(None, EXPORT).is_none() {
        return Ok(None);
    }
    let pre = compiled.plugin_pre(&sandbox.engine)?;
    let mut store = super::probe_store(sandbox)?;
    let instance = pre
        .instance_pre()
        .instantiate_async(&mut store)
        .await
        .anyhow()
        .context("cannot instantiate the plugin")?;
    let func = instance
        .get_typed_func::<(), (Capabilities,)>(&mut store, EXPORT)
        .anyhow()
        .with_context(|| {
            format!(
                "its export `{EXPORT}` is not `func() -> capabilities` of the world {WORLD} \
                 (wit/test-0.2/scenario.wit): rebuild it against wload's wit/test-0.2"
            )
        })?;
    let (caps,) = func
        .call_async(&mut store, ())
        .await
        .anyhow()
        .context("the plugin's capabilities() trapped")?;
    Ok(Some(caps))
}

/// The declaration for `wload plugin info --json`: `{"hosts": [...],
/// "env": [...]}`, or `null` for a plugin that declares none.
pub fn info_json(declared: Option<&Capabilities>) -> serde_json::Value {
    match declared {
        Some(c) => serde_json::json!({"hosts": c.hosts, "env": c.env}),
        None => serde_json::Value::Null,
    }
}

/// The declaration for `wload plugin info`, after the parameters.
pub fn info_text(declared: Option<&Capabilities>) -> String {
    let Some(c) = declared else {
        return "\ncapabilities: none declared (a plugin of the world wload:scenario/plugin: \
                only the run's egress policy limits it)\n"
            .to_owned();
    };
    let list = |items: &[String]| {
        if items.is_empty() {
            "none".to_owned()
        } else {
            items.join(", ")
        }
    };
    format!(
        "\ncapabilities (a run grants them with --allow-host / --allow-env, or is refused):\n  \
         hosts: {}\n  env: {}\n",
        list(&c.hosts),
        list(&c.env)
    )
}

/// A host the run lets plugins contact: an egress rule, or `*` for any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostGrant {
    Any,
    Rule(AllowRule),
}

impl HostGrant {
    /// `--allow-host`'s value: `*`, or an egress rule (`127.0.0.1:8080`,
    /// `*.example.com:443`, `10.0.0.0/8`, `api.internal` for any port).
    pub fn parse(text: &str) -> Result<HostGrant, String> {
        match text.trim() {
            "*" => Ok(HostGrant::Any),
            rule => AllowRule::parse(rule)
                .map(HostGrant::Rule)
                .map_err(|e| format!("--allow-host: {e}; or * for any host")),
        }
    }

    fn covers(&self, want: &Wanted) -> bool {
        match (self, want) {
            (HostGrant::Any, _) => true,
            (HostGrant::Rule(_), Wanted::Any) => false,
            (HostGrant::Rule(grant), Wanted::Rule(want)) => rule_covers(grant, want),
        }
    }
}

/// Whether every connection `want` allows, `grant` allows too.
fn rule_covers(grant: &AllowRule, want: &AllowRule) -> bool {
    let (AllowRule::Net { port: gp, .. } | AllowRule::Host { port: gp, .. }) = grant;
    let (AllowRule::Net { port: wp, .. } | AllowRule::Host { port: wp, .. }) = want;
    let port_ok = match (gp, wp) {
        (None, _) => true,
        (Some(g), Some(w)) => g == w,
        (Some(_), None) => false,
    };
    port_ok
        && match (grant, want) {
            (AllowRule::Net { net: g, .. }, AllowRule::Net { net: w, .. }) => g.covers(w),
            (AllowRule::Host { pattern: g, .. }, AllowRule::Host { pattern: w, .. }) => {
                let (g, w) = (g.to_string(), w.to_string());
                match (g.strip_prefix('*'), w.strip_prefix('*')) {
                    // A name is covered by a pattern that matches it; a
                    // pattern by one whose suffix is a suffix of its own.
                    (Some(gs), Some(ws)) => ws.ends_with(gs),
                    (Some(gs), None) => w.ends_with(gs),
                    (None, Some(_)) => false,
                    (None, None) => g == w,
                }
            }
            _ => false,
        }
}

/// What a run grants the plugins it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// `--allow-host`.
    pub hosts: Vec<HostGrant>,
    /// `--allow-env`.
    pub env: Vec<String>,
    /// `wload serve`: the tenant's egress policy is the grant. Every
    /// declared host must be inside it (a plugin is refused at start
    /// rather than left to fail every request), and every declared env
    /// name is granted, since the run's env is the tenant's own.
    pub tenant: Option<EgressPolicy>,
}

impl Grants {
    /// The grants of a run on `wload serve` for a tenant of `policy`.
    pub fn tenant(policy: &EgressPolicy) -> Grants {
        Grants {
            tenant: Some(policy.clone()),
            ..Grants::default()
        }
    }
}

/// Whether every connection `want` allows, the tenant's `policy` allows
/// too: an `allow` rule covers it, and no `blockHostnames` pattern or
/// `blacklistIPs` network takes part of it away.
fn tenant_covers(policy: &EgressPolicy, want: &AllowRule) -> bool {
    let blocked = match want {
        AllowRule::Host { pattern, .. } => {
            let want = pattern.to_string();
            policy.block_hostnames.iter().any(|b| {
                let block = b.to_string();
                // Two patterns overlap when one's suffix ends the other.
                match (block.strip_prefix('*'), want.strip_prefix('*')) {
                    (Some(bs), Some(ws)) => bs.ends_with(ws) || ws.ends_with(bs),
                    (Some(_), None) => b.matches(&want),
                    (None, Some(ws)) => block.ends_with(ws),
                    (None, None) => block == want,
                }
            })
        }
        // Networks nest or are apart.
        AllowRule::Net { net, .. } => policy
            .blacklist_ips
            .iter()
            .any(|b| b.covers(net) || net.covers(b)),
    };
    if blocked {
        return false;
    }
    match &policy.allow {
        Some(rules) => rules.iter().any(|g| rule_covers(g, want)),
        // Any target but the special ranges: a name is covered, an
        // address only where special ranges are not denied (what is
        // special inside a network is not worth guessing at here).
        None => matches!(want, AllowRule::Host { .. }) || !policy.deny_special_ranges,
    }
}

/// A declared host, resolved against the parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Wanted {
    Any,
    Rule(AllowRule),
}

impl fmt::Display for Wanted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Wanted::Any => f.write_str("*"),
            Wanted::Rule(r) => write!(f, "{r}"),
        }
    }
}

/// What a confined plugin is held to for the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    /// The hosts as an egress allowlist; `None` when it declared `*`.
    pub egress: Option<EgressPolicy>,
    /// The env names it may read.
    pub env: Vec<String>,
}

impl Confinement {
    /// The run's egress policy (`base`: the tenant's or the run's own,
    /// `None` for none) with the plugin's hosts inside it.
    pub fn egress_within(&self, base: Option<&EgressPolicy>) -> Option<EgressPolicy> {
        match (&self.egress, base) {
            (None, base) => base.cloned(),
            (Some(mine), None) => Some(EgressPolicy::default().and_also(mine.clone())),
            (Some(mine), Some(base)) => Some(base.clone().and_also(mine.clone())),
        }
    }

    pub fn allows_env(&self, name: &str) -> bool {
        self.env.iter().any(|e| e == name)
    }

    /// Hold the run to it: its egress policy (the tenant's, or the one its
    /// client settings carry) gets the plugin's hosts inside, and its `-e`
    /// variables lose every name the plugin did not declare.
    pub fn apply(&self, opts: &mut RunOptions) {
        if opts.egress.is_some() {
            opts.egress = self.egress_within(opts.egress.as_ref());
        } else {
            opts.http.egress = self
                .egress_within(opts.http.egress.as_deref())
                .map(Arc::new);
        }
        opts.env.retain(|name, _| self.allows_env(name));
    }

    /// The same for a scenario's own `env` (from the options).
    pub fn apply_env(&self, env: &mut BTreeMap<String, String>) {
        env.retain(|name, _| self.allows_env(name));
    }
}

/// The plugin `name`'s declaration, with `{NAME}` resolved against the
/// run's checked `params`, held against `grants`. `Err`: what is wrong
/// with the declaration, or every capability the run does not grant with
/// the flag that grants it.
pub fn check(
    name: &str,
    declared: &Capabilities,
    params: &[Param],
    grants: &Grants,
) -> Result<Confinement, String> {
    let mut wanted = Vec::new();
    let mut problems = Vec::new();
    for entry in &declared.hosts {
        match resolve_host(entry, params) {
            Ok(Some(w)) => wanted.push((entry, w)),
            Ok(None) => {}
            Err(e) => problems.push(e),
        }
    }
    for env in &declared.env {
        if env.is_empty() || env.contains('=') || env.chars().any(char::is_whitespace) {
            problems.push(format!(
                "env {env:?} is not a variable name (declared by the plugin)"
            ));
        }
    }
    if !problems.is_empty() {
        return Err(format!(
            "the plugin {name} declares capabilities wload cannot hold it to: {}; its author \
             must fix its capabilities()",
            problems.join("; ")
        ));
    }
    let from = |entry: &str| {
        if entry.starts_with('{') {
            format!(
                " (the URL of the parameter {})",
                entry.trim_matches(['{', '}'])
            )
        } else {
            String::new()
        }
    };
    if let Some(policy) = &grants.tenant {
        // A declared `*` asks for nothing more than the policy gives: the
        // plugin is then held to the tenant's policy alone.
        let outside: Vec<String> = wanted
            .iter()
            .filter_map(|(entry, want)| match want {
                Wanted::Rule(r) if !tenant_covers(policy, r) => Some(format!(
                    "host {want}{}: outside the tenant's egress policy",
                    from(entry)
                )),
                _ => None,
            })
            .collect();
        if outside.is_empty() {
            return Ok(confinement(wanted, declared));
        }
        let allows = match &policy.allow {
            Some(rules) if rules.is_empty() => "it allows no host".to_owned(),
            Some(rules) => format!(
                "it allows {}",
                rules
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => "it allows any host outside the special ranges".to_owned(),
        };
        return Err(format!(
            "the plugin {name} declares hosts its tenant's egress policy does not allow ({} \
             outside it; {allows}):\n  {}\nPoint the plugin's parameters at an allowed host, or \
             ask the service's admin to allow it in the tenant's egress policy",
            outside.len(),
            outside.join("\n  ")
        ));
    }
    let mut missing = Vec::new();
    for (entry, want) in &wanted {
        if !grants.hosts.iter().any(|g| g.covers(want)) {
            let flag = match want {
                Wanted::Any => "--allow-host '*'".to_owned(),
                Wanted::Rule(r) => format!("--allow-host {r}"),
            };
            missing.push(format!("host {want}{}: grant it with {flag}", from(entry)));
        }
    }
    for env in &declared.env {
        if !grants.env.contains(env) {
            missing.push(format!("env {env}: grant it with --allow-env {env}"));
        }
    }
    if !missing.is_empty() {
        let n = missing.len();
        let granted = if grants.hosts.is_empty() && grants.env.is_empty() {
            "nothing is granted".to_owned()
        } else {
            let mut what: Vec<String> = grants
                .hosts
                .iter()
                .map(|g| match g {
                    HostGrant::Any => "host *".to_owned(),
                    HostGrant::Rule(r) => format!("host {r}"),
                })
                .collect();
            what.extend(grants.env.iter().map(|e| format!("env {e}")));
            format!("granted: {}", what.join(", "))
        };
        return Err(format!(
            "the plugin {name} needs what this run does not grant ({n} missing; {granted}):\n  {}",
            missing.join("\n  ")
        ));
    }
    Ok(confinement(wanted, declared))
}

/// What a plugin whose declaration `wanted` (resolved) was granted is held
/// to.
fn confinement(wanted: Vec<(&String, Wanted)>, declared: &Capabilities) -> Confinement {
    let any = wanted.iter().any(|(_, w)| *w == Wanted::Any);
    let egress = (!any).then(|| EgressPolicy {
        allow: Some(
            wanted
                .into_iter()
                .filter_map(|(_, w)| match w {
                    Wanted::Rule(r) => Some(r),
                    Wanted::Any => None,
                })
                .collect(),
        ),
        // The plugin's list only narrows: special ranges are the run's
        // policy's business (denied by a tenant's, open on a plain run).
        deny_special_ranges: false,
        ..EgressPolicy::default()
    });
    Confinement {
        egress,
        env: declared.env.clone(),
    }
}

/// One declared host: `*`, an egress rule, or `{NAME}` (the host and port
/// of the URL in parameter NAME; `None` when that parameter is empty).
fn resolve_host(entry: &str, params: &[Param]) -> Result<Option<Wanted>, String> {
    let entry = entry.trim();
    if entry == "*" {
        return Ok(Some(Wanted::Any));
    }
    let Some(param) = entry.strip_prefix('{').and_then(|e| e.strip_suffix('}')) else {
        return AllowRule::parse(entry)
            .map(|r| Some(Wanted::Rule(r)))
            .map_err(|e| format!("host {entry:?}: {e}"));
    };
    let value = match params.iter().find(|p| p.name == param).map(|p| &p.value) {
        Some(ParamValue::Text(v)) => v.trim(),
        Some(_) => {
            return Err(format!(
                "host {entry:?}: the parameter {param} is not of kind text, so it holds no URL"
            ));
        }
        None => return Err(format!("host {entry:?}: it takes no parameter {param}")),
    };
    if value.is_empty() {
        return Ok(None);
    }
    let rule = url_host_port(value).map_err(|e| {
        format!("host {entry:?}: the parameter {param} = {value:?} names no host: {e}")
    })?;
    AllowRule::parse(&rule)
        .map(|r| Some(Wanted::Rule(r)))
        .map_err(|e| format!("host {entry:?} = {rule:?}: {e}"))
}

/// `HOST:PORT` of a URL (`http://127.0.0.1:8080/api` → `127.0.0.1:8080`,
/// `https://[::1]/` → `[::1]:443`), or of a bare `HOST:PORT`.
fn url_host_port(value: &str) -> Result<String, String> {
    if !value.contains("://") {
        return Ok(value.to_owned());
    }
    let uri: http::Uri = value.parse().map_err(|e| format!("not a URL: {e}"))?;
    let default_port = match uri.scheme_str() {
        Some("http" | "ws") => Some(80),
        Some("https" | "wss") => Some(443),
        _ => None,
    };
    let authority = uri.authority().ok_or("the URL has no host")?;
    let port = authority
        .port_u16()
        .or(default_port)
        .ok_or("the URL has neither a port nor an http(s) scheme")?;
    Ok(format!("{}:{port}", authority.host()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wload_http::egress::{HostPattern, IpNet};

    fn caps(hosts: &[&str], env: &[&str]) -> Capabilities {
        Capabilities {
            hosts: hosts.iter().map(|s| (*s).to_owned()).collect(),
            env: env.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn text(name: &str, value: &str) -> Param {
        Param {
            name: name.to_owned(),
            value: ParamValue::Text(value.to_owned()),
        }
    }

    fn grants(hosts: &[&str], env: &[&str]) -> Grants {
        Grants {
            hosts: hosts.iter().map(|h| HostGrant::parse(h).unwrap()).collect(),
            env: env.iter().map(|s| (*s).to_owned()).collect(),
            tenant: None,
        }
    }

    /// The grants of a served run whose tenant allows `allow`.
    fn tenant(allow: &[&str]) -> Grants {
        Grants::tenant(&EgressPolicy::tenant(Some(
            allow.iter().map(|r| AllowRule::parse(r).unwrap()).collect(),
        )))
    }

    fn allow(c: &Confinement) -> Vec<String> {
        c.egress
            .as_ref()
            .and_then(|p| p.allow.as_ref())
            .map(|a| a.iter().map(ToString::to_string).collect())
            .unwrap_or_default()
    }

    #[test]
    fn declared_hosts_resolve_from_parameters_and_must_be_granted() {
        let declared = caps(&["{base-url}", "auth.example.com:443"], &["API_TOKEN"]);
        let params = [text("base-url", "http://127.0.0.1:8080/api/v1")];
        let ok = check(
            "openapi",
            &declared,
            &params,
            &grants(&["127.0.0.1:8080", "*.example.com:443"], &["API_TOKEN"]),
        )
        .unwrap();
        assert_eq!(allow(&ok), ["127.0.0.1:8080", "auth.example.com:443"]);
        assert!(ok.allows_env("API_TOKEN") && !ok.allows_env("HOME"));

        let err = check(
            "openapi",
            &declared,
            &params,
            &grants(&["127.0.0.1:9090"], &[]),
        )
        .unwrap_err();
        assert!(
            err.starts_with("the plugin openapi needs what this run does not grant (3 missing; granted: host 127.0.0.1:9090)"),
            "{err}"
        );
        assert!(
            err.contains(
                "host 127.0.0.1:8080 (the URL of the parameter base-url): grant it with \
                 --allow-host 127.0.0.1:8080"
            ),
            "{err}"
        );
        assert!(
            err.contains(
                "host auth.example.com:443: grant it with --allow-host auth.example.com:443"
            ),
            "{err}"
        );
        assert!(
            err.contains("env API_TOKEN: grant it with --allow-env API_TOKEN"),
            "{err}"
        );

        // Served: what the tenant's policy covers is granted, env names
        // included, and still confined.
        let served = check(
            "openapi",
            &declared,
            &params,
            &tenant(&["127.0.0.0/8", "*.example.com:443"]),
        )
        .unwrap();
        assert_eq!(served, ok);
        // An empty URL parameter declares nothing.
        let none = check(
            "openapi",
            &declared,
            &[text("base-url", "")],
            &grants(&["auth.example.com"], &["API_TOKEN"]),
        )
        .unwrap();
        assert_eq!(allow(&none), ["auth.example.com:443"]);
    }

    #[test]
    fn a_served_plugin_must_declare_hosts_inside_its_tenants_policy() {
        let declared = caps(&["{base-url}", "api.example.com:443"], &["API_TOKEN"]);
        let params = [text("base-url", "http://127.0.0.1:9090/")];
        let err = check(
            "openapi",
            &declared,
            &params,
            &tenant(&["127.0.0.1:8080", "*.example.com:443"]),
        )
        .unwrap_err();
        assert!(
            err.starts_with(
                "the plugin openapi declares hosts its tenant's egress policy does not allow (1 \
                 outside it; it allows 127.0.0.1:8080, *.example.com:443):\n  host \
                 127.0.0.1:9090 (the URL of the parameter base-url): outside the tenant's egress \
                 policy\n"
            ),
            "{err}"
        );
        assert!(!err.contains("--allow"), "{err}");
        let none = check("p", &declared, &params, &tenant(&[])).unwrap_err();
        assert!(none.contains("(2 outside it; it allows no host)"), "{none}");

        // Denials take a declared host out of the policy, even partly.
        let mut policy = EgressPolicy::tenant(Some(vec![
            AllowRule::parse("127.0.0.0/8").unwrap(),
            AllowRule::parse("*.example.com").unwrap(),
        ]));
        policy.narrow(
            &[IpNet::parse("127.0.0.1").unwrap()],
            &[HostPattern::parse("*.api.example.com").unwrap()],
        );
        let denied = |hosts: &[&str]| {
            check(
                "p",
                &caps(hosts, &[]),
                &[],
                &Grants::tenant(&policy.clone()),
            )
            .is_err()
        };
        assert!(denied(&["127.0.0.1:9090"]));
        assert!(denied(&["127.0.0.0/24"]));
        assert!(denied(&["v1.api.example.com:443"]));
        assert!(denied(&["*.example.com:443"]));
        assert!(!denied(&["127.0.0.2:9090", "www.example.com:443"]));
        // `*` asks for no more than the tenant's policy gives.
        let any = check("p", &caps(&["*"], &[]), &[], &tenant(&["127.0.0.1:1"])).unwrap();
        assert_eq!(any.egress, None);
    }

    #[test]
    fn grants_cover_narrower_declarations_only() {
        let covered = |grant: &str, want: &str| {
            HostGrant::parse(grant)
                .unwrap()
                .covers(&Wanted::Rule(AllowRule::parse(want).unwrap()))
        };
        assert!(covered("127.0.0.1:8080", "127.0.0.1:8080"));
        assert!(covered("127.0.0.0/8", "127.0.0.1:8080"));
        assert!(covered("127.0.0.1", "127.0.0.1:8080"));
        assert!(covered("*", "10.0.0.0/8"));
        assert!(covered("*.example.com:443", "api.example.com:443"));
        assert!(covered("*.example.com", "*.api.example.com:443"));
        assert!(!covered("127.0.0.1:8080", "127.0.0.1:8081"));
        assert!(!covered("127.0.0.1:8080", "127.0.0.1"));
        assert!(!covered("127.0.0.1:8080", "127.0.0.0/24:8080"));
        assert!(!covered("api.example.com:443", "*.example.com:443"));
        assert!(!covered("localhost:8080", "127.0.0.1:8080"));
        assert!(!HostGrant::Rule(AllowRule::parse("0.0.0.0/0").unwrap()).covers(&Wanted::Any));
        assert_eq!(
            HostGrant::parse("nope:port").unwrap_err(),
            "--allow-host: invalid egress rule \"nope:port\": \"port\" is not a port (1-65535 or *) \
             (expected HOST:PORT, IP:PORT, [IPv6]:PORT or a CIDR such as 10.1.0.0/16, with :* or \
             no port for any port); or * for any host"
        );
    }

    #[test]
    fn urls_give_their_host_and_the_schemes_port() {
        assert_eq!(
            url_host_port("http://127.0.0.1:8080/x?y").unwrap(),
            "127.0.0.1:8080"
        );
        assert_eq!(
            url_host_port("https://api.example.com").unwrap(),
            "api.example.com:443"
        );
        assert_eq!(url_host_port("http://[::1]/").unwrap(), "[::1]:80");
        assert_eq!(
            url_host_port("http://user:pw@h.test:81/").unwrap(),
            "h.test:81"
        );
        assert!(url_host_port("ftp://h.test/").is_err());
    }

    #[test]
    fn a_bad_declaration_is_the_plugins_fault_and_says_so() {
        let err = check(
            "p",
            &caps(&["{missing}", "{n}", "not a host"], &["A=B"]),
            &[Param {
                name: "n".into(),
                value: ParamValue::Integer(1),
            }],
            &Grants::tenant(&EgressPolicy::tenant(None)),
        )
        .unwrap_err();
        assert!(
            err.starts_with("the plugin p declares capabilities wload cannot hold it to: "),
            "{err}"
        );
        assert!(
            err.contains("host \"{missing}\": it takes no parameter missing"),
            "{err}"
        );
        assert!(err.contains("the parameter n is not of kind text"), "{err}");
        assert!(err.contains("host \"not a host\""), "{err}");
        assert!(err.contains("env \"A=B\" is not a variable name"), "{err}");
        assert!(
            err.ends_with("its author must fix its capabilities()"),
            "{err}"
        );
    }

    #[test]
    fn any_host_takes_a_grant_of_any_and_is_not_confined_by_host() {
        let declared = caps(&["*"], &[]);
        let err = check("p", &declared, &[], &grants(&["0.0.0.0/0"], &[])).unwrap_err();
        assert!(
            err.contains("host *: grant it with --allow-host '*'"),
            "{err}"
        );
        let ok = check("p", &declared, &[], &grants(&["*"], &[])).unwrap();
        assert_eq!(ok.egress, None);
        let tenant = EgressPolicy::tenant(None);
        assert_eq!(ok.egress_within(Some(&tenant)), Some(tenant));
    }
}
