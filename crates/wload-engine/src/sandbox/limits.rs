//! Limits: the per-instance memory limiter, and the process limits (open
//! files, memory mappings) that thousands of VUs run into before RAM.

use anyhow::{Result, bail};
use wload_http::LocalIps;
use wload_http::source::check_bindable;

/// Caps an instance's memories and remembers that it did, so that the
/// trap that follows (a failed allocation aborts the guest) is reported as
/// "hit the memory limit" rather than "unreachable executed".
#[derive(Debug, Clone, Copy)]
pub struct MemoryLimiter {
    pub limit: u64,
    pub hit: bool,
}

impl MemoryLimiter {
    pub fn new(limit: u64) -> MemoryLimiter {
        MemoryLimiter { limit, hit: false }
    }
}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired as u64 > self.limit {
            self.hit = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(true)
    }
}

/// Memory mappings one VU slot needs (measured: `/proc/PID/maps` at
/// 10,000 VUs): two for its fiber stack (stack and guard), four for its
/// linear memory (the copy-on-write image, the rest of the accessible
/// pages split by the guest's stack, and the inaccessible reservation).
const MAPS_PER_VU: u64 = 6;
/// Mappings the rest of the process uses (code, heap arenas, threads).
const MAPS_BASE: u64 = 4096;
/// File descriptors besides the VUs' connections.
const FDS_BASE: u64 = 256;

/// Make sure the kernel lets `vus` VUs run: raise the open-file limit
/// (the soft limit to the hard one; the hard one too when allowed, as
/// root) and `vm.max_map_count` when allowed (root), else say which limit
/// is in the way and how to raise it. Checks that every `--local-ips`
/// block's ends are addresses of this host. Warns when the VUs'
/// connections to one server port would slow the kernel's choice of local
/// ports down, or run out of them.
pub fn check_process_limits(vus: u64, local_ips: Option<&LocalIps>) -> Result<()> {
    let want_fds = vus + FDS_BASE;
    let (soft, hard) = nofile()?;
    if soft < want_fds {
        // Raising the hard limit needs CAP_SYS_RESOURCE and stays under
        // fs.nr_open; when refused, the soft limit goes as far as it may.
        let ceiling = read_u64("/proc/sys/fs/nr_open").unwrap_or(hard);
        if hard < want_fds && want_fds <= ceiling {
            set_nofile(want_fds, want_fds);
        }
        let (soft, hard) = nofile()?;
        if soft < want_fds {
            set_nofile(hard.min(want_fds), hard);
        }
        let (now, hard) = nofile()?;
        if now < want_fds {
            bail!(
                "{vus} VUs need about {want_fds} open files (a connection each), but the open-file \
                 limit is {now} and this process may not raise its hard limit ({hard}); raise it \
                 before starting wload: `ulimit -Hn {want_fds}; ulimit -n {want_fds}` as root \
                 (LimitNOFILE={want_fds} for a systemd service, `--ulimit nofile={want_fds}` for a \
                 container)"
            );
        }
    }

    let want_maps = vus * MAPS_PER_VU + MAPS_BASE;
    let path = "/proc/sys/vm/max_map_count";
    if let Some(current) = read_u64(path)
        && current < want_maps
    {
        let raised = want_maps.next_power_of_two();
        if std::fs::write(path, raised.to_string()).is_err() {
            bail!(
                "{vus} VUs need about {want_maps} memory mappings, but vm.max_map_count is {current}; \
                 raise it with `sudo sysctl -w vm.max_map_count={raised}`"
            );
        }
        eprintln!("wload: raised vm.max_map_count from {current} to {raised} for {vus} VUs");
    }

    if let Some(ips) = local_ips {
        check_local_ips(ips)?;
    }
    if let Some(range) = local_port_range()
        && let Some(warning) = port_range_warning(vus, local_ips.map_or(1, LocalIps::len), range)
    {
        eprintln!("wload: warning: {warning}");
    }
    let tables = [
        (
            "net.netfilter.nf_conntrack_max",
            read_u64("/proc/sys/net/netfilter/nf_conntrack_count"),
            read_u64("/proc/sys/net/netfilter/nf_conntrack_max"),
            "the kernel drops their packets (\"nf_conntrack: table full\")",
        ),
        (
            "fs.file-max",
            file_nr(),
            read_u64("/proc/sys/fs/file-max"),
            "opening them fails with ENFILE",
        ),
    ];
    for (name, used, max, then) in tables {
        if let (Some(used), Some(max)) = (used, max)
            && let Some(warning) = system_table_warning(vus, name, used, max, then)
        {
            eprintln!("wload: warning: {warning}");
        }
    }
    Ok(())
}

/// What to tell a user whose `vus` connections would not fit in a
/// system-wide table `name` (`used` of `max` entries taken): connection
/// tracking, when netfilter tracks loopback or the target's traffic, and
/// the open files of all processes. Warned, not refused: whether the
/// VUs' connections are tracked at all depends on the firewall's rules.
fn system_table_warning(vus: u64, name: &str, used: u64, max: u64, then: &str) -> Option<String> {
    let free = max.saturating_sub(used);
    if vus <= free {
        return None;
    }
    let want = (used + vus + FDS_BASE).next_power_of_two();
    Some(format!(
        "{vus} VUs may open {vus} connections, but {name} has room for {free} more ({used} of \
         {max} in use); past it {then}: raise it with `sudo sysctl -w {name}={want}`"
    ))
}

/// Open files of the whole system (`fs.file-nr`'s first field).
fn file_nr() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/sys/fs/file-nr").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Bind to the first and last address of every block: an address this
/// host does not have would otherwise fail each of its VUs' requests.
fn check_local_ips(ips: &LocalIps) -> Result<()> {
    let missing: Vec<String> = ips
        .ends()
        .filter_map(|ip| check_bindable(ip).err().map(|e| format!("{ip} ({e})")))
        .collect();
    if !missing.is_empty() {
        bail!(
            "--local-ips: cannot connect from {}: each address must be configured on one of              this host's interfaces (`ip addr add ADDRESS/PREFIX dev IFACE`; all of 127.0.0.0/8              is on the loopback interface already)",
            missing.join(", ")
        );
    }
    Ok(())
}

/// What to tell a user whose `vus` VUs, spread over `sources` source
/// addresses, may hold more connections to one server address and port
/// than the port range `(low, high)` serves well. Linux tries even ports
/// first for `connect()`: past half the range, every connect walks all
/// the even ones (see `wload_http::source`), and past the whole range it
/// fails.
fn port_range_warning(vus: u64, sources: u128, (low, high): (u64, u64)) -> Option<String> {
    let ports = high.saturating_sub(low) + 1;
    let per_source = u128::from(vus).div_ceil(sources.max(1));
    if per_source <= u128::from(ports / 2) {
        return None;
    }
    let fails = if per_source > u128::from(ports) {
        "more than it holds, so connections will fail"
    } else {
        "more than half of it, past which every new connection costs the kernel a walk over \
         thousands of ports"
    };
    let sources_needed = u128::from(vus).div_ceil(u128::from(ports / 2).max(1));
    Some(format!(
        "{vus} VUs may hold up to {per_source} connections to one server address and port from \
         each source address, and the local port range has {ports} ports \
         (net.ipv4.ip_local_port_range = {low} {high}): {fails}; spread the VUs over {sources_needed} \
         or more source addresses with --local-ips (for a loopback target, e.g. \
         --local-ips 127.0.0.2-127.0.0.{}), or widen the range with \
         `sudo sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"`",
        (sources_needed + 1).min(254)
    ))
}

fn read_u64(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// `net.ipv4.ip_local_port_range`: the ports connections are made from.
fn local_port_range() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut parts = text.split_whitespace().map(|p| p.parse::<u64>().ok());
    Some((parts.next()??, parts.next()??))
}

fn nofile() -> Result<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        bail!(
            "cannot read the open-file limit: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok((lim.rlim_cur, lim.rlim_max))
}

fn set_nofile(soft: u64, hard: u64) {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit only reads the struct; failure leaves the limit as
    // it was, which the caller re-reads.
    unsafe {
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINUX_DEFAULT: (u64, u64) = (32768, 60999);

    #[test]
    fn warns_past_half_the_port_range_per_source() {
        assert_eq!(port_range_warning(14_000, 1, LINUX_DEFAULT), None);
        let slow = port_range_warning(19_000, 1, LINUX_DEFAULT).unwrap();
        assert!(slow.contains("more than half of it"), "{slow}");
        assert!(slow.contains("over 2 or more source addresses"), "{slow}");
        assert!(slow.contains("127.0.0.2-127.0.0.3"), "{slow}");
        let fails = port_range_warning(100_000, 1, LINUX_DEFAULT).unwrap();
        assert!(fails.contains("connections will fail"), "{fails}");
        assert!(fails.contains("over 8 or more"), "{fails}");
        assert_eq!(port_range_warning(100_000, 8, LINUX_DEFAULT), None);
        assert_eq!(port_range_warning(19_000, 1, (1024, 65535)), None);
    }

    #[test]
    fn warns_when_a_system_table_cannot_take_the_connections() {
        let name = "net.netfilter.nf_conntrack_max";
        assert_eq!(system_table_warning(100_000, name, 0, 262_144, "x"), None);
        let w = system_table_warning(100_000, name, 200_000, 262_144, "they drop").unwrap();
        assert!(
            w.contains("room for 62144 more (200000 of 262144 in use)"),
            "{w}"
        );
        assert!(w.contains("past it they drop"), "{w}");
        assert!(
            w.contains("sysctl -w net.netfilter.nf_conntrack_max=524288"),
            "{w}"
        );
    }

    #[test]
    fn names_local_ips_this_host_lacks() {
        let ips = LocalIps::parse("127.0.0.2-127.0.0.200").unwrap();
        assert!(check_local_ips(&ips).is_ok());
        // TEST-NET-1: on no interface here; only a bind is tried.
        let ips = LocalIps::parse("127.0.0.2,192.0.2.1-192.0.2.4").unwrap();
        let err = check_local_ips(&ips).unwrap_err().to_string();
        assert!(
            err.contains("192.0.2.1 (") && err.contains("192.0.2.4 ("),
            "{err}"
        );
        assert!(!err.contains("127.0.0.2"), "{err}");
    }
}
