//! A scripted clock for the guard's instances: time moves only when a test says so.
//!
//! Every instance reads the same wall clock (what the guard stamps its state with), and
//! a monotonic clock of its own that starts far from every other instance's, as separate
//! processes' clocks do: the guard must not compare them.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use wasmtime_wasi::{HostMonotonicClock, HostWallClock};

/// 2026-01-01T00:00:00Z, in ns since the Unix epoch: where the scripted wall clock starts.
const WALL_START: u64 = 1_767_225_600_000_000_000;
/// How far apart two instances' monotonic clocks start (about 11.6 days).
const MONOTONIC_SPACING: u64 = 1_000_000_000_000_000;

/// Scripted time, shared by every clone.
#[derive(Clone, Default, Debug)]
pub struct FakeClock {
    elapsed: Arc<AtomicU64>,
    /// Added to the wall clock only (ns): a wall clock that was stepped.
    wall_step: Arc<AtomicI64>,
    instances: Arc<AtomicU64>,
    /// Added to this clone's wall clock only (ns): another host's clock, skewed.
    skew: i64,
}

impl FakeClock {
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves time forward by `by`.
    pub fn advance(&self, by: Duration) {
        let ns = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.elapsed.fetch_add(ns, Ordering::SeqCst);
    }

    /// Steps the wall clock back by `by`, as a clock correction does; monotonic clocks
    /// are unaffected.
    pub fn step_wall_back(&self, by: Duration) {
        let ns = i64::try_from(by.as_nanos()).unwrap_or(i64::MAX);
        self.wall_step.fetch_sub(ns, Ordering::SeqCst);
    }

    /// The same time on a host whose wall clock reads `by` later than this one's, as two
    /// hosts' clocks disagree: it moves with this clock.
    pub fn ahead(&self, by: Duration) -> FakeClock {
        let by = i64::try_from(by.as_nanos()).unwrap_or(i64::MAX);
        FakeClock {
            skew: self.skew.saturating_add(by),
            ..self.clone()
        }
    }

    /// Scripted time since the clock was made.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.elapsed.load(Ordering::SeqCst))
    }

    /// The wall clock every instance shares.
    pub fn wall(&self) -> impl HostWallClock + 'static {
        Wall {
            elapsed: self.elapsed.clone(),
            step: self.wall_step.clone(),
            skew: self.skew,
        }
    }

    /// A monotonic clock for one new instance, offset from every other instance's.
    pub fn monotonic(&self) -> impl HostMonotonicClock + 'static {
        let index = self.instances.fetch_add(1, Ordering::Relaxed);
        // Wraps after about 18,000 instances: still far apart, never compared.
        let start = index.wrapping_mul(MONOTONIC_SPACING) % (u64::MAX / 2);
        Monotonic {
            elapsed: self.elapsed.clone(),
            start,
        }
    }
}

struct Wall {
    elapsed: Arc<AtomicU64>,
    step: Arc<AtomicI64>,
    skew: i64,
}

impl HostWallClock for Wall {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        let now = WALL_START.saturating_add(self.elapsed.load(Ordering::SeqCst));
        let step = self.step.load(Ordering::SeqCst).saturating_add(self.skew);
        Duration::from_nanos(now.saturating_add_signed(step))
    }
}

struct Monotonic {
    elapsed: Arc<AtomicU64>,
    start: u64,
}

impl HostMonotonicClock for Monotonic {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        self.start
            .saturating_add(self.elapsed.load(Ordering::SeqCst))
    }
}
