//! Fast clocks for hosts on an OS (feature `quanta`), on the CPU's time-stamp counter
//! through `quanta`:
//! [`CoarseClock`] (the default: a load of a millisecond-fresh reading) and
//! [`QuantaClock`] (a counter read each time).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use tripgate_core::Nanos;

use crate::clock::Clock;

/// How often the ticker thread refreshes the coarse reading: the precision of
/// [`CoarseClock`].
pub const COARSE_TICK: Duration = Duration::from_millis(1);

/// Nanoseconds on the process's [`QuantaClock`] as of the ticker's last tick.
static COARSE_NANOS: AtomicU64 = AtomicU64::new(0);

/// A monotonic clock that reads a shared reading a ticker thread refreshes every
/// [`COARSE_TICK`] from a [`QuantaClock`]: one atomic load (~1 ns), where a time-stamp
/// counter read costs ~10 ns on this kind of machine and `Instant::now()` ~30. The breaker
/// needs no more: its window has bucket precision (3 s by default) and cooldowns are
/// milliseconds. A reading lags real time by at most a tick plus the ticker's scheduling
/// delay, so a cooldown can end that much late, never early, and call durations are
/// measured to about a millisecond; use [`QuantaClock`] for exact ones.
///
/// The first `CoarseClock` of a process starts the ticker (`tripgate-clock`, waking every
/// millisecond for the life of the process); every `CoarseClock` reads the same reading,
/// whose origin is that moment. If the thread cannot be spawned, the clock reads the
/// time-stamp counter instead, so it is never frozen.
///
/// (Not quanta's own `Upkeep`/`recent()`: its reading is a `quanta::Instant`, and turning
/// one into nanoseconds goes through a `Duration`, a division and a multiplication that
/// cost more than the rest of a closed breaker's record, plus a call that does not
/// inline across crates. Reading the counter stays quanta's.)
#[derive(Clone, Debug)]
pub struct CoarseClock {
    /// Set when no ticker could be had: read the counter each time.
    fallback: Option<QuantaClock>,
}

impl CoarseClock {
    /// A clock on the process's coarse reading, starting the ticker if no clock has yet.
    pub fn new() -> Self {
        static TICKING: OnceLock<bool> = OnceLock::new();
        let ticking = *TICKING.get_or_init(|| {
            let counter = QuantaClock::new();
            COARSE_NANOS.store(counter.now(), Ordering::Relaxed);
            std::thread::Builder::new()
                .name("tripgate-clock".into())
                .spawn(move || loop {
                    std::thread::sleep(COARSE_TICK);
                    // One writer; readers need only see readings in order, which
                    // coherence of a single atomic gives even with Relaxed.
                    COARSE_NANOS.store(counter.now(), Ordering::Relaxed);
                })
                .is_ok()
        });
        Self {
            fallback: (!ticking).then(QuantaClock::new),
        }
    }
}

impl Default for CoarseClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for CoarseClock {
    #[inline(always)]
    fn now(&self) -> Nanos {
        match &self.fallback {
            None => COARSE_NANOS.load(Ordering::Relaxed),
            Some(counter) => counter.now(),
        }
    }
}

/// A monotonic clock read from the CPU's time-stamp counter (`quanta`, which calibrates
/// it against the OS clock once per process and falls back to the OS clock where the
/// counter is not invariant). A reading costs a few nanoseconds where `Instant::now()`
/// costs ~30 here, and the breaker needs no more than bucket and millisecond precision.
///
/// Cloning is cheap; clones share the origin.
#[derive(Clone, Debug)]
pub struct QuantaClock {
    clock: quanta::Clock,
    origin: u64,
}

impl QuantaClock {
    /// A clock reading 0 now.
    pub fn new() -> Self {
        let clock = quanta::Clock::new();
        let origin = clock.raw();
        Self { clock, origin }
    }
}

impl Default for QuantaClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for QuantaClock {
    #[inline]
    fn now(&self) -> Nanos {
        // A counter a core reads slightly behind the origin's gives 0, never a wrap; the
        // breaker treats any reading behind its latest as the latest.
        self.clock.delta_as_nanos(self.origin, self.clock.raw())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// The coarse clock moves with real time (the upkeep thread refreshes it) and trails
    /// the precise one by no more than a few ticks; the test waits on the OS clock.
    #[test]
    fn the_coarse_clock_is_kept_fresh() {
        let (coarse, precise) = (CoarseClock::new(), QuantaClock::new());
        let os_start = Instant::now();
        while os_start.elapsed() < Duration::from_millis(30) {
            std::hint::spin_loop();
        }
        let (c, p) = (coarse.now(), precise.now());
        assert!(c >= 20_000_000, "coarse clock moved only {c} ns in 30 ms");
        assert!(
            c <= p + 2_000_000,
            "coarse {c} ns is ahead of precise {p} ns"
        );
    }

    /// The counter tracks the OS clock: over a busy-waited 20 ms both agree within 2 ms
    /// (the test waits on the OS clock, it does not sleep).
    #[test]
    fn agrees_with_the_os_clock() {
        let clock = QuantaClock::new();
        let (start, os_start) = (clock.now(), Instant::now());
        while os_start.elapsed() < Duration::from_millis(20) {
            std::hint::spin_loop();
        }
        let (ours, os) = (clock.now() - start, os_start.elapsed().as_nanos() as u64);
        assert!(
            ours.abs_diff(os) < 2_000_000,
            "quanta {ours} ns, OS {os} ns"
        );
        let later = clock.now();
        assert!(later >= start + ours);
    }
}
