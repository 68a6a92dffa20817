//! Admission without a clock reading (`acquire_untimed`, `acquire_reading`) happens at
//! the latest instant the breaker has seen, whatever the clock's origin.

use tripgate_core::{Breaker, Config, Outcome, State, SECOND};

/// On a clock whose origin is 40 s below `u64::MAX`, an untimed admission must not move
/// the breaker's time: 0 is 40 s *ahead* on the circle of instants, and a breaker that
/// took it as its time would forget a fault recorded a moment ago (the window is 30 s).
#[test]
fn untimed_admission_keeps_the_breakers_time_near_the_top_of_the_circle() {
    let origin = u64::MAX - 40 * SECOND;
    let mut b = Breaker::new(Config::default(), origin).unwrap();
    let p = b.acquire(origin).decision.unwrap();
    b.record(p, Outcome::Timeout, origin);
    assert_eq!(b.latest(), origin);

    let admission = b.acquire_untimed().expect("closed, no hang detection");
    let permit = admission.decision.unwrap();
    assert_eq!((b.latest(), permit.started()), (origin, origin));
    assert_eq!(
        b.metrics(origin).window.faults,
        1,
        "the fault is still in the window"
    );

    // The clock-reading form reads no clock here either.
    let mut caused = None;
    let again = b
        .acquire_reading(|| panic!("a closed breaker needs no clock"), &mut caused)
        .unwrap();
    assert!(caused.is_none());
    b.record(again, Outcome::Success, origin + SECOND);
    b.record(permit, Outcome::Success, origin + SECOND);
    let m = b.metrics(origin + SECOND);
    assert_eq!(
        (m.state, m.window.calls, m.window.faults),
        (State::Closed, 3, 1)
    );
}

/// Once the breaker is open, `acquire_reading` reads the clock: the cooldown needs it.
#[test]
fn an_open_breaker_reads_the_clock() {
    let mut b = Breaker::new(Config::default(), 0).unwrap();
    for _ in 0..5 {
        let p = b.acquire(0).decision.unwrap();
        b.record(p, Outcome::Timeout, 0);
    }
    let mut read = false;
    let mut caused = None;
    let rejection = b
        .acquire_reading(
            || {
                read = true;
                5 * SECOND
            },
            &mut caused,
        )
        .unwrap_err();
    assert!(read);
    assert_eq!(rejection.retry_after, 10 * SECOND);
    assert!(b.acquire_untimed().is_none());
}
