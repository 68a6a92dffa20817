//! The breaker's clocks, through `quanta`: [`CoarseClock`] (the default: a load of a
//! millisecond-fresh reading) and [`QuantaClock`] (the CPU's time-stamp counter).

use std::sync::OnceLock;
use std::time::Duration;

use tripgate_core::{Clock, Nanos};

/// How often quanta's upkeep thread refreshes the coarse reading: the precision of
/// [`CoarseClock`].
pub const COARSE_TICK: Duration = Duration::from_millis(1);

/// A monotonic clock that reads a shared reading quanta's upkeep thread refreshes every
/// [`COARSE_TICK`]: one atomic load (~1 ns), where a time-stamp counter read costs ~10 ns
/// on this kind of machine and `Instant::now()` ~30. The breaker needs no more: its window
/// has bucket precision (3 s by default) and cooldowns are milliseconds; a reading lags real
/// time by at most a tick plus the upkeep thread's scheduling delay, so a cooldown can end
/// that much late, never early, and call durations are measured to about a millisecond.
///
/// The first `CoarseClock` of a process starts the upkeep thread (`quanta-upkeep`, waking
/// every millisecond, for the life of the process). If another library already runs one,
/// its readings are used; if the thread cannot be spawned, the clock reads the
/// time-stamp counter instead, so it is never frozen. Use [`QuantaClock`] for exact call
/// durations.
#[derive(Clone, Copy, Debug)]
pub struct CoarseClock {
    origin: quanta::Instant,
    /// No upkeep thread could be had: read the counter each time.
    precise: bool,
}

impl CoarseClock {
    /// A clock reading 0 now (starting the upkeep thread if no clock has yet).
    pub fn new() -> Self {
        static UPKEEP: OnceLock<bool> = OnceLock::new();
        let kept = *UPKEEP.get_or_init(|| match quanta::Upkeep::new(COARSE_TICK).start() {
            // The thread stops when its handle drops: keep it for the process's life.
            Ok(handle) => {
                std::mem::forget(handle);
                true
            }
            Err(quanta::Error::UpkeepRunning) => true,
            Err(quanta::Error::FailedToSpawnUpkeepThread(_)) => false,
        });
        Self {
            origin: Self::read(!kept),
            precise: !kept,
        }
    }

    #[inline(always)]
    fn read(precise: bool) -> quanta::Instant {
        if precise {
            quanta::Instant::now()
        } else {
            quanta::Instant::recent()
        }
    }
}

impl Default for CoarseClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for CoarseClock {
    #[inline]
    fn now(&self) -> Nanos {
        let elapsed = Self::read(self.precise).saturating_duration_since(self.origin);
        // 2^64 ns is 584 years of uptime; saturate rather than wrap past it.
        u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
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
        assert!(c <= p + 2_000_000, "coarse {c} ns is ahead of precise {p} ns");
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
        assert!(ours.abs_diff(os) < 2_000_000, "quanta {ours} ns, OS {os} ns");
        let later = clock.now();
        assert!(later >= start + ours);
    }
}
