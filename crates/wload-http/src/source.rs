//! Source addresses (k6's `--local-ips`): the local IPs connections are
//! made from, handed out to VUs in turn.
//!
//! Why: the kernel picks a connection's local port by walking the
//! ephemeral range from an offset and checking each candidate against
//! every connection (established or in TIME_WAIT) with the same source
//! address, destination address and port. It tries even ports first, so
//! past half the range (14,116 ports with Linux's default 32768-60999)
//! every `connect()` to that destination walks all the even ones before it
//! finds an odd one: measured at 19,000 idle VUs against one server, 85% of
//! the generator's core went to `__inet_hash_connect` for 12 s of a 20-s
//! run (docs/BENCHMARKS.md, "Session 9"). A second source address is a
//! second port space, so N source addresses give each about 1/N of the
//! connections; past 64,511 connections to one server address they are
//! the only way at all.
//!
//! A connection bound to a source address gets its port at `connect()`
//! time (`IP_BIND_ADDRESS_NO_PORT`), not at `bind()`: a port reserved at
//! bind time must be free for every destination, which would spend the
//! range about as fast as before.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use tokio::net::{TcpSocket, TcpStream};

/// The most addresses one range or CIDR may hold (k6 refuses IPv4 CIDRs
/// past /8 too): a typo like `/1` would otherwise hand out addresses no
/// interface has.
const MAX_BLOCK: u128 = 1 << 24;

/// The parsed `--local-ips` list: single addresses, inclusive ranges and
/// CIDR blocks, in the order given, kept as ranges (a /8 is 16 M
/// addresses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalIps {
    blocks: Vec<Block>,
    total: u128,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    first: u128,
    len: u128,
    v6: bool,
}

impl LocalIps {
    /// `10.0.0.1,10.0.0.2-10.0.0.9,10.1.0.0/24,fd00::1` (k6's syntax). Every
    /// bad entry is named in one message.
    pub fn parse(text: &str) -> Result<LocalIps, String> {
        let mut blocks = Vec::new();
        let mut problems = Vec::new();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            match block(entry) {
                Ok(b) => blocks.push(b),
                Err(e) => problems.push(e),
            }
        }
        if !problems.is_empty() {
            return Err(format!(
                "invalid local IPs: {} (expected addresses, ranges and CIDRs, e.g. \
                 127.0.0.2-127.0.0.9,10.0.0.0/24)",
                problems.join("; ")
            ));
        }
        if blocks.is_empty() {
            return Err("no local IPs given (e.g. 127.0.0.2-127.0.0.9)".into());
        }
        let total = blocks.iter().map(|b| b.len).sum();
        Ok(LocalIps { blocks, total })
    }

    /// How many addresses the list holds.
    pub fn len(&self) -> u128 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The address of VU `vu_id` (1-based, as the engine numbers VUs): the
    /// list's addresses in order, starting again after the last one.
    pub fn for_vu(&self, vu_id: u32) -> IpAddr {
        let mut n = u128::from(vu_id.saturating_sub(1)) % self.total;
        for b in &self.blocks {
            if n < b.len {
                return to_ip(b.first + n, b.v6);
            }
            n -= b.len;
        }
        unreachable!("n < total = the sum of the blocks' lengths")
    }

    /// The first and the last address of every block: what a start-up
    /// check binds to, to tell a typo or an address no interface has
    /// before any VU needs it.
    pub fn ends(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.blocks.iter().flat_map(|b| {
            let last = (b.len > 1).then(|| to_ip(b.first + b.len - 1, b.v6));
            std::iter::once(to_ip(b.first, b.v6)).chain(last)
        })
    }
}

fn block(entry: &str) -> Result<Block, String> {
    let bad = |why: &str| format!("{entry:?} {why}");
    if let Some((ip, bits)) = entry.split_once('/') {
        let ip: IpAddr = ip.trim().parse().map_err(|_| bad("is not an address"))?;
        let width = if ip.is_ipv6() { 128 } else { 32 };
        let bits: u32 = bits
            .trim()
            .parse()
            .ok()
            .filter(|b| *b <= width)
            .ok_or_else(|| bad(&format!("needs a prefix length of 0-{width}")))?;
        let host_bits = width - bits;
        if host_bits > MAX_BLOCK.trailing_zeros() {
            return Err(bad("holds more than 2^24 addresses"));
        }
        let len = 1u128 << host_bits;
        let first = from_ip(ip) & !(len - 1);
        return Ok(Block {
            first,
            len,
            v6: ip.is_ipv6(),
        });
    }
    if let Some((a, b)) = entry.split_once('-') {
        let a: IpAddr = a
            .trim()
            .parse()
            .map_err(|_| bad("starts with no address"))?;
        let b: IpAddr = b.trim().parse().map_err(|_| bad("ends with no address"))?;
        if a.is_ipv6() != b.is_ipv6() {
            return Err(bad("mixes IPv4 and IPv6"));
        }
        let (first, last) = (from_ip(a), from_ip(b));
        if last < first {
            return Err(bad("ends before it starts"));
        }
        let len = last - first + 1;
        if len > MAX_BLOCK {
            return Err(bad("holds more than 2^24 addresses"));
        }
        return Ok(Block {
            first,
            len,
            v6: a.is_ipv6(),
        });
    }
    let ip: IpAddr = entry.parse().map_err(|_| bad("is not an address"))?;
    Ok(Block {
        first: from_ip(ip),
        len: 1,
        v6: ip.is_ipv6(),
    })
}

fn from_ip(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

fn to_ip(n: u128, v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::from(n))
    } else {
        // A v4 block's addresses stay below 2^32 (checked when parsed:
        // ranges are between two v4 addresses, CIDRs are aligned).
        IpAddr::V4(Ipv4Addr::from(n as u32))
    }
}

/// Can a connection be made from `ip`? Binding a socket to it says so
/// without sending anything: the address must be one of this host's.
pub fn check_bindable(ip: IpAddr) -> io::Result<()> {
    let socket = socket_for(ip)?;
    socket.bind(SocketAddr::new(ip, 0))
}

fn socket_for(ip: IpAddr) -> io::Result<TcpSocket> {
    let socket = match ip {
        IpAddr::V4(_) => TcpSocket::new_v4()?,
        IpAddr::V6(_) => TcpSocket::new_v6()?,
    };
    no_port_at_bind(&socket)?;
    Ok(socket)
}

/// `IP_BIND_ADDRESS_NO_PORT`: leave the port to `connect()`, which may
/// reuse one that other destinations use (see the module's comment).
fn no_port_at_bind(socket: &TcpSocket) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor, an int option of the right size.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Connect to `addr` from `source` when given (and of the same family),
/// else from whatever address the kernel picks.
pub(crate) async fn connect(addr: SocketAddr, source: Option<IpAddr>) -> io::Result<TcpStream> {
    let Some(ip) = source else {
        return TcpStream::connect(addr).await;
    };
    if ip.is_ipv6() != addr.is_ipv6() {
        return Err(io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            format!("local IP {ip} cannot reach {addr} (another address family)"),
        ));
    }
    let socket = socket_for(ip)?;
    socket
        .bind(SocketAddr::new(ip, 0))
        .map_err(|e| io::Error::new(e.kind(), format!("binding to local IP {ip}: {e}")))?;
    socket.connect(addr).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(text: &str) -> LocalIps {
        LocalIps::parse(text).unwrap()
    }

    #[test]
    fn hands_out_addresses_in_order_and_wraps() {
        let list = ips("127.0.0.2-127.0.0.4, 10.0.0.9");
        assert_eq!(list.len(), 4);
        let got: Vec<String> = (1..=6).map(|vu| list.for_vu(vu).to_string()).collect();
        assert_eq!(
            got,
            [
                "127.0.0.2",
                "127.0.0.3",
                "127.0.0.4",
                "10.0.0.9",
                "127.0.0.2",
                "127.0.0.3"
            ]
        );
    }

    #[test]
    fn reads_cidrs_from_their_network_address() {
        let list = ips("10.1.2.77/30,fd00::/126");
        assert_eq!(list.len(), 8);
        assert_eq!(list.for_vu(1).to_string(), "10.1.2.76");
        assert_eq!(list.for_vu(4).to_string(), "10.1.2.79");
        assert_eq!(list.for_vu(5).to_string(), "fd00::");
        let ends: Vec<String> = list.ends().map(|ip| ip.to_string()).collect();
        assert_eq!(ends, ["10.1.2.76", "10.1.2.79", "fd00::", "fd00::3"]);
        assert_eq!(ips("127.0.0.1/32").len(), 1);
        assert_eq!(ips("10.0.0.0/8").len(), 1 << 24);
    }

    #[test]
    fn names_every_bad_entry() {
        let err =
            LocalIps::parse("10.0.0.1,10.0.0.9-10.0.0.2,nope,::1-10.0.0.1,10.0.0.0/7,1.2.3.4/33")
                .unwrap_err();
        for part in [
            "\"10.0.0.9-10.0.0.2\" ends before it starts",
            "\"nope\" is not an address",
            "\"::1-10.0.0.1\" mixes IPv4 and IPv6",
            "\"10.0.0.0/7\" holds more than 2^24 addresses",
            "\"1.2.3.4/33\" needs a prefix length of 0-32",
        ] {
            assert!(err.contains(part), "{part:?} missing from {err}");
        }
        assert!(LocalIps::parse(" , ").is_err());
        assert!(LocalIps::parse("10.0.0.0-11.0.0.1").is_err());
    }

    #[tokio::test]
    async fn connects_from_the_given_source() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        for source in ["127.0.0.5", "127.0.0.6"] {
            let ip: IpAddr = source.parse().unwrap();
            let stream = connect(addr, Some(ip)).await.unwrap();
            let (_, peer) = listener.accept().unwrap();
            assert_eq!(peer.ip(), ip);
            assert_eq!(stream.local_addr().unwrap().ip(), ip);
        }
        let plain = connect(addr, None).await.unwrap();
        assert_eq!(listener.accept().unwrap().1, plain.local_addr().unwrap());
    }

    #[tokio::test]
    async fn refuses_what_cannot_be_a_source() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let err = connect(addr, Some("::1".parse().unwrap()))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("another address family"), "{err}");
        // TEST-NET-1 is on no interface of this host; binding to it fails
        // without a packet sent.
        let foreign: IpAddr = "192.0.2.1".parse().unwrap();
        assert!(check_bindable(foreign).is_err());
        let err = connect(addr, Some(foreign)).await.unwrap_err();
        assert!(
            err.to_string().contains("binding to local IP 192.0.2.1"),
            "{err}"
        );
        assert!(check_bindable("127.0.0.9".parse().unwrap()).is_ok());
    }
}
