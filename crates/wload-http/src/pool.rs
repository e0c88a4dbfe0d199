//! Pooled body buffers.
//!
//! A response body is read into a buffer taken from a lock-free pool and
//! goes back when the guest drops the response, so a steady load reuses
//! the same few buffers instead of allocating per request. Oversized
//! buffers are not kept, so one huge response does not pin its memory.

use std::sync::Arc;

use crossbeam_queue::ArrayQueue;

/// Capacity of a new buffer when the body length is not known.
const DEFAULT_CAPACITY: usize = 1 << 10;
/// Buffers that grew beyond this are freed instead of pooled: big bodies
/// are rare enough that malloc serves them well, and pooling them would
/// pin their memory. The pool holds at most `max_buffers` × this.
const MAX_POOLED_CAPACITY: usize = 64 << 10;

/// Most bytes reserved before a body arrives.
const MAX_UPFRONT: usize = 16 << 20;

#[derive(Debug)]
pub struct BodyPool {
    free: ArrayQueue<Vec<u8>>,
}

impl BodyPool {
    /// A pool keeping at most `max_buffers` idle buffers.
    pub fn new(max_buffers: usize) -> Arc<BodyPool> {
        Arc::new(BodyPool {
            free: ArrayQueue::new(max_buffers.max(1)),
        })
    }

    /// A buffer for a body of `expected` bytes, if known.
    pub fn take(self: &Arc<Self>, expected: Option<usize>) -> PooledBuf {
        // A length from the server is a claim, not a fact: past a bound
        // the buffer grows with the bytes that actually arrive.
        let want = expected.unwrap_or(DEFAULT_CAPACITY).min(MAX_UPFRONT);
        let mut buf = match self.free.pop() {
            Some(buf) => buf,
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

    #[test]
    fn oversized_buffers_are_freed() {
        let pool = BodyPool::new(4);
        let mut a = pool.take(Some(MAX_POOLED_CAPACITY + 1));
        a.extend(&vec![0u8; MAX_POOLED_CAPACITY + 1]);
        drop(a);
        assert_eq!(pool.idle(), 0);
    }
}
