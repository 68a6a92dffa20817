//! Clocks for hosts: the [`Clock`] a thread-safe breaker reads, [`FakeClock`] for
//! tests, and [`MonotonicClock`] on `std::time::Instant` ([`CoarseClock`](crate::CoarseClock)
//! and [`QuantaClock`](crate::QuantaClock) are the fast ones, in `coarse`).
//!
//! The core never reads a clock: every call takes `now`. A host reads one of these and
//! passes the reading on.

use std::sync::atomic::{AtomicU64, Ordering};

use tripgate_core::Nanos;

/// A source of monotonic nanoseconds for hosts that want one.
pub trait Clock {
    /// Nanoseconds since an arbitrary, fixed origin. Must never decrease (if it does, the
    /// breaker treats the smaller reading as the largest one it has seen).
    fn now(&self) -> Nanos;

    /// Waits `duration` on this clock: the thread sleeps (a retry's wait between
    /// attempts); a fake clock moves forward instead.
    fn sleep(&self, duration: std::time::Duration) {
        std::thread::sleep(duration);
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    #[inline]
    fn now(&self) -> Nanos {
        (**self).now()
    }
    fn sleep(&self, duration: std::time::Duration) {
        (**self).sleep(duration);
    }
}

/// A shared clock (tests hold an `Arc<FakeClock>` and hand the breaker a clone).
impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    #[inline]
    fn now(&self) -> Nanos {
        (**self).now()
    }
    fn sleep(&self, duration: std::time::Duration) {
        (**self).sleep(duration);
    }
}

/// A clock that only moves when told to. Shareable across threads.
///
/// ```
/// use tripgate_host::{Clock, FakeClock};
/// use tripgate_core::SECOND;
/// let clock = FakeClock::new(0);
/// clock.advance(15 * SECOND);
/// assert_eq!(clock.now(), 15 * SECOND);
/// ```
#[derive(Debug, Default)]
pub struct FakeClock(AtomicU64);

impl FakeClock {
    /// A clock reading `start`.
    pub const fn new(start: Nanos) -> Self {
        Self(AtomicU64::new(start))
    }

    /// Moves the clock forward by `by` nanoseconds (saturating at `u64::MAX`).
    pub fn advance(&self, by: Nanos) {
        let mut current = self.0.load(Ordering::Relaxed);
        loop {
            let next = current.saturating_add(by);
            match self
                .0
                .compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(seen) => current = seen,
            }
        }
    }

    /// Sets the reading. Setting it backwards is allowed: it is how tests check that the
    /// breaker clamps a clock that steps back.
    pub fn set(&self, to: Nanos) {
        self.0.store(to, Ordering::Relaxed);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Nanos {
        self.0.load(Ordering::Relaxed)
    }
    /// Moves the clock forward by `duration`: tests of retries wait no wall time.
    fn sleep(&self, duration: std::time::Duration) {
        self.advance(u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX));
    }
}

/// The host's monotonic clock (`std::time::Instant`), as nanoseconds since the clock was
/// made.
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    origin: std::time::Instant,
}

impl MonotonicClock {
    /// A clock whose origin is this moment.
    pub fn new() -> Self {
        Self {
            origin: std::time::Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Nanos {
        // 2^64 ns is 584 years of uptime; saturate rather than wrap past it.
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}
