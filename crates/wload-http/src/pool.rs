//! Pooled body buffers.
//!
//! A response body is read into a buffer taken from a lock-free pool and
//! goes back when the guest drops the response, so a steady load reuses
//! the same few buffers instead of allocating per request. Oversized
//! buffers are not kept, so one huge response does not pin its memory,
//! and buffers the load stopped needing go back to the allocator: a burst
//! of responses held at once does not pin its buffers for the rest of
//! the run ([`Trim`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};

use crossbeam_queue::ArrayQueue;

use super::socket::now_ns;

/// Capacity of a new buffer when the body length is not known.
const DEFAULT_CAPACITY: usize = 1 << 10;
/// Buffers that grew beyond this are freed instead of pooled: big bodies
/// are rare enough that malloc serves them well, and pooling them would
/// pin their memory. The pool holds at most `max_buffers` × this.
const MAX_POOLED_CAPACITY: usize = 64 << 10;

/// Most bytes reserved before a body arrives.
const MAX_UPFRONT: usize = 16 << 20;

/// How often a pool looks at its idle buffers: every this many returns,
/// once at least [`TRIM_PERIOD_NS`] passed since it last did.
pub(crate) const TRIM_EVERY: u32 = 256;
/// The shortest time a buffer must have been idle to be freed.
pub(crate) const TRIM_PERIOD_NS: u64 = 1_000_000_000;

#[derive(Debug)]
pub struct BodyPool {
    free: ArrayQueue<Vec<u8>>,
    trim: Trim,
}

/// When to give idle buffers back: the fewest buffers that were idle at
/// once during a period were not needed all that period, so that many
/// are freed at its end (a low-water mark, as allocators trim their
/// caches). A steady load keeps what it uses; a pool that sees no traffic
/// at all keeps what it has, which is no more than it held at its busiest.
#[derive(Debug)]
struct Trim {
    /// The fewest idle buffers seen since the last trim (updated without
    /// a read-modify-write: a race only makes the mark a little off).
    low: AtomicUsize,
    /// Returns since the pool was made, to look at the clock rarely.
    returns: AtomicU32,
    /// `now_ns` of the last trim.
    at: AtomicU64,
}

impl Trim {
    fn new() -> Trim {
        Trim {
            low: AtomicUsize::new(0),
            returns: AtomicU32::new(0),
            at: AtomicU64::new(now_ns()),
        }
    }

    /// Note that `idle` buffers are idle now.
    #[inline]
    fn saw(&self, idle: usize) {
        if idle < self.low.load(Relaxed) {
            self.low.store(idle, Relaxed);
        }
    }

    /// On a return: how many idle buffers to free, when a period is over.
    #[inline]
    fn due(&self, idle: usize) -> usize {
        if !self
            .returns
            .fetch_add(1, Relaxed)
            .is_multiple_of(TRIM_EVERY)
        {
            return 0;
        }
        self.due_at(idle, now_ns())
    }

    #[cold]
    fn due_at(&self, idle: usize, now: u64) -> usize {
        let at = self.at.load(Relaxed);
        if now.saturating_sub(at) < TRIM_PERIOD_NS
            || self.at.compare_exchange(at, now, Relaxed, Relaxed).is_err()
        {
            return 0;
        }
        let unused = self.low.swap(idle, Relaxed).min(idle);
        self.low.store(idle - unused, Relaxed);
        unused
    }
}

impl BodyPool {
    /// A pool keeping at most `max_buffers` idle buffers.
    pub fn new(max_buffers: usize) -> Arc<BodyPool> {
        Arc::new(BodyPool {
            free: ArrayQueue::new(max_buffers.max(1)),
            trim: Trim::new(),
        })
    }

    /// A buffer for a body of `expected` bytes, if known.
    pub fn take(self: &Arc<Self>, expected: Option<usize>) -> PooledBuf {
        // A length from the server is a claim, not a fact: past a bound
        // the buffer grows with the bytes that actually arrive.
        let want = expected.unwrap_or(DEFAULT_CAPACITY).min(MAX_UPFRONT);
        let mut buf = match self.free.pop() {
            Some(buf) => {
                self.trim.saw(self.free.len());
                buf
            }
            // Large bodies skip the pool entirely.
            None => Vec::with_capacity(want.min(MAX_POOLED_CAPACITY * 16)),
        };
        if buf.capacity() < want {
            buf.reserve_exact(want);
        }
        PooledBuf {
            buf,
            pool: Arc::clone(self),
        }
    }

    /// Idle buffers in the pool.
    pub fn idle(&self) -> usize {
        self.free.len()
    }
}

/// A body buffer that returns to its pool when dropped.
#[derive(Debug)]
pub struct PooledBuf {
    buf: Vec<u8>,
    pool: Arc<BodyPool>,
}

impl PooledBuf {
    pub fn extend(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The buffer itself, for reads straight into its free space.
    pub(super) fn vec_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.buf
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.buf);
        if buf.capacity() <= MAX_POOLED_CAPACITY {
            buf.clear();
            // A full pool just frees the buffer.
            let _ = self.pool.free.push(buf);
        }
        let pool = &self.pool;
        for _ in 0..pool.trim.due(pool.free.len()) {
            drop(pool.free.pop());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_return_to_the_pool_empty() {
        let pool = BodyPool::new(4);
        let mut a = pool.take(None);
        a.extend(b"hello");
        let cap = a.buf.capacity();
        drop(a);
        assert_eq!(pool.idle(), 1);
        let b = pool.take(Some(3));
        assert!(b.is_empty());
        assert_eq!(b.buf.capacity(), cap);
        assert_eq!(pool.idle(), 0);
    }

    #[test]
    fn a_claimed_length_reserves_at_most_the_bound() {
        let pool = BodyPool::new(4);
        let b = pool.take(Some(usize::MAX / 2));
        assert!(b.buf.capacity() <= MAX_UPFRONT);
    }

    /// Buffers idle for a whole period are freed; as many as were in use
    /// at the busiest moment of it stay.
    #[test]
    fn buffers_idle_for_a_period_are_freed() {
        let pool = BodyPool::new(16);
        let held: Vec<_> = (0..10).map(|_| pool.take(Some(100))).collect();
        drop(held);
        assert_eq!(pool.idle(), 10);
        let start = pool.trim.at.load(Relaxed);
        // The mark starts at 0: the first period frees nothing it saw.
        assert_eq!(pool.trim.due_at(10, start + TRIM_PERIOD_NS), 0);
        // Then a period in which at most 3 were taken at once.
        let three: Vec<_> = (0..3).map(|_| pool.take(Some(100))).collect();
        drop(three);
        assert_eq!(
            pool.trim.due_at(10, start + TRIM_PERIOD_NS + 1),
            0,
            "too soon"
        );
        assert_eq!(pool.trim.due_at(10, start + 2 * TRIM_PERIOD_NS), 7);
        // A period with no traffic at all frees the rest.
        assert_eq!(pool.trim.due_at(3, start + 3 * TRIM_PERIOD_NS), 3);
        // Returns trim by themselves: a return that falls on a check, a
        // period after the last trim, frees the buffer that sat idle.
        let pool = BodyPool::new(4);
        drop(pool.take(None));
        assert_eq!(pool.idle(), 1);
        pool.trim.at.store(0, Relaxed);
        pool.trim.low.store(1, Relaxed);
        pool.trim.returns.store(TRIM_EVERY * 7, Relaxed);
        drop(PooledBuf {
            buf: Vec::with_capacity(8),
            pool: pool.clone(),
        });
        assert_eq!(pool.idle(), 1);
        assert_eq!(pool.trim.low.load(Relaxed), 1);
    }

    #[test]
    fn oversized_buffers_are_freed() {
        let pool = BodyPool::new(4);
        let mut a = pool.take(Some(MAX_POOLED_CAPACITY + 1));
        a.extend(&vec![0u8; MAX_POOLED_CAPACITY + 1]);
        drop(a);
        assert_eq!(pool.idle(), 0);
    }
}
