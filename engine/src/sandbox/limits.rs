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

/// Memory mappings one VU slot may need: two for its fiber stack (stack
/// and guard), up to four for a copy-on-write memory.
const MAPS_PER_VU: u64 = 6;
/// Mappings the rest of the process uses (code, heap arenas, threads).
const MAPS_BASE: u64 = 4096;
/// File descriptors besides the VUs' connections.
const FDS_BASE: u64 = 256;

/// Make sure the kernel lets `vus` VUs run: raise the open-file soft limit
/// to the hard limit and `vm.max_map_count` when allowed (root), else say
/// which limit is in the way and how to raise it.
pub fn check_process_limits(vus: u64) -> Result<()> {
    let want_fds = vus + FDS_BASE;
    let (soft, hard) = nofile()?;
    if soft < want_fds {
        let target = hard.min(want_fds.max(soft));
        set_nofile(target, hard);
        let (now, _) = nofile()?;
        if now < want_fds {
            bail!(
                "{vus} VUs need about {want_fds} open files, but the limit is {now} (hard limit {hard}); \
                 raise it with `ulimit -n {want_fds}` (as root, or in /etc/security/limits.conf)"
            );
        }
    }

    let want_maps = vus * MAPS_PER_VU + MAPS_BASE;
    let path = "/proc/sys/vm/max_map_count";
    if let Ok(text) = std::fs::read_to_string(path) {
        let current: u64 = text.trim().parse().unwrap_or(u64::MAX);
        if current < want_maps {
            let raised = want_maps.next_power_of_two();
            if std::fs::write(path, raised.to_string()).is_err() {
                bail!(
                    "{vus} VUs need about {want_maps} memory mappings, but vm.max_map_count is {current}; \
                     raise it with `sudo sysctl -w vm.max_map_count={raised}`"
                );
            }
            eprintln!("wload: raised vm.max_map_count from {current} to {raised} for {vus} VUs");
        }
    }
    Ok(())
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
