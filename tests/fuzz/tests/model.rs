//! Model-based property tests: random histories of acquire / record / clock advance /
//! manual operations / export-import, run on the breaker and on the reference model of
//! `tripgate_fuzz::model` (written from SPEC.md alone, shared with the `model` fuzz
//! target) and compared decision by decision; plus properties that need no model.
//!
//! Slow calls, hang detection, jitter and rate graduation have their own named tests and
//! vectors.
//!
//! Cases: `PROPTEST_CASES` overrides the defaults below, whose sum is over 10,000.

use proptest::prelude::*;
use tripgate_core::{
    Breaker, Config, Outcome, RawPermit, MAX_EXPORT_LEN, MILLISECOND as MS, SECOND as S,
};
use tripgate_fuzz::model::{run_history, Manual, Op, Reading};

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------- random histories

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        3 => Just(Outcome::Success),
        4 => (100u16..=599).prop_map(|c| Outcome::status(c).unwrap()),
        3 => prop::sample::select(vec![500u16, 502, 503, 504, 429]).prop_map(|c| Outcome::status(c).unwrap()),
        1 => (0u8..=16).prop_map(|c| Outcome::grpc(c).unwrap()),
        2 => Just(Outcome::Timeout),
        1 => Just(Outcome::ConnectionError),
        1 => Just(Outcome::Failure),
        1 => Just(Outcome::Cancelled),
        1 => Just(Outcome::Ignored),
    ]
}

fn op(with_manual: bool) -> impl Strategy<Value = Op> {
    let manual = prop::sample::select(vec![
        Manual::Isolate,
        Manual::Release,
        Manual::Disable,
        Manual::Reset,
    ]);
    // Mostly the history's own time; now and then a clock that stepped back.
    let reading = prop_oneof![
        9 => Just(Reading::Now),
        1 => (0u64..10_000).prop_map(|ms| Reading::Behind(ms * MS)),
    ];
    prop_oneof![
        8 => reading.clone().prop_map(Op::Acquire),
        8 => (any::<usize>(), outcome(), any::<bool>(), reading.clone()).prop_map(
            |(index, outcome, raw, reading)| Op::Record { index, outcome, raw, reading }
        ),
        3 => (0u64..200).prop_map(|ms| Op::Advance(ms * MS)),
        2 => (0u64..40).prop_map(|s| Op::Advance(s * S)),
        1 => (1u64..5).prop_map(|h| Op::Advance(h * 3600 * S)),
        (if with_manual { 1 } else { 0 }) => (manual, reading).prop_map(|(m, r)| Op::Manual(m, r)),
        (if with_manual { 1 } else { 0 }) => Just(Op::Recycle),
    ]
}

fn config() -> impl Strategy<Value = Config> {
    (
        (
            1u32..7,
            1u32..7,
            prop::option::of(20u8..=100),
            1u64..61,
            1u8..13,
        ),
        (
            1u64..21,
            1u64..21,
            1u8..5,
            1u32..4,
            prop::option::of(1u32..6),
        ),
        (
            prop::sample::select(vec![1.0f64, 1.5, 2.0]),
            prop::option::of(20u64..120),
        ),
    )
        .prop_map(
            |(
                (threshold, min_calls, rate, window, buckets),
                (cooldown, probe_timeout, k, m, cap),
                (factor, max),
            )| {
                Config {
                    failure_threshold: threshold,
                    min_calls,
                    failure_rate: rate,
                    window: window * S,
                    buckets,
                    cooldown: cooldown * S,
                    probe_timeout: probe_timeout * S,
                    half_open_max_probes: k,
                    half_open_required_successes: m,
                    max_in_flight: cap,
                    backoff_factor: factor,
                    max_cooldown: max.map(|m| m * S).filter(|&m| m >= cooldown * S),
                    ..Config::default()
                }
            },
        )
}

proptest! {
    #![proptest_config(cases(6_000))]

    /// The breaker and the model make the same decisions on every random history.
    #[test]
    fn breaker_matches_reference_model(config in config(), ops in prop::collection::vec(op(true), 1..80)) {
        run_history(config, 1_000 * S, &ops).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(cases(2_000))]

    /// Histories of client errors and successes never trip, whatever the config and timing.
    #[test]
    fn client_errors_never_trip(
        config in config(),
        codes in prop::collection::vec(prop_oneof![(100u16..429), (430u16..500)], 1..200),
        gaps in prop::collection::vec(0u64..5_000, 1..200),
    ) {
        let mut b = Breaker::new(config, 0).unwrap();
        let mut now = 0;
        for (code, gap) in codes.iter().zip(gaps.iter().cycle()) {
            now += gap * MS;
            let permit = b.acquire(now).decision.unwrap();
            let recorded = b.record(permit, Outcome::status(*code).unwrap(), now);
            prop_assert!(recorded.transitions.is_empty());
        }
        prop_assert_eq!(b.metrics(now).transitions_total, 0);
    }

    /// A fault older than the window never counts (the issue asks for "window plus one
    /// bucket"; the ring forgets by `window`), whenever in its bucket it landed, and
    /// whether the window is read or written next.
    #[test]
    fn old_faults_never_count(
        config in config(),
        faults in 1usize..50,
        offset in 0u64..100_000,
        later in 0u64..10_000,
    ) {
        let config = Config { failure_threshold: 1000, failure_rate: None, ..config };
        let mut b = Breaker::new(config, 0).unwrap();
        let at = offset * MS;
        for _ in 0..faults {
            let p = b.acquire(at).decision.unwrap();
            b.record(p, Outcome::Timeout, at);
        }
        let past = at + config.window + later * MS;
        prop_assert_eq!(b.metrics(past).window.faults, 0);
        let p = b.acquire(past).decision.unwrap();
        prop_assert_eq!(b.record(p, Outcome::Success, past).transitions.len(), 0);
        prop_assert_eq!(b.metrics(past).window.faults, 0);
    }
}

proptest! {
    #![proptest_config(cases(2_500))]

    /// No operation panics on any input: random configs, instants, raw permits, bytes.
    #[test]
    fn nothing_panics_on_any_input(
        raw in (any::<u32>(), any::<u32>(), any::<u64>(), any::<u64>(), any::<u8>(), any::<u8>(), any::<u16>()),
        steps in prop::collection::vec((any::<u8>(), any::<u64>(), any::<u64>(), any::<u16>()), 1..60),
        bytes in prop::collection::vec(any::<u8>(), 0..1100),
    ) {
        let (threshold, min_calls, window, cooldown, buckets, k, calls) = raw;
        let config = Config {
            failure_threshold: threshold % 8,
            min_calls: min_calls % 8,
            window: window % (100 * S),
            cooldown: cooldown % (100 * S),
            buckets,
            half_open_max_probes: k,
            window_calls: (calls % 3 == 0).then_some(calls),
            slow_call_duration: (calls % 5 == 0).then_some(window % (10 * S)),
            probe_timeout: cooldown % (50 * S),
            ..Config::default()
        };
        let Ok(mut b) = Breaker::new(config, window) else { return Ok(()) };
        for (kind, now, value, code) in steps {
            match kind % 8 {
                0 | 1 => { let _ = b.acquire(now); }
                2 => {
                    let raw = RawPermit { ticket: value, started: now.wrapping_sub(value) };
                    if let Ok(o) = Outcome::status(code) { let _ = b.record_raw(raw, o, now); }
                }
                3 => {
                    if let Ok(p) = b.acquire(now).decision {
                        let _ = b.record(p, Outcome::grpc((code % 20) as u8).unwrap_or(Outcome::Failure), value);
                    }
                }
                4 => { let _ = b.import(&bytes, value, now); }
                5 => { let mut buf = [0u8; MAX_EXPORT_LEN]; b.export(now, &mut buf).unwrap(); }
                6 => { let _ = (b.metrics(now), b.state(value)); }
                _ => { let _ = [b.isolate(now), b.release(now), b.disable(value), b.reset(now)]; }
            }
        }
    }
}
