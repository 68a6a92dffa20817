//! Time as the breaker sees it: nanoseconds on the host's monotonic clock.
//!
//! The breaker never reads a clock. Every operation takes `now`, and this module holds the
//! rules that make arbitrary host clocks safe:
//!
//! * instants live on a circle of 2⁶⁴ ns and are compared only through [`since`], a
//!   wrapping difference. Any origin works, even one near `u64::MAX`, and an imported state
//!   may place instants "before" the host clock's origin (a fresh isolate whose clock
//!   starts at zero restoring a breaker that opened ten seconds ago), as long as real spans
//!   stay under 2⁶³ ns (292 years);
//! * a reading moves the breaker's time forward only when it is ahead of the latest one
//!   seen by less than 2⁶³ ns ([`Watermark`]). Any other reading is from the past on that
//!   circle — a clock that stepped back, or one absurd reading such as `u64::MAX` from a
//!   clock near zero (a saturated conversion, a reading in the wrong unit) — and is treated
//!   as the latest one: it is not observed, so it can neither produce a negative elapsed
//!   time nor freeze the breaker at the far end of time.
//!
//! Reading a clock is the host's business (`tripgate-host` has the clocks).

/// Nanoseconds, the breaker's only unit of time.
pub type Nanos = u64;

/// One millisecond in nanoseconds.
pub const MILLISECOND: Nanos = 1_000_000;
/// One second in nanoseconds.
pub const SECOND: Nanos = 1_000_000_000;

/// Nanoseconds from `earlier` to `now`, both instants on the breaker's timeline.
#[inline]
pub(crate) fn since(now: Nanos, earlier: Nanos) -> Nanos {
    now.wrapping_sub(earlier)
}

/// Half the circle of instants: a reading this far ahead of the latest, or further, is
/// behind it.
pub(crate) const HALF_CIRCLE: Nanos = 1 << 63;

/// The latest instant seen; a reading moves it only forward (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Watermark(Nanos);

impl Watermark {
    pub(crate) fn new(now: Nanos) -> Self {
        Self(now)
    }

    /// Accepts a host reading and returns the instant the breaker will use.
    #[inline]
    pub(crate) fn observe(&mut self, now: Nanos) -> Nanos {
        // A branch, not a select: readings almost always move forward, and a predicted
        // branch stores `now` without waiting for the load of the previous reading, which
        // the very next call reads again.
        if since(now, self.0) < HALF_CIRCLE {
            self.0 = now;
            now
        } else {
            self.0
        }
    }

    /// The latest instant seen. (Not `peek(0)`: above 2⁶³, 0 is ahead of it.)
    #[inline(always)]
    pub(crate) fn latest(self) -> Nanos {
        self.0
    }

    /// The instant `now` would be observed as, without recording it.
    #[inline]
    pub(crate) fn peek(self, now: Nanos) -> Nanos {
        if since(now, self.0) < HALF_CIRCLE {
            now
        } else {
            self.0
        }
    }
}
