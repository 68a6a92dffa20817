//! What the fuzzers found, as named tests (each input is also kept in the replayed
//! corpus): every one of these failed before its fix.

use tripgate_core::{Breaker, Config, Outcome, State, SECOND};

/// `Breaker::latest` is the watermark itself, wherever the clock's origin is. It was
/// computed as the instant a reading of 0 would be observed as, which is 0 whenever the
/// latest instant is above 2⁶³ (0 is then ahead of it on the circle of instants), so
/// `acquire_untimed` moved the clock up to 2⁶³ ns forward: the window forgot its faults,
/// and every later reading of the real clock was "from the past" for centuries.
/// Found by the `snapshot` target.
#[test]
fn latest_is_the_watermark_above_half_the_circle() {
    let start = u64::MAX - 5 * SECOND;
    let mut b = Breaker::new(Config::default(), start).unwrap();
    assert_eq!(b.latest(), start);
    for _ in 0..4 {
        let permit = b.acquire(start).decision.unwrap();
        b.record(permit, Outcome::Timeout, start);
    }
    let permit = b.acquire_untimed().unwrap().decision.unwrap();
    assert_eq!(permit.started(), start);
    assert_eq!(b.latest(), start);
    // The fifth fault, a second later, is inside the window and trips the breaker.
    let recorded = b.record(permit, Outcome::Timeout, start + SECOND);
    assert_eq!(recorded.transitions.last().map(|t| t.to), Some(State::Open));
    assert_eq!(b.latest(), start + SECOND);
}

