//! What the fuzzers found, as named tests (each input is also kept in the replayed
//! corpus): every one of these failed before its fix.

use tripgate_core::{Breaker, Config, Outcome, SnapshotError, State, MAX_EXPORT_LEN, SECOND};

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

/// Exported bytes whose state at `offset` holds an age (an instant as time before the
/// export) of `age`, with a valid checksum.
fn with_age(offset: usize, age: u64) -> Vec<u8> {
    let mut b = Breaker::new(Config::default(), 0).unwrap();
    let permit = b.acquire(0).decision.unwrap();
    b.record(permit, Outcome::Timeout, 0);
    b.reset(SECOND); // a last transition, so its age is in the bytes too
    let mut buf = [0u8; MAX_EXPORT_LEN];
    let len = b.export(2 * SECOND, &mut buf).unwrap();
    let mut body = buf[..len - 4].to_vec();
    body[offset..offset + 8].copy_from_slice(&age.to_le_bytes());
    tripgate_fuzz::input::seal(body)
}

/// An imported age of 2⁶³ ns or more is refused: such an instant would be in the future
/// of the export on the circle of instants (spans longer than 292 years are not real), and
/// accepting it made the state read 584 years in state and import differently depending
/// on the time in transit (`elapsed` saturated). Found by the `snapshot` target.
#[test]
fn imported_ages_beyond_half_the_circle_are_corrupt() {
    // Layout version 3: the state's age follows magic, version, window shape (15 bytes),
    // state (1) and epoch (8); the last transition's age follows the 10 counters, the
    // route counters, the probe counts and the transition's flag, from, to and reason.
    const STATE_AGE: usize = 24;
    const LAST_AGE: usize = STATE_AGE + 8 * 4 + 4 * 2 + 8 * 10 + 8 * tripgate_core::ROUTE_COUNT + 4;
    for offset in [STATE_AGE, LAST_AGE] {
        let mut fresh = Breaker::new(Config::default(), 5 * SECOND).unwrap();
        let before = fresh.clone();
        assert_eq!(
            fresh.import(&with_age(offset, 5 * SECOND), 0, 5 * SECOND),
            Ok(())
        );
        for age in [1 << 63, u64::MAX] {
            let mut b = before.clone();
            assert_eq!(
                b.import(&with_age(offset, age), 0, 5 * SECOND),
                Err(SnapshotError::Corrupt("age")),
                "age {age} at {offset}"
            );
            assert_eq!(b, before);
        }
    }
}

fn export(b: &Breaker, now: u64) -> Vec<u8> {
    let mut buf = [0u8; MAX_EXPORT_LEN];
    let len = b.export(now, &mut buf).unwrap();
    buf[..len].to_vec()
}

/// A state imported with an absurd time in transit (half the circle or more: 292 years)
/// reads as long ago as an instant can be — the cooldown over, the window empty — and
/// its own export imports again. The ages were `age + elapsed` saturated to `u64::MAX`,
/// instants after the import, which the next export wrote and the next import refused.
/// Found by the `snapshot` target.
#[test]
fn a_state_imported_after_an_absurd_transit_exports_and_imports_again() {
    let d = Config::default();
    let mut b = Breaker::new(d, 0).unwrap();
    for _ in 0..5 {
        let permit = b.acquire(0).decision.unwrap();
        b.record(permit, Outcome::Timeout, 0);
    }
    let bytes = export(&b, SECOND);
    for elapsed in [1 << 62, (1 << 63) - 1, 1 << 63, u64::MAX] {
        let mut a = Breaker::new(d, 10 * SECOND).unwrap();
        a.import(&bytes, elapsed, 10 * SECOND).unwrap();
        assert_eq!(a.state(10 * SECOND), State::HalfOpen, "elapsed {elapsed}");
        assert!(a.metrics(10 * SECOND).time_in_state < 1 << 63);
        let again = export(&a, 11 * SECOND);
        let mut c = Breaker::new(d, 11 * SECOND).unwrap();
        c.import(&again, 0, 11 * SECOND)
            .unwrap_or_else(|e| panic!("elapsed {elapsed}: own export refused: {e}"));
        assert_eq!(export(&c, 11 * SECOND), again, "elapsed {elapsed}");
    }
}

/// A read projects a probe's timeout exactly as the next call makes it: the timed-out
/// probe no longer counts as out. `metrics` counted it (its round was not retired in the
/// projection), so a half-open breaker read one probe out of K while it would admit one.
/// Found by the `snapshot` target's "reads are projections" check.
#[test]
fn metrics_do_not_count_a_probe_whose_timeout_reopened_the_breaker() {
    let config = Config {
        cooldown: SECOND,
        probe_timeout: 2 * SECOND,
        ..Config::default()
    };
    let mut b = Breaker::new(config, 0).unwrap();
    for _ in 0..5 {
        let permit = b.acquire(0).decision.unwrap();
        b.record(permit, Outcome::Timeout, 0);
    }
    let leaked = b.acquire(SECOND).decision.unwrap();
    assert!(leaked.is_probe());
    // It timed out at 3 s (re-open), and the cooldown passed at 4 s (half-open).
    let now = 4 * SECOND + SECOND / 2;
    let read = b.metrics(now);
    assert_eq!((read.state, read.probes_out), (State::HalfOpen, 0));
    let probe = b.acquire(now).decision.unwrap();
    assert!(probe.is_probe());
    assert_eq!(b.metrics(now).probes_out, 1);
}

/// A permit issued before an import stays stale through any later import. Whether the
/// importer had issued permits was read from its lifetime `admitted` counter, which the
/// first import replaces: a second import of a state with no admissions took the imported
/// epoch as is, and a permit of that epoch from before the first import counted again.
/// Found by the `snapshot` target.
#[test]
fn a_permit_from_before_an_import_stays_stale_after_a_second_import() {
    let d = Config::default();
    let mut b = Breaker::new(d, 0).unwrap();
    let permit = b.acquire(0).decision.unwrap();
    // A state that has been closed for 10 s, so the permit falls inside it.
    let untouched = export(&Breaker::new(d, 0).unwrap(), 10 * SECOND);
    b.import(&untouched, 0, SECOND).unwrap();
    b.import(&untouched, 0, SECOND).unwrap();
    assert!(b.record(permit, Outcome::Timeout, SECOND).stale);
    assert_eq!(b.metrics(SECOND).window.faults, 0);
    // A breaker that never issued a permit nor changed state takes the state exactly.
    let mut fresh = Breaker::new(d, 0).unwrap();
    fresh.import(&untouched, 0, 0).unwrap();
    assert_eq!(fresh.metrics(0).epoch, 0);
}

/// Hang detection works across the clock's wrap from `u64::MAX` to 0 (any origin works).
/// Its ring numbered buckets by `instant / width`, which restarts at 0 on the wrap: the
/// ring stopped advancing, starts piled into one bucket that never aged, and hung calls
/// were never seen (or, for calls that straddled the wrap, counted twice). Found by the
/// `snapshot` target (hung above in-flight).
#[test]
fn hang_detection_across_the_clock_wrap() {
    let config = Config {
        slow_call_duration: Some(100 * tripgate_core::MILLISECOND),
        failure_threshold: 3,
        min_calls: 3,
        ..Config::default()
    };
    let start = u64::MAX - SECOND / 2;
    let mut b = Breaker::new(config, start).unwrap();
    let after_wrap = start.wrapping_add(SECOND);
    let hung: Vec<_> = (0..3)
        .map(|_| b.acquire(after_wrap).decision.unwrap())
        .collect();
    let later = after_wrap + 200 * tripgate_core::MILLISECOND;
    assert_eq!(b.metrics(later).hung, 3);
    let admission = b.acquire(later);
    assert!(admission.decision.is_err());
    assert_eq!(
        admission.transitions.last().map(|t| t.reason),
        Some(tripgate_core::Reason::HungCalls)
    );
    drop(hung);
}

/// The window's anchor keeps its exact age through an import: a bucket may be wider than
/// half the circle (a window of `u64::MAX` ns in one bucket), and bounding that age like
/// the others broke the exact round trip. Found by the `config` target.
#[test]
fn a_window_wider_than_half_the_circle_round_trips() {
    let config = Config {
        window: u64::MAX,
        buckets: 1,
        ..Config::default()
    };
    let mut b = Breaker::new(config, 0).unwrap();
    let _ = b.acquire(1 << 62);
    let now = (1 << 63) + 5;
    let bytes = export(&b, now);
    let mut fresh = Breaker::new(config, now).unwrap();
    fresh.import(&bytes, 0, now).unwrap();
    assert_eq!(export(&fresh, now), bytes);
}

/// The default config's export of a breaker that saw one fault at 0, with the calls of
/// bucket `index` (0 the newest, 9 the oldest, as the bytes list them) set to `calls`.
fn window_with_calls(index: usize, calls: u32) -> Vec<u8> {
    let mut b = Breaker::new(Config::default(), 0).unwrap();
    let permit = b.acquire(0).decision.unwrap();
    b.record(permit, Outcome::Timeout, 0);
    let bytes = export(&b, 0);
    // The window ends the body: the anchor's age (u64), then 10 buckets of calls, faults
    // and slow (u32 each). Found from the end, so the offset holds whatever precedes it.
    let mut body = bytes[..bytes.len() - 4].to_vec();
    let bucket = body.len() - 10 * 12 + index * 12;
    body[bucket..bucket + 4].copy_from_slice(&calls.to_le_bytes());
    tripgate_fuzz::input::seal(body)
}

/// A time window whose buckets hold more than 2³² − 1 calls together still forgets
/// exactly what an expiring bucket held. Its running total saturated at `u32::MAX`, so
/// expiring the full bucket took away more than the total had counted of it: the window
/// read 0 calls and 1 fault (an impossible tally), where its own export, imported, read
/// 1 call and 1 fault. Found by the `snapshot` target (the three inputs once kept in
/// tests/fuzz/findings/, crafted buckets imported, "imported state reads differently").
#[test]
fn a_window_holding_more_than_u32_max_calls_forgets_exactly_what_expires() {
    let d = Config::default();
    let mut b = Breaker::new(d, 0).unwrap();
    b.import(&window_with_calls(9, u32::MAX), 0, 0).unwrap();
    // u32::MAX + 1 calls: a read saturates.
    let full = b.metrics(0).window;
    assert_eq!((full.calls, full.faults), (u32::MAX, 1));
    // One bucket (3 s) later the oldest bucket has expired; the fault's remains.
    let later = 3 * SECOND;
    let left = b.metrics(later).window;
    assert_eq!((left.calls, left.faults, left.slow), (1, 1, 0));
    let mut fresh = Breaker::new(d, later).unwrap();
    fresh.import(&export(&b, later), 0, later).unwrap();
    assert_eq!(fresh.metrics(later), b.metrics(later));
}

/// A bucket that holds `u32::MAX` calls counts no more, and neither does the window's
/// total, so the total stays the sum of its buckets: once that bucket expires, the window
/// holds exactly the calls of the others. (The total counted on past the full bucket, so
/// it read one call too many after the bucket expired.)
#[test]
fn a_full_bucket_counts_no_more_in_the_window_total() {
    let d = Config::default();
    let mut b = Breaker::new(d, 0).unwrap();
    // The newest bucket (the fault's, at 0) holds u32::MAX calls.
    b.import(&window_with_calls(0, u32::MAX), 0, 0).unwrap();
    let permit = b.acquire(0).decision.unwrap();
    b.record(permit, Outcome::Success, 0); // into the full bucket: not counted
    let permit = b.acquire(3 * SECOND).decision.unwrap();
    b.record(permit, Outcome::Success, 3 * SECOND); // the next bucket
                                                    // At 30 s the full bucket has expired, the next one has not.
    let later = 30 * SECOND;
    let left = b.metrics(later).window;
    assert_eq!((left.calls, left.faults), (1, 0));
}
