//! k6's `rps` option: at most N requests per second for the whole run,
//! whatever the VUs do, so that a test (or a tenant, whose quota caps
//! it: `RunOptions::rps_limit`) cannot send more than it was allowed.
//!
//! A token bucket of one token refilled every `1/N` s, as k6's
//! `rate.NewLimiter(N, 1)`, shared by every VU of the run and by setup
//! and teardown. It is kept as the instant the next token is due (the
//! generic cell rate algorithm): a request claims the next slot with one
//! atomic update and sleeps until it, if it is in the future; nothing is
//! locked and nothing is queued. A request whose slot has passed (the
//! bucket is full) goes at once, and claiming moves the slot to one
//! interval after now, so an idle spell never saves up a burst.
//!
//! The wait comes before the request is handed to the client, so it is
//! not part of the request's timings, and the host cuts it at a hard
//! stop like a request in flight (see `host::http`).
//!
//! A caller's cap ([`RpsCap`], a tenant's quota) may change while the run
//! goes: `wload serve` splits a tenant's requests per second among its
//! runs and re-splits when one starts or ends. The limiter reads the cap
//! with one relaxed load per claim and paces at the lower of the two
//! rates.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The most requests per second the limiter paces: one a nanosecond, its
/// resolution.
pub const MAX_RPS: f64 = 1e9;

/// Nanoseconds between two requests at `per_second`; `None` unless it is
/// a number in (0, [`MAX_RPS`]].
fn interval_of(per_second: f64) -> Option<u64> {
    (per_second > 0.0 && per_second <= MAX_RPS).then(|| (1e9 / per_second).round().max(1.0) as u64)
}

/// A cap on a run's requests per second that its owner can change while
/// the run goes (cloned, it is the same cap).
#[derive(Debug, Clone)]
pub struct RpsCap(Arc<AtomicU64>);

impl RpsCap {
    /// A cap of `per_second`; `None` unless it is in (0, [`MAX_RPS`]].
    pub fn new(per_second: f64) -> Option<RpsCap> {
        Some(RpsCap(Arc::new(AtomicU64::new(interval_of(per_second)?))))
    }

    /// Change the cap; false (and no change) unless `per_second` is in
    /// (0, [`MAX_RPS`]].
    pub fn set(&self, per_second: f64) -> bool {
        match interval_of(per_second) {
            Some(interval) => {
                self.0.store(interval, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// The rate it caps to now.
    pub fn per_second(&self) -> f64 {
        1e9 / self.interval() as f64
    }

    fn interval(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Requests per second for the whole run (see the module documentation).
#[derive(Debug)]
pub struct RateLimiter {
    /// Slots are nanoseconds since this instant.
    epoch: Instant,
    /// Nanoseconds between two requests by the options' own `rps`; 0 when
    /// only the cap paces.
    own: u64,
    cap: Option<RpsCap>,
    /// When the next request may go, in nanoseconds since `epoch`.
    next: AtomicU64,
}

impl RateLimiter {
    /// A limiter of `per_second` requests a second; `None` unless it is a
    /// number in (0, [`MAX_RPS`]].
    pub fn new(per_second: f64) -> Option<RateLimiter> {
        RateLimiter::capped(Some(per_second), None)
    }

    /// A limiter at the lower of `per_second` (the options' `rps`) and
    /// `cap`, as the cap changes; `None` when neither limits (or
    /// `per_second` is not in (0, [`MAX_RPS`]]).
    pub fn capped(per_second: Option<f64>, cap: Option<RpsCap>) -> Option<RateLimiter> {
        let own = match per_second {
            Some(r) => interval_of(r)?,
            None if cap.is_some() => 0,
            None => return None,
        };
        Some(RateLimiter {
            epoch: Instant::now(),
            own,
            cap,
            next: AtomicU64::new(0),
        })
    }

    /// Nanoseconds between two requests now.
    fn interval(&self) -> u64 {
        self.cap
            .as_ref()
            .map_or(self.own, |c| c.interval().max(self.own))
            .max(1)
    }

    /// The rate it paces to now.
    pub fn per_second(&self) -> f64 {
        1e9 / self.interval() as f64
    }

    /// Claim the slots of `n` requests about to be sent together (a batch
    /// claims one per request): when the last of them is due, or `None`
    /// when that is now already.
    pub fn claim(&self, n: usize) -> Option<Instant> {
        let n = n.max(1) as u64;
        let now = self.epoch.elapsed().as_nanos() as u64;
        let interval = self.interval();
        let span = interval.saturating_mul(n);
        // Never fails: the closure always returns a value.
        let before = self
            .next
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |next| {
                Some(next.max(now).saturating_add(span))
            })
            .unwrap_or_else(|next| next);
        let last = before
            .max(now)
            .saturating_add(interval.saturating_mul(n - 1));
        (last > now).then(|| self.epoch + Duration::from_nanos(last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_positive_rates_up_to_one_a_nanosecond_make_a_limiter() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 2e9] {
            assert!(RateLimiter::new(bad).is_none(), "{bad}");
        }
        assert_eq!(RateLimiter::new(1e9).map(|l| l.interval()), Some(1));
        assert_eq!(
            RateLimiter::new(0.5).map(|l| l.interval()),
            Some(2_000_000_000)
        );
    }

    /// The lower rate paces, and a change of the cap applies to the next
    /// claim: the run's own `rps` is never exceeded however high the cap.
    #[test]
    fn a_cap_paces_at_the_lower_rate_and_can_change_mid_run() {
        assert!(RateLimiter::capped(None, None).is_none());
        let cap = RpsCap::new(10.0).unwrap();
        let capped = RateLimiter::capped(None, Some(cap.clone())).unwrap();
        assert_eq!(capped.per_second(), 10.0);
        let both = RateLimiter::capped(Some(4.0), Some(cap.clone())).unwrap();
        assert_eq!(both.per_second(), 4.0);
        assert!(cap.set(2.0));
        assert_eq!((capped.per_second(), both.per_second()), (2.0, 2.0));
        assert!(cap.set(1000.0));
        assert_eq!((capped.per_second(), both.per_second()), (1000.0, 4.0));
        for bad in [0.0, -3.0, f64::NAN, 2e9] {
            assert!(!cap.set(bad), "{bad}");
        }
        assert_eq!(cap.per_second(), 1000.0);
        // A claim takes the slot due and books the next one at the
        // interval of its time: after a change, the slot booked before it
        // keeps the old spacing, every later one has the new.
        assert_eq!(capped.claim(1), None);
        let a = capped.claim(1).expect("waits");
        cap.set(100.0);
        let b = capped.claim(1).expect("waits");
        let c = capped.claim(1).expect("waits");
        assert_eq!(
            (b - a, c - b),
            (Duration::from_millis(1), Duration::from_millis(10))
        );
    }

    /// The first request goes at once (a bucket of one token, full), the
    /// next ones one interval apart, whoever claims them.
    #[test]
    fn slots_are_one_interval_apart_from_the_first_free_one() {
        let limiter = RateLimiter::new(10.0).unwrap();
        assert_eq!(limiter.claim(1), None);
        let second = limiter.claim(1).expect("the second waits");
        let third = limiter.claim(1).expect("the third waits");
        let gap = third - second;
        assert_eq!(gap, Duration::from_millis(100));
        // A batch of three waits for the slot of its last request.
        let batch = limiter.claim(3).expect("the batch waits");
        assert_eq!(batch - third, Duration::from_millis(300));
    }

    /// An idle spell saves up no burst: after it, one request goes at
    /// once and the next waits a whole interval.
    #[test]
    fn idle_time_saves_up_no_burst() {
        let limiter = RateLimiter::new(100.0).unwrap();
        assert_eq!(limiter.claim(1), None);
        std::thread::sleep(Duration::from_millis(50));
        let before = Instant::now();
        assert_eq!(limiter.claim(1), None);
        let next = limiter.claim(1).expect("the next waits");
        let after = Instant::now();
        // One interval after the claim that went at once, made in between.
        let interval = Duration::from_millis(10);
        assert!(
            next >= before + interval && next <= after + interval,
            "{:?} after the claims",
            next - after
        );
    }

    /// Threads racing for slots get distinct ones: N claims span N - 1
    /// intervals, exactly. (At 10 a second, so that no thread stalls long
    /// enough for the slots to fall behind the clock.)
    #[test]
    fn racing_claims_take_distinct_slots() {
        let limiter = RateLimiter::new(10.0).unwrap();
        let slots: Vec<Instant> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        (0..250)
                            .filter_map(|_| limiter.claim(1))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap_or_default())
                .collect()
        });
        let mut slots = slots;
        slots.sort();
        slots.dedup();
        // At most the first claim went at once; every other has its slot.
        assert!(slots.len() >= 999, "{} distinct slots", slots.len());
        let span = *slots.last().unwrap() - slots[0];
        assert_eq!(span, Duration::from_millis(100) * (slots.len() as u32 - 1));
    }
}
