//! The egress policy: where a run's requests may go. It exists because a
//! load tester sends traffic where its test says, and a test is not always
//! trusted: k6's `blacklistIPs` and `blockHostnames` let any run fence
//! itself in, and a tenant of `wload serve` gets an allowlist with the
//! special ranges (loopback, private, link-local with 169.254.169.254,
//! CGNAT, unique-local, IPv4-mapped, ...) denied unless an IP or CIDR rule
//! names them.
//!
//! The client checks it where it dials (`exchange::dial`), the only place
//! a connection is made: hostname rules before DNS, address rules on each
//! resolved address just before that very address is connected to, so
//! there is no second resolution for a rebinding DNS server to answer
//! differently, and every redirect hop, which dials the same way, is
//! checked too. Kept-alive connections were checked when they were opened,
//! under the same run-wide policy; a request on one checks nothing.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use serde::{Deserialize, Serialize};

use super::error::{ErrorCode, HttpError};

/// Which connections a run may open. `allow` absent: any target not
/// denied; present: only targets a rule matches. `blockHostnames` and
/// `blacklistIPs` deny whatever `allow` says.
///
/// In JSON (`{"allow": [...], "blockHostnames": [...], "blacklistIPs":
/// [...]}`) a policy is a tenant's, special ranges denied, unless it says
/// `"denySpecialRanges": false`: a policy read from a service's
/// configuration is safe when a field is forgotten. In code,
/// [`EgressPolicy::tenant`] builds one and [`EgressPolicy::default`] is
/// the open policy of a plain run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EgressPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<AllowRule>>,
    /// k6's `blockHostnames`: names refused before any lookup.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_hostnames: Vec<HostPattern>,
    /// k6's `blacklistIPs`: networks never connected to.
    #[serde(
        default,
        rename = "blacklistIPs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub blacklist_ips: Vec<IpNet>,
    /// Deny the [`special_range`]s unless an IP or CIDR rule of `allow`
    /// covers the address (a hostname rule never does: DNS rebinding).
    #[serde(default = "deny_by_default")]
    pub deny_special_ranges: bool,
    /// A second policy every connection must pass as well: a scenario
    /// plugin's declared hosts inside a tenant's policy, two allowlists
    /// neither of which can be widened into the other. Set by the engine,
    /// never read from JSON.
    #[serde(skip)]
    pub also: Option<std::sync::Arc<EgressPolicy>>,
}

fn deny_by_default() -> bool {
    true
}

/// What a name's check found before its lookup, for the checks of the
/// addresses it resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameCheck {
    /// A hostname rule of `allow` matched the name and port.
    pub allowed_by_name: bool,
    /// The same for the policy's [`EgressPolicy::also`].
    pub also: Option<Box<NameCheck>>,
}

impl EgressPolicy {
    /// A tenant's policy: `allow` (`None`: any target that is not in a
    /// special range), special ranges denied.
    pub fn tenant(allow: Option<Vec<AllowRule>>) -> EgressPolicy {
        EgressPolicy {
            allow,
            block_hostnames: Vec::new(),
            blacklist_ips: Vec::new(),
            deny_special_ranges: true,
            also: None,
        }
    }

    /// This policy, with `inner` to pass as well (see [`Self::also`]);
    /// one already there must still be passed too.
    pub fn and_also(mut self, inner: EgressPolicy) -> EgressPolicy {
        let inner = match self.also.take() {
            Some(existing) => (*existing).clone().and_also(inner),
            None => inner,
        };
        self.also = Some(std::sync::Arc::new(inner));
        self
    }

    /// This policy with more denials (a test's `blacklistIPs` and
    /// `blockHostnames` over a tenant's policy): a policy can only be
    /// narrowed this way, never widened.
    pub fn narrow(&mut self, blacklist_ips: &[IpNet], block_hostnames: &[HostPattern]) {
        self.blacklist_ips.extend_from_slice(blacklist_ips);
        self.block_hostnames.extend_from_slice(block_hostnames);
    }

    /// Whether the policy lets everything through, so that the client
    /// need not carry it.
    pub fn is_open(&self) -> bool {
        self.allow.is_none()
            && self.block_hostnames.is_empty()
            && self.blacklist_ips.is_empty()
            && !self.deny_special_ranges
            && self.also.as_ref().is_none_or(|p| p.is_open())
    }

    /// The rules about `host` (as in the URL) on `port`, before it is
    /// looked up: a blocked name, or one no rule could allow, fails with
    /// [`ErrorCode::BlockedHostname`] and is never resolved.
    pub fn check_name(&self, host: &str, port: u16) -> Result<NameCheck, HttpError> {
        let also = match &self.also {
            Some(inner) => Some(Box::new(inner.check_name(host, port)?)),
            None => None,
        };
        let name = normalize(host);
        if let Some(p) = self.block_hostnames.iter().find(|p| p.matches(&name)) {
            return Err(HttpError::new(
                ErrorCode::BlockedHostname,
                format!("hostname is blocked: {host} matches blockHostnames pattern {p}"),
            ));
        }
        let Some(rules) = &self.allow else {
            return Ok(NameCheck {
                allowed_by_name: false,
                also,
            });
        };
        // An IP literal is judged by the address rules alone.
        let literal = host.parse::<IpAddr>().is_ok();
        let by_name = !literal
            && rules.iter().any(|r| match r {
                AllowRule::Host { pattern, port: p } => {
                    pattern.matches(&name) && p.is_none_or(|p| p == port)
                }
                AllowRule::Net { .. } => false,
            });
        let by_address = rules
            .iter()
            .any(|r| matches!(r, AllowRule::Net { port: p, .. } if p.is_none_or(|p| p == port)));
        if !by_name && !by_address {
            let code = if literal {
                ErrorCode::BlacklistedIp
            } else {
                ErrorCode::BlockedHostname
            };
            let what = if literal {
                "ip is blacklisted"
            } else {
                "hostname is blocked"
            };
            return Err(HttpError::new(
                code,
                format!(
                    "{what}: {} is not in the egress allowlist",
                    host_port(host, port)
                ),
            ));
        }
        Ok(NameCheck {
            allowed_by_name: by_name,
            also,
        })
    }

    /// The rules about `addr`, an address `host` resolved to, just before
    /// it is connected to: fails with [`ErrorCode::BlacklistedIp`] when it
    /// is in `blacklistIPs`, in a special range no IP or CIDR rule covers
    /// (tenant policies), or in no rule of an allowlist.
    pub fn check_addr(
        &self,
        host: &str,
        addr: SocketAddr,
        name: &NameCheck,
    ) -> Result<(), HttpError> {
        if let (Some(inner), Some(inner_name)) = (&self.also, &name.also) {
            inner.check_addr(host, addr, inner_name)?;
        }
        let ip = addr.ip();
        // `::ffff:10.0.0.1` reaches 10.0.0.1: rules about the one are
        // rules about the other.
        let v4 = ip.to_canonical();
        let covers = |net: &IpNet| net.contains(ip) || net.contains(v4);
        let refused = |why: String| {
            let via = if host.parse::<IpAddr>().is_ok() {
                String::new()
            } else {
                format!(" ({host} resolved to it)")
            };
            Err(HttpError::new(
                ErrorCode::BlacklistedIp,
                format!("ip is blacklisted: {why}{via}"),
            ))
        };
        if let Some(net) = self.blacklist_ips.iter().find(|n| covers(n)) {
            return refused(format!("{ip} is in blacklistIPs {net}"));
        }
        let explicit = self.allow.iter().flatten().any(|r| match r {
            AllowRule::Net { net, port } => covers(net) && port.is_none_or(|p| p == addr.port()),
            AllowRule::Host { .. } => false,
        });
        if explicit {
            return Ok(());
        }
        if self.deny_special_ranges
            && let Some(range) = special_range(ip)
        {
            return refused(format!(
                "{ip} is {} and no IP or CIDR rule of the egress allowlist covers {addr}",
                range.describe(ip)
            ));
        }
        if self.allow.is_some() && !name.allowed_by_name {
            return refused(format!("{addr} is not in the egress allowlist"));
        }
        Ok(())
    }
}

/// `host` as rules compare it: lowercase, without the root's trailing dot
/// (`Example.COM.` is `example.com`, which a pattern must not miss).
fn normalize(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// One rule of an allowlist, written as text: `127.0.0.1:8080`,
/// `10.1.0.0/16` (any port), `[::1]:9000`, `[fd00::/8]:443`,
/// `*.example.com:443`, `api.internal:*` (`:*` or no port: any port).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum AllowRule {
    /// An address or network: covers its addresses, special ranges too.
    Net { net: IpNet, port: Option<u16> },
    /// A host name pattern (k6's `blockHostnames` syntax): covers the
    /// names it matches, never an address in a special range.
    Host {
        pattern: HostPattern,
        port: Option<u16>,
    },
}

impl AllowRule {
    pub fn parse(text: &str) -> Result<AllowRule, String> {
        let bad = |why: &str| {
            format!(
                "invalid egress rule {text:?}: {why} (expected HOST:PORT, IP:PORT, [IPv6]:PORT \
                 or a CIDR such as 10.1.0.0/16, with :* or no port for any port)"
            )
        };
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (inner, after) = rest.split_once(']').ok_or_else(|| bad("no closing ]"))?;
            match after {
                "" => (inner, None),
                _ => match after.strip_prefix(':') {
                    Some(p) => (inner, Some(p)),
                    None => return Err(bad("text after ]")),
                },
            }
        } else if text.matches(':').count() > 1 {
            // An IPv6 address or network without a port.
            (text, None)
        } else {
            match text.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (text, None),
            }
        };
        let port = match port {
            None | Some("*") => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => return Err(bad(&format!("{p:?} is not a port (1-65535 or *)"))),
            },
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let looks_numeric =
            host.contains('/') || host.contains(':') || host.parse::<IpAddr>().is_ok();
        if looks_numeric {
            let net = IpNet::parse(host).map_err(|e| bad(&e))?;
            return Ok(AllowRule::Net { net, port });
        }
        let pattern = HostPattern::parse(host).map_err(|e| bad(&e))?;
        Ok(AllowRule::Host { pattern, port })
    }
}

impl TryFrom<String> for AllowRule {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        AllowRule::parse(&s)
    }
}

impl From<AllowRule> for String {
    fn from(r: AllowRule) -> String {
        r.to_string()
    }
}

impl fmt::Display for AllowRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let port = |p: &Option<u16>| p.map_or("*".to_owned(), |p| p.to_string());
        match self {
            AllowRule::Net { net, port: p } if net.addr.is_ipv6() => {
                write!(f, "[{net}]:{}", port(p))
            }
            AllowRule::Net { net, port: p } => write!(f, "{net}:{}", port(p)),
            AllowRule::Host { pattern, port: p } => write!(f, "{pattern}:{}", port(p)),
        }
    }
}

/// A host name pattern, k6's `blockHostnames` syntax: a name
/// (`api.example.com`), or one with a leading `*` that matches any
/// prefix (`*.example.com` matches `a.example.com` and `a.b.example.com`,
/// not `example.com`; `*example.com` matches both). Case does not matter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct HostPattern(Box<str>);

impl HostPattern {
    /// A pattern, checked as k6 checks one: a wildcard only at the start
    /// (`*` or `*.`), then dot-separated labels of letters, digits and
    /// inner hyphens.
    pub fn parse(text: &str) -> Result<HostPattern, String> {
        let lower = text.to_ascii_lowercase();
        let rest = lower
            .strip_prefix("*.")
            .or_else(|| lower.strip_prefix('*'))
            .unwrap_or(&lower);
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        // A bare `*` (any name) is valid, as in k6.
        let any_name = rest.is_empty() && lower.starts_with('*');
        if !any_name && !rest.split('.').all(label_ok) {
            return Err(format!(
                "invalid hostname pattern {text:?}: expected a name such as api.example.com, \
                 with at most a leading * (*.example.com)"
            ));
        }
        Ok(HostPattern(lower.into()))
    }

    /// Whether `name` (lowercase, no trailing dot) matches.
    pub fn matches(&self, name: &str) -> bool {
        match self.0.strip_prefix('*') {
            Some(suffix) => name.ends_with(suffix),
            None => *self.0 == *name,
        }
    }
}

impl TryFrom<String> for HostPattern {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        HostPattern::parse(&s)
    }
}

impl From<HostPattern> for String {
    fn from(p: HostPattern) -> String {
        p.0.into()
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An IP network: `10.0.0.0/8`, `fd00::/8`; a bare address is a network
/// of one (`/32`, `/128`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IpNet {
    /// The network's first address (host bits cleared).
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    pub fn parse(text: &str) -> Result<IpNet, String> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let addr: IpAddr = addr
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not an IP address or CIDR such as 10.0.0.0/8"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => match p.trim().parse::<u8>() {
                Ok(n) if n <= max => n,
                _ => return Err(format!("{text:?}: the prefix length must be 0 to {max}")),
            },
        };
        let addr = match addr {
            IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask32(prefix))),
            IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask128(prefix))),
        };
        Ok(IpNet { addr, prefix })
    }

    /// Whether every address of `other` is in this network.
    pub fn covers(&self, other: &IpNet) -> bool {
        self.prefix <= other.prefix && self.contains(other.addr)
    }

    /// Whether `ip` is in the network (of the same family).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                u32::from(ip) & mask32(self.prefix) == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                u128::from(ip) & mask128(self.prefix) == u128::from(net)
            }
            _ => false,
        }
    }
}

fn mask32(prefix: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

fn mask128(prefix: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}

impl TryFrom<String> for IpNet {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        IpNet::parse(&s)
    }
}

impl From<IpNet> for String {
    fn from(n: IpNet) -> String {
        n.to_string()
    }
}

impl fmt::Display for IpNet {
    /// A network of one address as that address, as it was most likely
    /// written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one = if self.addr.is_ipv4() { 32 } else { 128 };
        if self.prefix == one {
            write!(f, "{}", self.addr)
        } else {
            write!(f, "{}/{}", self.addr, self.prefix)
        }
    }
}

/// The ranges a tenant may not reach unless an IP or CIDR rule names them:
/// what is not the public internet (IANA's special-purpose registries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecialRange {
    /// `0.0.0.0/8` ("this network": Linux connects 0.0.0.0 to itself), `::`.
    Unspecified,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// RFC 1918: `10/8`, `172.16/12`, `192.168/16`.
    Private,
    /// `169.254/16` (with the cloud metadata address 169.254.169.254),
    /// `fe80::/10`.
    LinkLocal,
    /// Carrier-grade NAT, `100.64/10`.
    Cgnat,
    /// `fc00::/7` (with AWS's metadata address fd00:ec2::254).
    UniqueLocal,
    /// `fec0::/10`, deprecated but still routed by some networks.
    SiteLocal,
    /// `::ffff:0:0/96` whose IPv4 address is not special itself (one that
    /// is gets that address's range).
    Ipv4Mapped,
    /// NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, IPv4-compatible `::/96`
    /// and 6to4 `2002::/16`: IPv6 that reaches an IPv4 address (one whose
    /// embedded IPv4 address is special gets that address's range).
    Ipv4Embedded,
    /// `224/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// `192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`,
    /// `3fff::/20`.
    Documentation,
    /// `198.18/15`, `2001:2::/48`.
    Benchmarking,
    /// Everything else reserved: `240/4`, `192.0.0/24`, `192.88.99/24`,
    /// `100::/64`, `2001::/23`, `5f00::/16`.
    Reserved,
}

impl SpecialRange {
    /// The range in words, for error messages.
    pub fn describe(self, ip: IpAddr) -> &'static str {
        match self {
            SpecialRange::LinkLocal if ip.to_canonical() == Ipv4Addr::new(169, 254, 169, 254) => {
                "link-local (the cloud metadata service)"
            }
            SpecialRange::Unspecified => "unspecified (this host)",
            SpecialRange::Loopback => "loopback",
            SpecialRange::Private => "private (RFC 1918)",
            SpecialRange::LinkLocal => "link-local",
            SpecialRange::Cgnat => "carrier-grade NAT (100.64.0.0/10)",
            SpecialRange::UniqueLocal => "unique-local (fc00::/7)",
            SpecialRange::SiteLocal => "site-local (fec0::/10)",
            SpecialRange::Ipv4Mapped => "IPv4-mapped (::ffff:0:0/96)",
            SpecialRange::Ipv4Embedded => "IPv6 carrying an IPv4 address (NAT64, 6to4, ::/96)",
            SpecialRange::Multicast => "multicast",
            SpecialRange::Broadcast => "broadcast",
            SpecialRange::Documentation => "a documentation network",
            SpecialRange::Benchmarking => "a benchmarking network",
            SpecialRange::Reserved => "reserved",
        }
    }
}

/// The special range `ip` is in, if any. An IPv6 address that carries an
/// IPv4 one (mapped, NAT64, 6to4, compatible) is classified by that IPv4
/// address first: `::ffff:10.0.0.1` is private, as 10.0.0.1 is.
pub fn special_range(ip: IpAddr) -> Option<SpecialRange> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<SpecialRange> {
    use SpecialRange::*;
    let o = ip.octets();
    Some(match o {
        [255, 255, 255, 255] => Broadcast,
        [0, ..] => Unspecified,
        [10, ..] => Private,
        [100, b, ..] if b & 0xc0 == 64 => Cgnat,
        [127, ..] => Loopback,
        [169, 254, ..] => LinkLocal,
        [172, b, ..] if b & 0xf0 == 16 => Private,
        [192, 0, 0, _] | [192, 88, 99, _] => Reserved,
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => Documentation,
        [192, 168, ..] => Private,
        [198, b, ..] if b & 0xfe == 18 => Benchmarking,
        [a, ..] if a & 0xf0 == 224 => Multicast,
        [a, ..] if a & 0xf0 == 240 => Reserved,
        _ => return None,
    })
}

fn special_v6(ip: Ipv6Addr) -> Option<SpecialRange> {
    use SpecialRange::*;
    let bits = u128::from(ip);
    let within = |net: u128, prefix: u8| bits & mask128(prefix) == net;
    // The IPv4 address in bits 96..128 (or 80..112 for 6to4).
    let low_v4 = Ipv4Addr::from(bits as u32);
    let embedded = |outer: SpecialRange, v4: Ipv4Addr| Some(special_v4(v4).unwrap_or(outer));
    if ip.is_unspecified() {
        return Some(Unspecified);
    }
    if ip.is_loopback() {
        return Some(Loopback);
    }
    if let Some(v4) = ip.to_ipv4_mapped() {
        return embedded(Ipv4Mapped, v4);
    }
    Some(match () {
        // IPv4-compatible (deprecated): ::a.b.c.d.
        _ if within(0, 96) => return embedded(Ipv4Embedded, low_v4),
        _ if within(0x0064_ff9b << 96, 96) => return embedded(Ipv4Embedded, low_v4),
        _ if within(0x0064_ff9b_0001 << 80, 48) => Ipv4Embedded,
        _ if within(0x2002 << 112, 16) => {
            return embedded(Ipv4Embedded, Ipv4Addr::from((bits >> 80) as u32));
        }
        _ if within(0x0100 << 112, 64) => Reserved,
        _ if within(0x2001_0db8 << 96, 32) || within(0x3fff << 112, 20) => Documentation,
        _ if within(0x2001_0002 << 96, 48) => Benchmarking,
        _ if within(0x2001 << 112, 23) => Reserved,
        _ if within(0x5f00 << 112, 16) => Reserved,
        _ if within(0xfc00 << 112, 7) => UniqueLocal,
        _ if within(0xfe80 << 112, 10) => LinkLocal,
        _ if within(0xfec0 << 112, 10) => SiteLocal,
        _ if within(0xff00 << 112, 8) => Multicast,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use SpecialRange::*;

    fn range(ip: &str) -> Option<SpecialRange> {
        special_range(ip.parse().expect("an IP address"))
    }

    /// Every range, its first and last address, and the public
    /// addresses just outside it.
    #[test]
    fn every_special_range_is_classified() {
        for (ip, want) in [
            ("0.0.0.0", Some(Unspecified)),
            ("0.255.255.255", Some(Unspecified)),
            ("1.0.0.0", None),
            ("9.255.255.255", None),
            ("10.0.0.0", Some(Private)),
            ("10.255.255.255", Some(Private)),
            ("11.0.0.0", None),
            ("100.63.255.255", None),
            ("100.64.0.0", Some(Cgnat)),
            ("100.127.255.255", Some(Cgnat)),
            ("100.128.0.0", None),
            ("126.255.255.255", None),
            ("127.0.0.1", Some(Loopback)),
            ("127.255.255.255", Some(Loopback)),
            ("128.0.0.0", None),
            ("169.253.255.255", None),
            ("169.254.0.0", Some(LinkLocal)),
            ("169.254.169.254", Some(LinkLocal)),
            ("169.254.255.255", Some(LinkLocal)),
            ("169.255.0.0", None),
            ("172.15.255.255", None),
            ("172.16.0.0", Some(Private)),
            ("172.31.255.255", Some(Private)),
            ("172.32.0.0", None),
            ("192.0.0.8", Some(Reserved)),
            ("192.0.1.0", None),
            ("192.0.2.1", Some(Documentation)),
            ("192.88.99.1", Some(Reserved)),
            ("192.167.255.255", None),
            ("192.168.0.0", Some(Private)),
            ("192.168.255.255", Some(Private)),
            ("192.169.0.0", None),
            ("198.17.255.255", None),
            ("198.18.0.0", Some(Benchmarking)),
            ("198.19.255.255", Some(Benchmarking)),
            ("198.20.0.0", None),
            ("198.51.100.7", Some(Documentation)),
            ("203.0.113.255", Some(Documentation)),
            ("203.0.114.0", None),
            ("8.8.8.8", None),
            ("223.255.255.255", None),
            ("224.0.0.1", Some(Multicast)),
            ("239.255.255.255", Some(Multicast)),
            ("240.0.0.0", Some(Reserved)),
            ("255.255.255.254", Some(Reserved)),
            ("255.255.255.255", Some(Broadcast)),
            // IPv6.
            ("::", Some(Unspecified)),
            ("::1", Some(Loopback)),
            ("::2", Some(Unspecified)),
            ("::8.8.8.8", Some(Ipv4Embedded)),
            ("::10.0.0.1", Some(Private)),
            ("::ffff:8.8.8.8", Some(Ipv4Mapped)),
            ("::ffff:10.0.0.1", Some(Private)),
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:169.254.169.254", Some(LinkLocal)),
            ("::ffff:100.64.0.1", Some(Cgnat)),
            ("::ffff:0.0.0.0", Some(Unspecified)),
            ("64:ff9b::8.8.8.8", Some(Ipv4Embedded)),
            ("64:ff9b::192.168.1.1", Some(Private)),
            ("64:ff9b:1::1", Some(Ipv4Embedded)),
            ("2002:0808:0808::1", Some(Ipv4Embedded)),
            ("2002:a00:1::1", Some(Private)),
            ("100::1", Some(Reserved)),
            ("100:0:0:1::", None),
            ("2001::1", Some(Reserved)),
            ("2001:1ff:ffff::1", Some(Reserved)),
            ("2001:200::1", None),
            ("2001:2::1", Some(Benchmarking)),
            ("2001:db8::1", Some(Documentation)),
            ("2001:db9::1", None),
            ("3fff:fff::1", Some(Documentation)),
            ("3fff:1000::1", None),
            ("5f00::1", Some(Reserved)),
            ("2606:4700:4700::1111", None),
            ("fbff:ffff::1", None),
            ("fc00::1", Some(UniqueLocal)),
            ("fd00:ec2::254", Some(UniqueLocal)),
            ("fdff:ffff::1", Some(UniqueLocal)),
            ("fe7f:ffff::1", None),
            ("fe80::1", Some(LinkLocal)),
            ("febf:ffff::1", Some(LinkLocal)),
            ("fec0::1", Some(SiteLocal)),
            ("feff:ffff::1", Some(SiteLocal)),
            ("ff00::1", Some(Multicast)),
            ("ff02::1", Some(Multicast)),
        ] {
            assert_eq!(range(ip), want, "{ip}");
        }
        let metadata: IpAddr = "169.254.169.254".parse().unwrap();
        assert_eq!(
            LinkLocal.describe(metadata),
            "link-local (the cloud metadata service)"
        );
    }

    fn rules(list: &[&str]) -> Option<Vec<AllowRule>> {
        Some(list.iter().map(|r| AllowRule::parse(r).unwrap()).collect())
    }

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    /// Whether `host` on `port`, resolving to `to`, may be connected to.
    fn verdict(p: &EgressPolicy, host: &str, to: &str) -> Result<(), ErrorCode> {
        let to = addr(to);
        let name = p.check_name(host, to.port()).map_err(|e| e.code)?;
        p.check_addr(host, to, &name).map_err(|e| e.code)
    }

    const IP: Result<(), ErrorCode> = Err(ErrorCode::BlacklistedIp);
    const NAME: Result<(), ErrorCode> = Err(ErrorCode::BlockedHostname);

    #[test]
    fn a_tenant_reaches_only_its_allowlist_and_never_special_ranges_by_name() {
        let p = EgressPolicy::tenant(rules(&[
            "127.0.0.1:8080",
            "10.1.0.0/16",
            "[::1]:9000",
            "*.example.com:443",
            "api.internal:*",
        ]));
        assert_eq!(verdict(&p, "127.0.0.1", "127.0.0.1:8080"), Ok(()));
        assert_eq!(verdict(&p, "127.0.0.1", "127.0.0.1:8081"), IP);
        assert_eq!(verdict(&p, "127.0.0.2", "127.0.0.2:8080"), IP);
        assert_eq!(verdict(&p, "10.1.2.3", "10.1.2.3:5432"), Ok(()));
        assert_eq!(
            verdict(&p, "::ffff:10.1.2.3", "[::ffff:10.1.2.3]:1"),
            Ok(())
        );
        assert_eq!(verdict(&p, "10.2.0.1", "10.2.0.1:80"), IP);
        assert_eq!(verdict(&p, "::1", "[::1]:9000"), Ok(()));
        assert_eq!(verdict(&p, "::1", "[::1]:9001"), IP);
        // A name allowed by a hostname rule, resolving to a public address.
        assert_eq!(verdict(&p, "www.example.com", "93.184.215.14:443"), Ok(()));
        assert_eq!(verdict(&p, "WWW.Example.COM.", "93.184.215.14:443"), Ok(()));
        assert_eq!(verdict(&p, "api.internal", "198.41.0.4:8443"), Ok(()));
        // The same names resolving to special ranges: DNS rebinding.
        assert_eq!(verdict(&p, "www.example.com", "169.254.169.254:443"), IP);
        assert_eq!(verdict(&p, "www.example.com", "127.0.0.1:443"), IP);
        assert_eq!(verdict(&p, "api.internal", "[fd00::1]:80"), IP);
        assert_eq!(verdict(&p, "api.internal", "[::ffff:192.168.0.1]:80"), IP);
        // ... unless an address rule covers the address itself.
        assert_eq!(verdict(&p, "api.internal", "10.1.0.9:80"), Ok(()));
        // Not `example.com` itself, not on another port.
        assert_eq!(verdict(&p, "example.com", "93.184.215.14:443"), IP);
        assert_eq!(verdict(&p, "www.example.com", "93.184.215.14:80"), IP);
        // A public address no rule names.
        assert_eq!(verdict(&p, "8.8.8.8", "8.8.8.8:53"), IP);
        let e = p
            .check_addr(
                "evil.example.com",
                addr("169.254.169.254:443"),
                &NameCheck {
                    allowed_by_name: true,
                    also: None,
                },
            )
            .unwrap_err();
        assert!(e.message.contains("cloud metadata"), "{e}");
        assert!(e.message.contains("evil.example.com resolved to it"), "{e}");
    }

    #[test]
    fn a_policy_with_another_inside_passes_only_what_both_allow() {
        // A tenant allowing two loopback ports and a name, a plugin
        // declaring one of the ports and another name.
        let tenant =
            EgressPolicy::tenant(rules(&["127.0.0.1:8080", "127.0.0.1:8081", "api.test:443"]));
        let plugin = EgressPolicy {
            allow: rules(&["127.0.0.1:8081", "other.test:443"]),
            deny_special_ranges: false,
            ..EgressPolicy::default()
        };
        let p = tenant.and_also(plugin);
        assert_eq!(verdict(&p, "127.0.0.1", "127.0.0.1:8081"), Ok(()));
        // The tenant's, not the plugin's: refused by the plugin's list.
        assert_eq!(verdict(&p, "127.0.0.1", "127.0.0.1:8080"), IP);
        assert_eq!(verdict(&p, "api.test", "93.184.215.14:443"), NAME);
        // The plugin's, not the tenant's.
        assert_eq!(verdict(&p, "other.test", "93.184.215.14:443"), NAME);
        // The plugin's loopback rule does not open the tenant's special
        // ranges.
        let p = EgressPolicy::tenant(None).and_also(EgressPolicy {
            allow: rules(&["127.0.0.1:8081"]),
            deny_special_ranges: false,
            ..EgressPolicy::default()
        });
        assert_eq!(verdict(&p, "127.0.0.1", "127.0.0.1:8081"), IP);
        assert!(!p.is_open());
        // A second one inside is passed as well as the first.
        let open = EgressPolicy::default()
            .and_also(EgressPolicy {
                allow: rules(&["127.0.0.1:1"]),
                ..EgressPolicy::default()
            })
            .and_also(EgressPolicy {
                allow: rules(&["127.0.0.1:2"]),
                ..EgressPolicy::default()
            });
        assert_eq!(verdict(&open, "127.0.0.1", "127.0.0.1:1"), IP);
        assert_eq!(verdict(&open, "127.0.0.1", "127.0.0.1:2"), IP);
    }

    #[test]
    fn names_no_rule_could_allow_are_refused_before_their_lookup() {
        // Only hostname rules: any other name is refused by name.
        let p = EgressPolicy::tenant(rules(&["*.example.com:443"]));
        let e = p.check_name("other.test", 443).unwrap_err();
        assert_eq!(e.code, ErrorCode::BlockedHostname);
        assert!(
            e.message
                .contains("other.test:443 is not in the egress allowlist"),
            "{e}"
        );
        assert_eq!(
            p.check_name("::1", 443).unwrap_err().code,
            ErrorCode::BlacklistedIp
        );
        // With an address rule for the port, the lookup decides.
        let p = EgressPolicy::tenant(rules(&["10.0.0.0/8:5432"]));
        assert_eq!(
            p.check_name("db.internal", 80).unwrap_err().code,
            ErrorCode::BlockedHostname
        );
        assert_eq!(
            p.check_name("db.internal", 5432),
            Ok(NameCheck {
                allowed_by_name: false,
                also: None,
            })
        );
        assert_eq!(verdict(&p, "db.internal", "10.3.0.1:5432"), Ok(()));
        assert_eq!(verdict(&p, "db.internal", "11.3.0.1:5432"), IP);
    }

    #[test]
    fn a_tenant_without_allowlist_reaches_the_public_internet_only() {
        let p = EgressPolicy::tenant(None);
        assert_eq!(verdict(&p, "example.com", "93.184.215.14:80"), Ok(()));
        assert_eq!(verdict(&p, "2606:4700::1", "[2606:4700::1]:443"), Ok(()));
        for special in [
            "127.0.0.1:80",
            "169.254.169.254:80",
            "10.0.0.1:80",
            "100.64.0.1:80",
            "[fc00::1]:80",
            "[::ffff:10.0.0.1]:80",
            "[::ffff:127.0.0.1]:80",
            "[64:ff9b::a9fe:a9fe]:80",
            "0.0.0.0:80",
            "[::]:80",
            "255.255.255.255:80",
            "224.0.0.1:80",
        ] {
            assert_eq!(verdict(&p, "rebind.test", special), IP, "{special}");
        }
    }

    #[test]
    fn k6_blocks_work_without_a_tenant_and_win_over_the_allowlist() {
        let mut p = EgressPolicy {
            blacklist_ips: vec![IpNet::parse("10.0.0.0/8").unwrap()],
            block_hostnames: vec![HostPattern::parse("*.internal").unwrap()],
            ..EgressPolicy::default()
        };
        assert!(!p.is_open() && EgressPolicy::default().is_open());
        assert_eq!(verdict(&p, "127.0.0.1", "127.0.0.1:80"), Ok(()));
        assert_eq!(verdict(&p, "10.9.9.9", "10.9.9.9:80"), IP);
        assert_eq!(verdict(&p, "::ffff:10.9.9.9", "[::ffff:10.9.9.9]:80"), IP);
        assert_eq!(verdict(&p, "db.internal", "127.0.0.1:80"), NAME);
        assert_eq!(verdict(&p, "DB.Internal.", "127.0.0.1:80"), NAME);
        assert_eq!(verdict(&p, "internal", "127.0.0.1:80"), Ok(()));
        // Narrowed by more blocks; an allow rule does not unblock them.
        p.allow = rules(&["10.0.0.0/8", "*.internal"]);
        p.narrow(&[IpNet::parse("::1").unwrap()], &[]);
        assert_eq!(verdict(&p, "10.9.9.9", "10.9.9.9:80"), IP);
        assert_eq!(verdict(&p, "db.internal", "10.0.0.1:80"), NAME);
        assert_eq!(verdict(&p, "::1", "[::1]:80"), IP);
        let e = p.check_name("db.internal", 80).unwrap_err();
        assert_eq!(
            e.message,
            "hostname is blocked: db.internal matches blockHostnames pattern *.internal"
        );
    }

    /// k6's own cases (lib/types/hostnametrie_test.go) and its syntax.
    #[test]
    fn hostname_patterns_follow_k6() {
        let all: Vec<HostPattern> = ["sub.test.k6.io", "test.k6.io", "*valid.pattern"]
            .iter()
            .map(|p| HostPattern::parse(p).unwrap())
            .collect();
        let hit = |host: &str| all.iter().any(|p| p.matches(&normalize(host)));
        for (host, want) in [
            ("K6.Io", false),
            ("tEsT.k6.Io", true),
            ("sub.test.k6.io", true),
            ("sub.sub.test.k6.io", false),
            ("blocked.valId.paTtern", true),
            ("valId.paTtern", true),
            ("example.test.k6.io", false),
        ] {
            assert_eq!(hit(host), want, "{host}");
        }
        let star = HostPattern::parse("*.example.com").unwrap();
        assert!(star.matches("a.b.example.com") && !star.matches("example.com"));
        assert!(!star.matches("badexample.com"));
        assert!(HostPattern::parse("*").unwrap().matches("anything.at.all"));
        for bad in [
            "inval*d.pattern",
            "a..b",
            "-a.com",
            "a-.com",
            "a_b.com",
            "",
            "**.a",
        ] {
            assert!(HostPattern::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rules_and_networks_parse_and_print_back() {
        for (text, printed) in [
            ("127.0.0.1:8080", "127.0.0.1:8080"),
            ("10.1.0.0/16", "10.1.0.0/16:*"),
            ("10.1.2.3/16:443", "10.1.0.0/16:443"),
            ("[::1]:9000", "[::1]:9000"),
            ("[fd00::/8]:*", "[fd00::/8]:*"),
            ("fd00::/8", "[fd00::/8]:*"),
            ("::1", "[::1]:*"),
            ("*.Example.com:443", "*.example.com:443"),
            ("api.internal:*", "api.internal:*"),
            ("api.internal", "api.internal:*"),
        ] {
            let rule = AllowRule::parse(text).unwrap();
            assert_eq!(rule.to_string(), printed, "{text}");
            assert_eq!(AllowRule::parse(printed).unwrap(), rule, "{printed}");
        }
        for bad in [
            "",
            ":80",
            "host:0",
            "host:99999",
            "host:http",
            "10.0.0.0/33",
            "[::1",
            "[::1]x",
            "bad_name:80",
        ] {
            assert!(AllowRule::parse(bad).is_err(), "{bad:?}");
        }
        let net = IpNet::parse("0.0.0.0/0").unwrap();
        assert!(net.contains("8.8.8.8".parse().unwrap()));
        assert!(!net.contains("::1".parse().unwrap()));
        assert!(
            IpNet::parse("::/0")
                .unwrap()
                .contains("::1".parse().unwrap())
        );
        assert!(IpNet::parse("fe80::/129").is_err());
    }

    #[test]
    fn policies_read_and_write_camel_case_json() {
        let p: EgressPolicy = serde_json::from_str(
            r#"{"allow": ["127.0.0.1:8080", "10.1.0.0/16", "[::1]:9000", "*.example.com:443", "api.internal:*"],
                "blockHostnames": ["*.corp"], "blacklistIPs": ["192.0.2.0/24"]}"#,
        )
        .unwrap();
        assert!(p.deny_special_ranges, "a policy from JSON is a tenant's");
        assert_eq!(p.allow.as_ref().map(Vec::len), Some(5));
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["blacklistIPs"][0], "192.0.2.0/24");
        assert_eq!(json["blockHostnames"][0], "*.corp");
        assert_eq!(serde_json::from_value::<EgressPolicy>(json).unwrap(), p);
        let open: EgressPolicy = serde_json::from_str(r#"{"denySpecialRanges": false}"#).unwrap();
        assert!(open.is_open());
        for bad in [
            r#"{"allow": ["10.0.0.0/99"]}"#,
            r#"{"blockHostnames": ["a*b"]}"#,
            r#"{"allowed": []}"#,
        ] {
            assert!(serde_json::from_str::<EgressPolicy>(bad).is_err(), "{bad}");
        }
    }
}

/// The policy in the client, against servers on loopback only: a refused
/// request fails with its code and its server never sees a connection.
#[cfg(test)]
mod on_loopback {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::{BodyPool, Client, ClientConfig, RequestSpec, VuConnections};

    /// A server on `ip` (a loopback address) answering every request with
    /// `reply`; with the count of connections it accepted.
    async fn counting(ip: &str, reply: String) -> (SocketAddr, Arc<AtomicUsize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        assert!(addr.ip().is_loopback());
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let reply = reply.clone();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                            match sock.read(&mut buf).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => seen.extend_from_slice(&buf[..n]),
                            }
                        }
                        seen.clear();
                        if sock.write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (addr, accepted)
    }

    fn ok() -> String {
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".to_owned()
    }

    fn client(policy: EgressPolicy) -> Client {
        let config = ClientConfig {
            egress: Some(Arc::new(policy)),
            ..ClientConfig::default()
        };
        Client::new(config, BodyPool::new(4)).unwrap()
    }

    fn get(url: String) -> RequestSpec {
        RequestSpec {
            method: "GET".into(),
            url,
            ..RequestSpec::default()
        }
    }

    #[tokio::test]
    async fn a_tenant_reaches_its_allowed_port_and_nothing_else_on_loopback() {
        let (a, a_seen) = counting("127.0.0.1", ok()).await;
        let (b, b_seen) = counting("127.0.0.1", ok()).await;
        let (c, c_seen) = counting("127.0.0.2", ok()).await;
        // The documentation network (any port) is never connected to:
        // nothing resolves there. With it, port B passes the name check
        // and is refused on its address.
        let allow = [format!("127.0.0.1:{}", a.port()), "192.0.2.0/24".to_owned()]
            .iter()
            .map(|r| AllowRule::parse(r).unwrap())
            .collect();
        let client = client(EgressPolicy::tenant(Some(allow)));
        let conns = VuConnections::default();
        let r = client.send(&conns, get(format!("http://{a}/"))).await;
        assert_eq!((r.status, r.error_code()), (200, 0), "{:?}", r.error);
        for url in [
            format!("http://{b}/"),
            format!("http://{c}/"),
            // The allowed address, by a name: loopback is only reached by
            // an address rule, and none covers port B.
            format!("http://localhost:{}/", b.port()),
        ] {
            let r = client.send(&conns, get(url.clone())).await;
            assert_eq!(r.status, 0, "{url}");
            assert!(
                matches!(r.error_code(), 1110 | 1111),
                "{url}: {:?}",
                r.error
            );
        }
        // By name to the allowed port: the lookup's loopback answers are
        // judged by the address rule, so 127.0.0.1 goes and ::1 does not.
        let r = client
            .send(&conns, get(format!("http://localhost:{}/", a.port())))
            .await;
        assert_eq!(r.status, 200, "{:?}", r.error);
        let r = client.send(&conns, get(format!("http://{b}/"))).await;
        assert_eq!(r.error_code(), ErrorCode::BlacklistedIp as u32);
        let message = &r.error.as_ref().unwrap().message;
        assert!(
            message.contains("127.0.0.1 is loopback and no IP or CIDR rule"),
            "{message}"
        );
        assert_eq!(a_seen.load(Ordering::SeqCst), 2);
        assert_eq!(b_seen.load(Ordering::SeqCst), 0);
        assert_eq!(c_seen.load(Ordering::SeqCst), 0);
    }

    /// A redirect from an allowed server to a denied one fails at that
    /// hop, whose server sees nothing; the redirect itself is kept.
    #[tokio::test]
    async fn a_redirect_to_a_denied_port_fails_at_that_hop() {
        let (denied, denied_seen) = counting("127.0.0.1", ok()).await;
        let (other, other_seen) = counting("127.0.0.2", ok()).await;
        let redirect = |to: SocketAddr| {
            format!("HTTP/1.1 302 Found\r\nlocation: http://{to}/x\r\ncontent-length: 0\r\n\r\n")
        };
        let (a, a_seen) = counting("127.0.0.1", redirect(denied)).await;
        let (a2, _) = counting("127.0.0.1", redirect(other)).await;
        let rules = [a, a2]
            .iter()
            .map(|s| AllowRule::parse(&s.to_string()).unwrap())
            .collect();
        let client = client(EgressPolicy::tenant(Some(rules)));
        let conns = VuConnections::default();
        for (from, to) in [(a, denied), (a2, other)] {
            let r = client.send(&conns, get(format!("http://{from}/"))).await;
            assert_eq!(
                r.error_code(),
                ErrorCode::BlacklistedIp as u32,
                "{:?}",
                r.error
            );
            assert_eq!(r.url, format!("http://{to}/x"));
            assert_eq!(r.hops.len(), 1);
            assert_eq!(r.hops[0].status, 302);
        }
        assert_eq!(a_seen.load(Ordering::SeqCst), 1);
        assert_eq!(denied_seen.load(Ordering::SeqCst), 0);
        assert_eq!(other_seen.load(Ordering::SeqCst), 0);
    }

    /// k6's options on a plain run: loopback is fine, the listed network
    /// and names are not, in a batch too.
    #[tokio::test]
    async fn blacklist_ips_and_block_hostnames_refuse_without_connecting() {
        let (a, a_seen) = counting("127.0.0.1", ok()).await;
        let (c, c_seen) = counting("127.0.0.2", ok()).await;
        let policy = EgressPolicy {
            blacklist_ips: vec![IpNet::parse("127.0.0.2/32").unwrap()],
            block_hostnames: vec![HostPattern::parse("localhost").unwrap()],
            ..EgressPolicy::default()
        };
        let client = Arc::new(client(policy));
        let conns = VuConnections::default();
        let got = client
            .batch(
                &conns,
                vec![
                    get(format!("http://{a}/")),
                    get(format!("http://{c}/")),
                    get(format!("http://LocalHost.:{}/", a.port())),
                ],
            )
            .await;
        let codes: Vec<_> = got.iter().map(|r| (r.status, r.error_code())).collect();
        assert_eq!(codes, [(200, 0), (0, 1110), (0, 1111)], "{got:?}");
        assert!(
            got[1]
                .error
                .as_ref()
                .unwrap()
                .message
                .starts_with("ip is blacklisted"),
            "{:?}",
            got[1].error
        );
        assert_eq!(a_seen.load(Ordering::SeqCst), 1);
        assert_eq!(c_seen.load(Ordering::SeqCst), 0);
    }
}
