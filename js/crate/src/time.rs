//! Milliseconds (JS) and the core's nanoseconds.
//!
//! A clock reading is a JS number of milliseconds (`performance.now()` or an injected
//! clock). Readings in `[0, 2⁶³ ns)` become nanoseconds as `round(ms × 10⁶)`: exact for
//! whole and fractional milliseconds down to the nanosecond while the clock is below
//! 2⁵³ ns (104 days of process uptime for `performance.now()`), and rounding by less than
//! a nanosecond beyond. Any other reading — negative, NaN, infinite, or 2⁶³ ns and beyond
//! (a clock in nanoseconds by mistake) — is *not observed*: the breaker uses the latest
//! instant it has seen (the core's `Breaker::latest`), so one absurd reading can neither
//! end a cooldown at once nor freeze the breaker at the far end of time. 2⁶³ ns is also
//! where the core's own rule starts (a reading that far ahead of the latest is from the
//! past on its circle of instants), so the two never disagree for a clock that starts
//! near zero.
//!
//! Durations (options) are finite, non-negative milliseconds, converted the same way and
//! saturating at `u64::MAX` nanoseconds. Durations go back to JS as `ns / 10⁶`, exact for
//! whole milliseconds.

use tripgate_core::{Nanos, MILLISECOND};

/// Readings from here on are not observed: 2⁶³ ns in milliseconds. As an `f64` (and as
/// the literal `9223372036854.775808` in JS) it is the double nearest that value, a hair
/// below it, which is itself refused.
pub const READING_LIMIT_MS: f64 = (1u64 << 63) as f64 / MILLISECOND as f64;

/// Nanoseconds of a valid clock reading; `None` for one that is not observed.
#[inline]
pub fn reading(ms: f64) -> Option<Nanos> {
    // NaN is in no range.
    if (0.0..READING_LIMIT_MS).contains(&ms) {
        // Below the limit `round` stays under 2⁶³; the bound keeps that a fact of this
        // function rather than of float rounding.
        Some(round(ms).min(i64::MAX as u64))
    } else {
        None
    }
}

/// Nanoseconds of a duration option; negative or NaN counts as 0 (the JS side refuses
/// both), huge values saturate.
#[inline]
pub fn duration(ms: f64) -> Nanos {
    if ms > 0.0 {
        round(ms)
    } else {
        0
    }
}

#[inline]
fn round(ms: f64) -> Nanos {
    // `as` saturates at u64::MAX and is exact for every integer below it.
    (ms * 1e6 + 0.5) as u64
}

/// The core's nanoseconds as milliseconds.
#[inline]
pub fn ms(ns: Nanos) -> f64 {
    ns as f64 / MILLISECOND as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_round_to_the_nanosecond() {
        assert_eq!(reading(0.0), Some(0));
        assert_eq!(reading(1.0), Some(1_000_000));
        assert_eq!(reading(0.1), Some(100_000));
        assert_eq!(reading(123_456.789_012), Some(123_456_789_012));
    }

    #[test]
    fn absurd_readings_are_not_observed() {
        for bad in [
            -1.0,
            -0.000_1,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1.9e13,
            READING_LIMIT_MS,
        ] {
            assert_eq!(reading(bad), None, "{bad}");
        }
        let last = reading(9_223_372_036_854.773).unwrap();
        assert!(last < 1 << 63, "{last}");
    }

    #[test]
    fn durations_saturate() {
        assert_eq!(duration(-5.0), 0);
        assert_eq!(duration(f64::NAN), 0);
        assert_eq!(duration(1e300), u64::MAX);
        assert_eq!(duration(0.5), 500_000);
    }
}
