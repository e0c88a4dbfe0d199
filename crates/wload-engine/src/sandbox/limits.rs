//! Limits: the per-instance memory limiter, and the process limits (open
//! files, memory mappings) that thousands of VUs run into before RAM.

use anyhow::{Result, bail};

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
/// is in the way and how to raise it. Warns when the VUs' connections to
/// one server port could exhaust the local port range.
pub fn check_process_limits(vus: u64) -> Result<()> {
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

    if let Some((low, high)) = local_port_range()
        && vus > high.saturating_sub(low) + 1
    {
        eprintln!(
            "wload: warning: {vus} VUs may open more connections to one server address and port \
             than the local port range allows ({} ports: net.ipv4.ip_local_port_range = {low} {high}); \
             spread the target over several ports or addresses, or widen the range with \
             `sudo sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"`",
            high.saturating_sub(low) + 1
        );
    }
    Ok(())
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
