//! The rules of SPEC.md that the shared vectors (`tests/vectors/`, run by every host)
//! cannot express: instants near `u64::MAX`, the core's clock-free admission, its fixed
//! size, the spread of jitter, config values JSON cannot hold, the metrics' last
//! transition, byte-exact and byte-damaged snapshots. Every other rule, and the four
//! failure modes, are vectors. Time is explicit (`now` in nanoseconds); nothing sleeps.

use tripgate_core::{
    Breaker, Config, Field, Outcome, Permit, Reason, RejectReason, Rule, State, Transitions,
    MAX_EXPORT_LEN, MILLISECOND as MS, SECOND as S,
};

fn breaker(config: Config) -> Breaker {
    Breaker::new(config, 0).unwrap()
}

fn admit(b: &mut Breaker, now: u64) -> Permit {
    b.acquire(now).decision.expect("admitted")
}

fn status(code: u16) -> Outcome {
    Outcome::status(code).unwrap()
}

/// Admits and records `n` outcomes at `now`; returns the transitions of the last one.
fn calls(b: &mut Breaker, n: usize, outcome: Outcome, now: u64) -> Transitions {
    let mut last = Transitions::default();
    for _ in 0..n {
        let permit = admit(b, now);
        last = b.record(permit, outcome, now).transitions;
    }
    last
}

fn tripped(b: &mut Breaker, now: u64) {
    calls(b, 5, status(503), now);
    assert_eq!(b.state(now), State::Open);
}

// ---- Time ----

#[test]
fn time_any_origin_even_near_u64_max() {
    let origin = u64::MAX - 20 * S;
    let mut b = Breaker::new(Config::default(), origin).unwrap();
    tripped(&mut b, origin);
    assert_eq!(
        b.acquire(origin + 5 * S).decision.unwrap_err().retry_after,
        10 * S
    );
    assert_eq!(b.state(origin + 15 * S), State::HalfOpen);
    // The clock saturates at u64::MAX; the breaker keeps answering.
    assert!(b.acquire(u64::MAX).decision.unwrap().is_probe());
}

// ---- Admission ----

#[test]
fn admission_without_a_clock_only_where_time_cannot_matter() {
    let mut b = breaker(Config::default());
    let _first = admit(&mut b, 7 * S);
    let permit = b.acquire_untimed().unwrap().decision.unwrap();
    assert_eq!((permit.started(), b.latest()), (7 * S, 7 * S));
    tripped(&mut b, 8 * S);
    assert!(
        b.acquire_untimed().is_none(),
        "open: the cooldown needs the clock"
    );
    let mut hang_detecting = breaker(Config {
        slow_call_duration: Some(S),
        ..Config::default()
    });
    assert!(hang_detecting.acquire_untimed().is_none());
}

// ---- The window ----

#[test]
fn window_memory_is_fixed_whatever_the_failure_rate() {
    let mut b = breaker(Config {
        failure_threshold: u32::MAX,
        ..Config::default()
    });
    let before = core::mem::size_of_val(&b);
    b.disable(0);
    for i in 0..100_000u64 {
        calls(&mut b, 1, status(503), i * MS);
    }
    assert_eq!(core::mem::size_of_val(&b), before);
    assert!(before < 3 * 1024, "a breaker is {before} bytes");
}

// ---- Open and cooldown ----

#[test]
fn open_jitter_is_seeded_and_only_lengthens() {
    let opening = |seed| {
        let mut b = breaker(Config {
            jitter_percent: 20,
            jitter_seed: seed,
            ..Config::default()
        });
        tripped(&mut b, 0);
        b.metrics(0).cooldown_remaining
    };
    let spread: Vec<u64> = (0..50).map(opening).collect();
    assert!(spread.iter().all(|&c| (15 * S..=18 * S).contains(&c)));
    assert_eq!(spread, (0..50).map(opening).collect::<Vec<_>>(), "replays");
    let distinct: std::collections::BTreeSet<_> = spread.iter().collect();
    assert!(distinct.len() > 40, "spreads out");
}

#[test]
fn open_backoff_without_a_cap_stops_at_64_cooldowns() {
    // Factor 2, no max-cooldown: 1, 2, 4, … 64 s, and there it stays (the longest cooldown
    // an imported state or a fleet event may claim, too).
    let mut b = breaker(Config {
        cooldown: S,
        backoff_factor: 2.0,
        probe_timeout: S,
        ..Config::default()
    });
    tripped(&mut b, 0);
    let mut now = 0;
    let mut openings = Vec::new();
    for _ in 0..9 {
        now += b.metrics(now).cooldown_remaining;
        let probe = admit(&mut b, now);
        b.record(probe, status(503), now);
        openings.push(b.metrics(now).cooldown_remaining / S);
    }
    assert_eq!(openings, [2, 4, 8, 16, 32, 64, 64, 64, 64]);
}

// ---- Config ----

#[test]
fn config_defaults_match_the_spec() {
    let c = Config::default();
    assert_eq!(
        (
            c.failure_threshold,
            c.window,
            c.min_calls,
            c.cooldown,
            c.half_open_max_probes
        ),
        (5, 30 * S, 5, 15 * S, 1)
    );
    assert_eq!(
        (c.half_open_required_successes, c.probe_timeout, c.buckets),
        (2, 15 * S, 10)
    );
    assert_eq!(
        c.fault_statuses.iter().collect::<Vec<_>>(),
        [429].into_iter().chain(500..=599).collect::<Vec<_>>()
    );
}

/// The rule violations the vectors (`tests/vectors/*-config-error-*.json`, one per rule)
/// cannot carry: a window shorter than one nanosecond per bucket (vectors count in
/// milliseconds), a NaN factor (JSON has none), and counts beyond what a field holds.
#[test]
fn config_violations_vectors_cannot_carry_name_the_field_and_rule() {
    let d = Config::default();
    let cases = [
        (
            Config {
                window: 5,
                buckets: 10,
                ..d
            },
            Field::Window,
            Rule::AtLeastField(Field::Buckets),
            "window must be >= buckets",
        ),
        (
            Config {
                backoff_factor: f64::NAN,
                ..d
            },
            Field::BackoffFactor,
            Rule::Factor,
            "backoff-factor must be a finite number between 1 and 1000",
        ),
        (
            // Hang detection needs `failure-threshold` calls out at once: a smaller cap
            // would make it impossible, silently.
            Config {
                slow_call_duration: Some(S),
                max_in_flight: Some(4),
                ..d
            },
            Field::MaxInFlight,
            Rule::AtLeastFieldWhenSet(Field::FailureThreshold, Field::SlowCallDuration),
            "max-in-flight must be >= failure-threshold when slow-call-duration is set",
        ),
    ];
    // Without hang detection, or with a cap that lets the threshold's calls out, the cap
    // is the operator's to choose.
    for config in [
        Config {
            max_in_flight: Some(1),
            ..d
        },
        Config {
            slow_call_duration: Some(S),
            max_in_flight: Some(d.failure_threshold),
            ..d
        },
    ] {
        assert!(Breaker::new(config, 0).is_ok(), "{config:?}");
    }
    for (config, field, rule, message) in cases {
        let error = Breaker::new(config, 0).unwrap_err();
        assert_eq!((error.field, error.rule), (field, rule));
        assert_eq!(error.to_string(), message);
    }
    let mut config = d;
    let error = config.set(Field::FailureThreshold, 1 << 32).unwrap_err();
    assert_eq!(error.to_string(), "failure-threshold must be <= 4294967295");
    assert_eq!(config, d, "a refused value changes nothing");
    config.set(Field::Buckets, 300).unwrap();
    assert_eq!(
        config.validate().unwrap_err().to_string(),
        "buckets must be between 1 and 64",
        "narrow fields saturate and break their own rule"
    );
    assert!(config.set(Field::FaultStatuses, 503).is_err());
}

// ---- Observability ----

#[test]
fn observability_metrics_snapshot() {
    let mut b = breaker(Config {
        max_in_flight: Some(1),
        ..Config::default()
    });
    let held = admit(&mut b, 0);
    let _ = b.acquire(0);
    b.record(held, status(503), S);
    calls(&mut b, 4, status(503), 2 * S);
    let _ = b.acquire(3 * S);
    let m = b.metrics(4 * S);
    assert_eq!(
        (m.state, m.epoch, m.window.calls, m.window.faults),
        (State::Open, 1, 5, 5)
    );
    assert_eq!(
        (
            m.rejected(RejectReason::Saturated),
            m.rejected(RejectReason::Open)
        ),
        (1, 1)
    );
    assert_eq!(
        (m.admitted_total, m.faults_total, m.transitions_total),
        (5, 5, 1)
    );
    assert_eq!((m.time_in_state, m.cooldown_remaining), (2 * S, 13 * S));
    let last = m.last_transition.unwrap();
    assert_eq!(
        (last.from, last.to, last.reason, last.at),
        (State::Closed, State::Open, Reason::FailureThreshold, 2 * S)
    );
}

// ---- Export / import ----

fn export(b: &Breaker, now: u64) -> Vec<u8> {
    let mut buf = [0u8; MAX_EXPORT_LEN];
    let len = b.export(now, &mut buf).unwrap();
    buf[..len].to_vec()
}

#[test]
fn transitions_are_counted_by_route_and_a_read_counts_what_time_made_due() {
    use tripgate_core::Route;
    let route = |from, reason| Route { from, reason };
    let mut b = breaker(Config::default());
    calls(&mut b, 5, status(503), S);
    let trip = route(State::Closed, Reason::FailureThreshold);
    let cooldown = route(State::Open, Reason::CooldownElapsed);
    assert_eq!(b.metrics(S).transitions(trip), 1);
    // The cooldown has passed: a read already counts that transition, once...
    let m = b.metrics(20 * S);
    assert_eq!((m.transitions(cooldown), m.transitions_total), (1, 2));
    // ...and making it real (the probe's acquire) does not count it again.
    let probe = admit(&mut b, 20 * S);
    assert_eq!(b.metrics(20 * S).transitions(cooldown), 1);
    drop(probe);
    b.isolate(21 * S);
    b.release(22 * S);
    b.disable(23 * S);
    b.reset(24 * S);
    let m = b.metrics(24 * S);
    for (from, reason) in [
        (State::HalfOpen, Reason::Isolated),
        (State::Isolated, Reason::Released),
        (State::Closed, Reason::Disabled),
        (State::Disabled, Reason::Reset),
    ] {
        assert_eq!(m.transitions(route(from, reason)), 1, "{from} {reason}");
    }
    assert_eq!(
        m.transitions_by_route.iter().sum::<u64>(),
        m.transitions_total
    );
    assert_eq!(m.transitions_total, 6);
    // A way no transition goes has no counter.
    assert_eq!(
        m.transitions(route(State::Open, Reason::ProbesSucceeded)),
        0
    );
    assert_eq!(route(State::Open, Reason::ProbesSucceeded).index(), None);

    // The transitions an export makes itself travel in the bytes: a re-open for a probe
    // still out (`restored`), and a probe timeout that fell due before the export.
    let mut b = breaker(Config::default());
    calls(&mut b, 5, status(503), 0);
    let _probe = admit(&mut b, 15 * S);
    for (at, made) in [
        (16 * S, route(State::HalfOpen, Reason::Restored)),
        (31 * S, route(State::HalfOpen, Reason::ProbeTimeout)),
    ] {
        let mut copy = breaker(Config::default());
        copy.import(&export(&b, at), 0, at).unwrap();
        let m = copy.metrics(at);
        assert_eq!(m.transitions(made), 1, "{made:?}");
        assert_eq!(
            m.transitions_by_route.iter().sum::<u64>(),
            m.transitions_total
        );
    }
}

#[test]
fn the_largest_export_fits_max_export_len() {
    let config = Config {
        buckets: 64,
        window: 64 * S,
        ..Config::default()
    };
    let mut b = breaker(config);
    b.disable(0);
    // Every bucket non-empty, and counters far from zero (fixed widths: values do not
    // change the length).
    for i in 0..64 {
        calls(&mut b, 3, status(503), i * S);
    }
    let len = export(&b, 64 * S).len();
    assert_eq!(len, 1_176, "the figure MAX_EXPORT_LEN's doc gives");
    assert!(len <= MAX_EXPORT_LEN);
    assert_eq!(
        export(&breaker(Config::default()), 0).len(),
        509,
        "the default window"
    );
}

#[test]
fn snapshot_round_trip_is_exact() {
    let mut b = breaker(Config::default());
    calls(&mut b, 3, status(503), S);
    calls(&mut b, 2, Outcome::Success, 4 * S);
    let bytes = export(&b, 5 * S);
    let mut copy = breaker(Config::default());
    copy.import(&bytes, 0, 5 * S).unwrap();
    assert_eq!(export(&copy, 5 * S), bytes);
    assert_eq!(copy.metrics(5 * S), b.metrics(5 * S));
    assert_eq!(copy.metrics(40 * S), b.metrics(40 * S));
}

#[test]
fn snapshot_garbage_or_truncated_bytes_change_nothing() {
    let mut b = breaker(Config::default());
    tripped(&mut b, 0);
    let bytes = export(&b, S);
    let before = b.clone();
    for cut in 0..bytes.len() {
        assert!(b.import(&bytes[..cut], 0, S).is_err(), "cut at {cut}");
    }
    for i in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[i] ^= 0x5a;
        assert!(b.import(&damaged, 0, S).is_err(), "byte {i}");
    }
    assert!(b.import(b"not a state at all", 0, S).is_err());
    let mut other = breaker(Config {
        buckets: 7,
        ..Config::default()
    });
    assert!(other
        .import(&bytes, 0, S)
        .unwrap_err()
        .to_string()
        .contains("different window"));
    assert_eq!(b, before);
}

/// Where the phase's fields start in exported bytes: after "TGB", the version, the window
/// shape (11 bytes) and the state.
const EPOCH_AT: usize = 16;
const OPEN_FOR_AT: usize = 32;
const COOLDOWN_AT: usize = 40;

/// Exported bytes with the `u64` at `at` replaced and the checksum made right again: what
/// someone who can write the stored state could craft.
fn crafted(bytes: &[u8], at: usize, value: u64) -> Vec<u8> {
    let mut crafted = bytes.to_vec();
    crafted[at..at + 8].copy_from_slice(&value.to_le_bytes());
    sealed(crafted)
}

/// `bytes` with their checksum made right for what they now hold.
fn sealed(mut bytes: Vec<u8>) -> Vec<u8> {
    let body = bytes.len() - 4;
    let checksum = bytes[..body].iter().fold(0x811c_9dc5u32, |hash, &b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    bytes[body..].copy_from_slice(&checksum.to_le_bytes());
    bytes
}

fn with_epoch(bytes: &[u8], epoch: u64) -> Vec<u8> {
    crafted(bytes, EPOCH_AT, epoch)
}

#[test]
fn snapshot_cannot_hold_a_breaker_open_past_the_importers_config() {
    let mut tripped_at_zero = breaker(Config::default());
    tripped(&mut tripped_at_zero, 0);
    let bytes = export(&tripped_at_zero, 0);
    // Sealed bytes that claim an opening of 2^64 - 1 ns, and a backed-off cooldown as long.
    let forever = crafted(
        &crafted(&bytes, OPEN_FOR_AT, u64::MAX),
        COOLDOWN_AT,
        u64::MAX,
    );
    let config = Config {
        cooldown: S,
        probe_timeout: 500 * MS,
        ..Config::default()
    };
    let mut importer = breaker(config);
    importer.import(&forever, 0, 0).unwrap();
    assert_eq!(importer.state(0), State::Open);
    assert_eq!(
        importer.metrics(0).cooldown_remaining,
        S,
        "the importer's cooldown"
    );
    assert_eq!(importer.state(S), State::HalfOpen);
    // A failed probe opens for the importer's cooldown, not the claimed one.
    let probe = admit(&mut importer, S);
    importer.record(probe, status(503), S);
    assert_eq!(importer.metrics(S).cooldown_remaining, S);

    // With backoff capped at 4 s and 20 % jitter, the bound is the longest opening the
    // configuration can make: 4.8 s.
    let capped = Config {
        backoff_factor: 2.0,
        max_cooldown: Some(4 * S),
        jitter_percent: 20,
        ..config
    };
    let mut importer = breaker(capped);
    importer.import(&forever, 0, 0).unwrap();
    assert_eq!(importer.metrics(0).cooldown_remaining, 4_800 * MS);
    assert_eq!(capped.longest_opening(), 4_800 * MS);
}

#[test]
fn snapshot_reads_only_its_own_version() {
    let mut b = breaker(Config::default());
    tripped(&mut b, 0);
    let bytes = export(&b, S);
    let mut importer = breaker(Config::default());
    let before = importer.clone();
    // Sealed bytes, so the version is the only thing wrong with them.
    for version in [0u8, 1, 2, 4, 255] {
        let mut other = bytes.clone();
        other[3] = version;
        assert_eq!(
            importer.import(&sealed(other), 0, S),
            Err(tripgate_core::SnapshotError::UnsupportedVersion(version)),
            "version {version}"
        );
    }
    assert_eq!(importer, before);
    importer.import(&bytes, 0, S).unwrap();
    assert_eq!(importer.state(S), State::Open);
}

#[test]
fn snapshot_refuses_epochs_the_importer_cannot_carry_past() {
    let bytes = export(&breaker(Config::default()), 0);
    let mut importer = breaker(Config::default());
    let permit = admit(&mut importer, 0); // it has issued permits: an import moves past them
    assert_eq!(
        importer.import(&with_epoch(&bytes, (1 << 57) - 1), 0, 0),
        Err(tripgate_core::SnapshotError::Corrupt("epoch"))
    );
    // Refused, nothing changed: the permit still counts.
    assert!(!importer.record(permit, Outcome::Success, 0).stale);
    importer
        .import(&with_epoch(&bytes, tripgate_core::MAX_IMPORT_EPOCH), 0, 0)
        .unwrap();
    // Past the imported epoch, raw permits still round-trip and count.
    for _ in 0..5 {
        let raw = admit(&mut importer, S).into_raw();
        assert!(!importer.record_raw(raw, status(503), S).unwrap().stale);
    }
    assert_eq!(importer.state(S), State::Open);
}

#[test]
fn snapshot_probes_still_out_hold_the_upstream_across_recycling() {
    // K = 2, a cooldown shorter than a call: a retired probe is still at the upstream
    // when the breaker is recycled, and the new instance must not send two more.
    let config = Config {
        half_open_max_probes: 2,
        cooldown: S,
        probe_timeout: 10 * S,
        ..Config::default()
    };
    let mut b = breaker(config);
    tripped(&mut b, 0);
    let (failing, _slow) = (admit(&mut b, S), admit(&mut b, S));
    b.record(failing, status(503), S + 100 * MS);
    let bytes = export(&b, S + 500 * MS);
    let mut restored = breaker(config);
    restored.import(&bytes, 0, S + 500 * MS).unwrap();
    assert_eq!(
        (0..5)
            .filter(|_| b.acquire(2 * S + 200 * MS).decision.is_ok())
            .count(),
        1
    );
    assert_eq!(
        restored.state(2 * S + 200 * MS),
        State::Open,
        "open until the probe times out"
    );
    assert_eq!(restored.state(11 * S), State::HalfOpen);
    assert_eq!(
        (0..5)
            .filter(|_| restored.acquire(11 * S).decision.is_ok())
            .count(),
        2
    );
}

#[test]
fn default_fault_sets_are_5xx_and_429_and_the_four_grpc_codes() {
    use tripgate_core::{GrpcSet, StatusSet};
    let statuses: Vec<u16> = StatusSet::default().iter().collect();
    let expected: Vec<u16> = core::iter::once(429).chain(500..=599).collect();
    assert_eq!(statuses, expected);
    let built = (500..=599)
        .fold(StatusSet::EMPTY, StatusSet::with)
        .with(429);
    assert_eq!(StatusSet::default(), built);
    assert_eq!(StatusSet::EMPTY.with_range(100, 599).iter().count(), 500);
    assert_eq!(
        StatusSet::EMPTY
            .with_range(598, u16::MAX)
            .iter()
            .collect::<Vec<_>>(),
        [598, 599]
    );
    let grpc: Vec<u8> = GrpcSet::default().iter().collect();
    assert_eq!(grpc, [4, 8, 13, 14]);
}
