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

/// Capacity of a new buffer when the body length is not known, and the
/// smallest buffer pooled.
const DEFAULT_CAPACITY: usize = 1 << 10;
/// Buffers that grew beyond this are freed instead of pooled: big bodies
/// are rare enough that malloc serves them well, and pooling them would
/// pin their memory. A class holds at most `max_buffers` × its size.
const MAX_POOLED_CAPACITY: usize = 64 << 10;
/// Pooled sizes by powers of two, [`DEFAULT_CAPACITY`] to
/// [`MAX_POOLED_CAPACITY`]: a buffer of class `c` holds at least
/// `DEFAULT_CAPACITY << c` bytes.
const CLASSES: usize =
    (MAX_POOLED_CAPACITY.trailing_zeros() - DEFAULT_CAPACITY.trailing_zeros()) as usize + 1;

/// Most bytes reserved before a body arrives.
const MAX_UPFRONT: usize = 16 << 20;

/// How often a pool looks at its idle buffers: every this many returns,
/// once at least [`TRIM_PERIOD_NS`] passed since it last did.
pub(crate) const TRIM_EVERY: u32 = 256;
/// The shortest time a buffer must have been idle to be freed.
pub(crate) const TRIM_PERIOD_NS: u64 = 1_000_000_000;

/// Idle buffers by size class, so that a body takes a buffer of about its
/// size: with one list for all sizes, a 5-byte body could take (and hold,
/// as long as the test holds the response) a 64 KiB buffer whose pages an
/// earlier body touched, and a 1 MB body took a small pooled buffer only
/// to reallocate it, leaving the pool to malloc a new small one in the
/// hole: the fragmentation that made the mixed test's heap grow through a
/// run (docs/BENCHMARKS.md, "Session 13").
#[derive(Debug)]
pub struct BodyPool {
    classes: [Class; CLASSES],
    /// The class the last body of unknown length ended in: the next one
    /// (the same resource again, as often as not) starts from a buffer of
    /// that size instead of growing a small one, so that grown buffers are
    /// reused rather than left idle in their class.
    unknown: AtomicUsize,
    trim: Trim,
}

#[derive(Debug)]
struct Class {
    free: ArrayQueue<Vec<u8>>,
    /// The fewest idle buffers seen since the last trim (updated without
    /// a read-modify-write: a race only makes the mark a little off).
    low: AtomicUsize,
}

impl Class {
    #[inline]
    fn pop(&self) -> Option<Vec<u8>> {
        let buf = self.free.pop()?;
        let idle = self.free.len();
        if idle < self.low.load(Relaxed) {
            self.low.store(idle, Relaxed);
        }
        Some(buf)
    }
}

/// When to give idle buffers back: the fewest buffers of a class that were
/// idle at once during a period were not needed all that period, so that
/// many are freed at its end (a low-water mark, as allocators trim their
/// caches). A steady load keeps what it uses; a pool that sees no traffic
/// at all keeps what it has, which is no more than it held at its busiest.
#[derive(Debug)]
struct Trim {
    /// Returns since the pool was made, to look at the clock rarely.
    returns: AtomicU32,
    /// `now_ns` of the last trim.
    at: AtomicU64,
}

impl Trim {
    fn new() -> Trim {
        Trim {
            returns: AtomicU32::new(0),
            at: AtomicU64::new(now_ns()),
        }
    }

    /// On a return: whether a period is over (for one caller only).
    #[inline]
    fn due(&self) -> bool {
        self.returns
            .fetch_add(1, Relaxed)
            .is_multiple_of(TRIM_EVERY)
            && self.due_at(now_ns())
    }

    #[cold]
    fn due_at(&self, now: u64) -> bool {
        let at = self.at.load(Relaxed);
        now.saturating_sub(at) >= TRIM_PERIOD_NS
            && self.at.compare_exchange(at, now, Relaxed, Relaxed).is_ok()
    }
}

/// The class whose buffers all hold `want` bytes (`want` ≤
/// [`MAX_POOLED_CAPACITY`]).
#[inline]
fn class_for(want: usize) -> usize {
    let size = want.max(DEFAULT_CAPACITY).next_power_of_two();
    (size.trailing_zeros() - DEFAULT_CAPACITY.trailing_zeros()) as usize
}

/// The class a buffer of `capacity` bytes is pooled in, if any.
#[inline]
fn class_of(capacity: usize) -> Option<usize> {
    (DEFAULT_CAPACITY..=MAX_POOLED_CAPACITY)
        .contains(&capacity)
        .then(|| (capacity.ilog2() - DEFAULT_CAPACITY.trailing_zeros()) as usize)
}

impl BodyPool {
    /// A pool keeping at most `max_buffers` idle buffers of each size class.
    pub fn new(max_buffers: usize) -> Arc<BodyPool> {
        Arc::new(BodyPool {
            classes: std::array::from_fn(|_| Class {
                free: ArrayQueue::new(max_buffers.max(1)),
                low: AtomicUsize::new(0),
            }),
            unknown: AtomicUsize::new(0),
            trim: Trim::new(),
        })
    }

    /// A buffer for a body of `expected` bytes, if known.
    pub fn take(self: &Arc<Self>, expected: Option<usize>) -> PooledBuf {
        // A length from the server is a claim, not a fact: past a bound
        // the buffer grows with the bytes that actually arrive.
        let buf = match expected.map(|n| n.min(MAX_UPFRONT)) {
            // Large bodies skip the pool entirely, in a buffer of their
            // exact size (the body is read straight into it).
            Some(want) if want > MAX_POOLED_CAPACITY => Vec::with_capacity(want),
            Some(want) => {
                let c = class_for(want);
                self.classes[c]
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(DEFAULT_CAPACITY << c))
            }
            None => {
                let c = self.unknown.load(Relaxed);
                self.classes[c]
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(DEFAULT_CAPACITY))
            }
        };
        PooledBuf {
            buf,
            pool: Arc::clone(self),
            unknown: expected.is_none(),
        }
    }

    /// Idle buffers in the pool.
    pub fn idle(&self) -> usize {
        self.classes.iter().map(|c| c.free.len()).sum()
    }

    /// Free the buffers of each class that stayed idle through the period
    /// that just ended.
    #[cold]
    fn trim(&self) {
        for class in &self.classes {
            let idle = class.free.len();
            let unused = class.low.swap(idle, Relaxed).min(idle);
            class.low.store(idle - unused, Relaxed);
            for _ in 0..unused {
                drop(class.free.pop());
            }
        }
    }
}

/// A body buffer that returns to its pool when dropped.
#[derive(Debug)]
pub struct PooledBuf {
    buf: Vec<u8>,
    pool: Arc<BodyPool>,
    /// Taken for a body of unknown length.
    unknown: bool,
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
        let pool = &self.pool;
        if let Some(c) = class_of(buf.capacity()) {
            buf.clear();
            // Written only when it changes: every worker's returns read
            // this line, and a store per body would bounce it between them.
            if self.unknown && pool.unknown.load(Relaxed) != c {
                pool.unknown.store(c, Relaxed);
            }
            // A full class just frees the buffer.
            let _ = pool.classes[c].free.push(buf);
        }
        if pool.trim.due() {
            pool.trim();
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

    /// A small body does not take (and hold) a big buffer, and a big one
    /// does not take a pooled small one to reallocate it.
    #[test]
    fn bodies_take_buffers_of_their_size() {
        let pool = BodyPool::new(4);
        let mut json = pool.take(Some(23_494));
        json.extend(&[b'x'; 23_494]);
        drop(json);
        let mut tiny = pool.take(Some(5));
        tiny.extend(b"hello");
        assert_eq!(tiny.buf.capacity(), DEFAULT_CAPACITY);
        drop(tiny);
        assert_eq!(pool.idle(), 2);
        let large = pool.take(Some(1 << 20));
        assert_eq!(large.buf.capacity(), 1 << 20);
        assert_eq!(pool.idle(), 2, "no pooled buffer taken for a large body");
        drop(large);
        assert_eq!(pool.idle(), 2, "large buffers are freed");
        // The JSON's buffer serves the next JSON body, without growing.
        let again = pool.take(Some(23_494));
        assert_eq!(again.buf.capacity(), 32 << 10);
        assert_eq!(pool.idle(), 1);
    }

    /// A body of unknown length starts from a buffer of the size the last
    /// one grew to, so that grown buffers are used again.
    #[test]
    fn bodies_of_unknown_length_reuse_grown_buffers() {
        let pool = BodyPool::new(4);
        let mut a = pool.take(None);
        a.extend(&[0; 3000]);
        let cap = a.buf.capacity();
        assert!(cap >= 3000);
        drop(a);
        let b = pool.take(None);
        assert_eq!(b.buf.capacity(), cap);
        assert_eq!(pool.idle(), 0);
    }

    #[test]
    fn classes_hold_their_size() {
        assert_eq!(class_for(0), 0);
        assert_eq!(class_for(DEFAULT_CAPACITY), 0);
        assert_eq!(class_for(DEFAULT_CAPACITY + 1), 1);
        assert_eq!(class_for(MAX_POOLED_CAPACITY), CLASSES - 1);
        for cap in [1024, 1500, 2048, 4095, 65_536] {
            let c = class_of(cap).expect("pooled");
            assert!(DEFAULT_CAPACITY << c <= cap, "{cap}");
            assert!(class_for(cap) >= c);
        }
        assert_eq!(class_of(1023), None);
        assert_eq!(class_of(MAX_POOLED_CAPACITY + 1), None);
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
        assert!(pool.trim.due_at(start + TRIM_PERIOD_NS));
        pool.trim();
        assert_eq!(pool.idle(), 10);
        // Then a period in which at most 3 were taken at once.
        let three: Vec<_> = (0..3).map(|_| pool.take(Some(100))).collect();
        drop(three);
        assert!(!pool.trim.due_at(start + TRIM_PERIOD_NS + 1), "too soon");
        assert!(pool.trim.due_at(start + 2 * TRIM_PERIOD_NS));
        pool.trim();
        assert_eq!(pool.idle(), 3);
        // A period with no traffic at all frees the rest.
        pool.trim();
        assert_eq!(pool.idle(), 0);
        // Returns trim by themselves: a return that falls on a check, a
        // period after the last trim, frees the buffer that sat idle.
        let pool = BodyPool::new(4);
        drop(pool.take(None));
        assert_eq!(pool.idle(), 1);
        pool.trim.at.store(0, Relaxed);
        pool.classes[0].low.store(1, Relaxed);
        pool.trim.returns.store(TRIM_EVERY * 7, Relaxed);
        drop(PooledBuf {
            buf: Vec::with_capacity(DEFAULT_CAPACITY),
            pool: pool.clone(),
            unknown: false,
        });
        assert_eq!(pool.idle(), 1);
        assert_eq!(pool.classes[0].low.load(Relaxed), 1);
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
