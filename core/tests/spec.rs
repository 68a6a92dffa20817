//! One named test per rule of SPEC.md, in the order SPEC.md states them, then its four
//! failure modes. Time is explicit (`now` in nanoseconds); nothing sleeps.

use tripgate_core::{
    Breaker, Class, Config, Field, Outcome, Permit, Reason, RejectReason, Rule, State, StatusSet,
    Transitions, MAX_EXPORT_LEN, MILLISECOND as MS, SECOND as S,
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

fn moves(transitions: &Transitions) -> Vec<(State, State, Reason)> {
    transitions
        .iter()
        .map(|t| (t.from, t.to, t.reason))
        .collect()
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

#[test]
fn time_a_clock_stepping_back_is_treated_as_the_largest_seen() {
    let mut b = breaker(Config::default());
    tripped(&mut b, 10 * S);
    let later = b.acquire(12 * S).decision.unwrap_err();
    let back = b.acquire(S).decision.unwrap_err();
    assert_eq!(later.retry_after, back.retry_after);
    assert_eq!(b.state(0), State::Open);
}

// ---- States ----

#[test]
fn states_open_reads_half_open_once_cooldown_elapsed() {
    let mut b = breaker(Config::default());
    tripped(&mut b, 0);
    assert_eq!(b.state(15 * S - 1), State::Open);
    assert_eq!(b.state(15 * S), State::HalfOpen);
    assert_eq!(b.metrics(15 * S).state, State::HalfOpen);
}

#[test]
fn states_every_transition_increments_the_epoch() {
    let mut b = breaker(Config::default());
    assert_eq!(b.metrics(0).epoch, 0);
    tripped(&mut b, 0);
    assert_eq!(b.metrics(0).epoch, 1);
    let probe = admit(&mut b, 15 * S);
    assert_eq!(probe.epoch(), 2);
    b.isolate(15 * S);
    b.release(15 * S);
    b.disable(15 * S);
    b.reset(15 * S);
    assert_eq!(b.metrics(15 * S).epoch, 6);
    assert_eq!(b.metrics(15 * S).transitions_total, 6);
}

#[test]
fn states_old_success_cannot_close_half_open() {
    let mut b = breaker(Config {
        half_open_required_successes: 1,
        ..Config::default()
    });
    let old = admit(&mut b, 0);
    tripped(&mut b, 0);
    let probe = admit(&mut b, 15 * S);
    let recorded = b.record(old, Outcome::Success, 15 * S);
    assert!(recorded.stale && recorded.transitions.is_empty());
    assert_eq!(b.state(15 * S), State::HalfOpen);
    assert_eq!(
        b.metrics(15 * S).probes_out,
        1,
        "a stale outcome releases nothing current"
    );
    b.record(probe, Outcome::Success, 15 * S);
    assert_eq!(b.state(15 * S), State::Closed);
}

// ---- Admission ----

#[test]
fn admission_closed_admits_normal_calls() {
    let mut b = breaker(Config::default());
    let permit = admit(&mut b, 0);
    assert!(!permit.is_probe());
    assert_eq!(b.metrics(0).in_flight, 1);
}

#[test]
fn admission_max_in_flight_rejects_saturated_and_stays_closed() {
    let mut b = breaker(Config {
        max_in_flight: Some(2),
        ..Config::default()
    });
    let (p1, _p2) = (admit(&mut b, 0), admit(&mut b, 0));
    let rejection = b.acquire(0).decision.unwrap_err();
    assert_eq!(
        (rejection.state, rejection.reason),
        (State::Closed, RejectReason::Saturated)
    );
    assert_eq!(b.state(0), State::Closed);
    b.record(p1, Outcome::Success, 1);
    assert!(b.acquire(1).decision.is_ok());
}

#[test]
fn admission_open_rejects_with_remaining_cooldown() {
    let mut b = breaker(Config::default());
    tripped(&mut b, 0);
    let r = b.acquire(4 * S).decision.unwrap_err();
    assert_eq!(
        (r.state, r.reason, r.retry_after),
        (State::Open, RejectReason::Open, 11 * S)
    );
}

#[test]
fn admission_half_open_admits_at_most_k_probes() {
    let mut b = breaker(Config {
        half_open_max_probes: 3,
        half_open_required_successes: 5,
        ..Config::default()
    });
    tripped(&mut b, 0);
    let probes: Vec<Permit> = (0..3).map(|_| admit(&mut b, 15 * S)).collect();
    assert!(probes.iter().all(Permit::is_probe));
    let r = b.acquire(15 * S).decision.unwrap_err();
    assert_eq!(
        (r.state, r.reason, r.retry_after),
        (State::HalfOpen, RejectReason::Probing, S)
    );
    let mut probes = probes.into_iter();
    b.record(probes.next().unwrap(), Outcome::Success, 15 * S);
    assert!(
        admit(&mut b, 15 * S).is_probe(),
        "a finished probe frees its slot"
    );
}

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

#[test]
fn admission_isolated_rejects() {
    let mut b = breaker(Config::default());
    b.isolate(0);
    let r = b.acquire(S).decision.unwrap_err();
    assert_eq!(
        (r.state, r.reason),
        (State::Isolated, RejectReason::Isolated)
    );
    assert_eq!(
        b.state(1000 * S),
        State::Isolated,
        "isolation never times out"
    );
}

#[test]
fn admission_disabled_admits_never_trips_still_measures() {
    let mut b = breaker(Config::default());
    b.disable(0);
    assert!(calls(&mut b, 50, status(503), 0).is_empty());
    let m = b.metrics(0);
    assert_eq!(
        (m.state, m.window.calls, m.window.faults),
        (State::Disabled, 50, 50)
    );
}

// ---- Outcomes ----

fn class_of(outcome: Outcome, config: Config) -> Class {
    let mut b = breaker(config);
    let permit = admit(&mut b, 0);
    b.record(permit, outcome, 0).class
}

#[test]
fn outcomes_5xx_and_429_are_faults() {
    for code in (500..=599).chain([429]) {
        assert_eq!(
            class_of(status(code), Config::default()),
            Class::Fault,
            "{code}"
        );
    }
}

#[test]
fn outcomes_100_to_499_except_429_are_successes() {
    for code in (100..=499).filter(|&c| c != 429) {
        assert_eq!(
            class_of(status(code), Config::default()),
            Class::Success,
            "{code}"
        );
    }
}

#[test]
fn outcomes_grpc_4_8_13_14_are_faults_others_successes() {
    for code in 0..=16u8 {
        let want = if [4, 8, 13, 14].contains(&code) {
            Class::Fault
        } else {
            Class::Success
        };
        assert_eq!(
            class_of(Outcome::grpc(code).unwrap(), Config::default()),
            want,
            "{code}"
        );
    }
}

#[test]
fn outcomes_timeout_connection_error_failure_are_faults() {
    for outcome in [Outcome::Timeout, Outcome::ConnectionError, Outcome::Failure] {
        assert_eq!(class_of(outcome, Config::default()), Class::Fault);
    }
}

#[test]
fn outcomes_cancelled_and_ignored_are_neutral() {
    let mut b = breaker(Config::default());
    for outcome in [Outcome::Cancelled, Outcome::Ignored] {
        let permit = admit(&mut b, 0);
        assert_eq!(b.record(permit, outcome, 0).class, Class::Neutral);
    }
    let m = b.metrics(0);
    assert_eq!(
        (m.window.calls, m.in_flight),
        (0, 0),
        "released, counted as nothing"
    );
}

#[test]
fn outcomes_fault_statuses_are_configurable() {
    let config = Config {
        fault_statuses: StatusSet::default().with(408).without(503),
        ..Config::default()
    };
    assert_eq!(class_of(status(408), config), Class::Fault);
    assert_eq!(class_of(status(503), config), Class::Success);
}

#[test]
fn outcomes_invalid_status_or_grpc_code_is_an_error() {
    for code in [0, 99, 600, 999, u16::MAX] {
        assert!(Outcome::status(code)
            .unwrap_err()
            .to_string()
            .contains(&code.to_string()));
    }
    assert!(Outcome::grpc(17).is_err() && Outcome::grpc(255).is_err());
}

#[test]
fn outcomes_slow_success_is_slow_call() {
    let mut b = breaker(Config {
        slow_call_duration: Some(S),
        ..Config::default()
    });
    let p = admit(&mut b, 0);
    assert!(
        !b.record(p, Outcome::Success, S).slow,
        "exactly the duration is not slow"
    );
    let p = admit(&mut b, S);
    assert!(b.record(p, Outcome::Success, 2 * S + 1).slow);
    let p = admit(&mut b, 3 * S);
    assert!(
        !b.record(p, status(503), 10 * S).slow,
        "only successes are slow"
    );
}

// ---- The window ----

#[test]
fn window_forgets_faults_older_than_window_plus_bucket() {
    let mut b = breaker(Config::default());
    calls(&mut b, 4, status(503), 0);
    assert_eq!(b.metrics(30 * S - 1).window.faults, 4);
    assert_eq!(b.metrics(30 * S).window.faults, 0);
    assert!(calls(&mut b, 1, status(503), 30 * S).is_empty());
}

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

#[test]
fn window_count_based_keeps_last_n_outcomes() {
    let mut b = breaker(Config {
        window_calls: Some(3),
        failure_threshold: 2,
        min_calls: 3,
        ..Config::default()
    });
    calls(&mut b, 1, status(503), 0);
    calls(&mut b, 3, Outcome::Success, 3600 * S);
    assert_eq!(
        b.metrics(3600 * S).window.faults,
        0,
        "pushed out by newer outcomes"
    );
    calls(&mut b, 1, status(503), 7200 * S);
    let t = calls(&mut b, 1, status(503), 7200 * S);
    assert_eq!(
        moves(&t),
        [(State::Closed, State::Open, Reason::FailureThreshold)]
    );
}

#[test]
fn window_trips_on_threshold_only_with_min_calls() {
    let mut b = breaker(Config {
        failure_threshold: 2,
        min_calls: 4,
        ..Config::default()
    });
    assert!(calls(&mut b, 3, status(503), 0).is_empty());
    let t = calls(&mut b, 1, Outcome::Success, 0);
    assert_eq!(
        moves(&t),
        [(State::Closed, State::Open, Reason::FailureThreshold)]
    );
}

#[test]
fn window_trips_on_failure_rate() {
    let mut b = breaker(Config {
        failure_rate: Some(25),
        failure_threshold: 100,
        min_calls: 8,
        ..Config::default()
    });
    calls(&mut b, 6, Outcome::Success, 0);
    assert!(calls(&mut b, 1, Outcome::Timeout, 0).is_empty());
    let t = calls(&mut b, 1, Outcome::Timeout, 0);
    assert_eq!(
        moves(&t),
        [(State::Closed, State::Open, Reason::FailureRate)]
    );
}

#[test]
fn window_trips_on_slow_call_rate() {
    let config = Config {
        slow_call_duration: Some(100 * MS),
        slow_call_rate: Some(50),
        failure_threshold: 100,
        min_calls: 4,
        ..Config::default()
    };
    let mut b = breaker(config);
    let mut last = Transitions::default();
    for i in 0..4u64 {
        let p = admit(&mut b, i * S);
        let took = if i % 2 == 0 { 10 * MS } else { 200 * MS };
        last = b.record(p, Outcome::Success, i * S + took).transitions;
    }
    assert_eq!(
        moves(&last),
        [(State::Closed, State::Open, Reason::SlowCallRate)]
    );
}

#[test]
fn window_hang_detection_trips_before_the_first_timeout() {
    let config = Config {
        slow_call_duration: Some(2 * S),
        failure_threshold: 5,
        ..Config::default()
    };
    let mut b = breaker(config);
    let hung: Vec<Permit> = (0..5).map(|_| admit(&mut b, 0)).collect();
    // Not yet: they have been out for less than slow-call-duration.
    assert!(b.acquire(2 * S - 1).decision.is_ok());
    assert_eq!(b.metrics(2 * S - 1).hung, 0);
    // Seen within slow-call-duration × 17/16, long before a 5 s timeout returns.
    let admission = b.acquire(2 * S + 2 * S / 16);
    assert_eq!(admission.decision.unwrap_err().reason, RejectReason::Open);
    assert_eq!(
        moves(&admission.transitions),
        [(State::Closed, State::Open, Reason::HungCalls)]
    );
    for p in hung {
        assert!(b.record(p, Outcome::Timeout, 5 * S).stale);
    }
}

#[test]
fn window_hang_detection_releases_calls_that_finish() {
    let config = Config {
        slow_call_duration: Some(S),
        failure_threshold: 3,
        ..Config::default()
    };
    let mut b = breaker(config);
    let permits: Vec<Permit> = (0..3).map(|_| admit(&mut b, 0)).collect();
    for p in permits {
        b.record(p, Outcome::Success, S / 2);
    }
    assert!(b.acquire(10 * S).decision.is_ok());
    assert_eq!(b.metrics(10 * S).hung, 0);
}

// ---- Open and cooldown ----

#[test]
fn open_cooldown_default_is_15_seconds() {
    let mut b = breaker(Config::default());
    tripped(&mut b, 0);
    assert_eq!(b.metrics(0).cooldown_remaining, 15 * S);
}

#[test]
fn open_backoff_multiplies_caps_and_resets_on_close() {
    let config = Config {
        backoff_factor: 3.0,
        max_cooldown: Some(100 * S),
        ..Config::default()
    };
    let mut b = breaker(config);
    tripped(&mut b, 0);
    let mut now = 0;
    for want in [45 * S, 100 * S, 100 * S] {
        now += b.metrics(now).cooldown_remaining;
        let probe = admit(&mut b, now);
        b.record(probe, Outcome::Timeout, now);
        assert_eq!(b.metrics(now).cooldown_remaining, want);
    }
    now += 100 * S;
    for _ in 0..2 {
        let probe = admit(&mut b, now);
        b.record(probe, Outcome::Success, now);
    }
    assert_eq!(b.state(now), State::Closed);
    tripped(&mut b, now);
    assert_eq!(b.metrics(now).cooldown_remaining, 15 * S);
}

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

// ---- Half-open and graduation ----

#[test]
fn half_open_probe_fault_reopens_and_restarts_cooldown() {
    let mut b = breaker(Config::default());
    tripped(&mut b, 0);
    let probe = admit(&mut b, 20 * S);
    let t = b.record(probe, status(502), 21 * S).transitions;
    assert_eq!(
        moves(&t),
        [(State::HalfOpen, State::Open, Reason::ProbeFault)]
    );
    assert_eq!(b.metrics(21 * S).cooldown_remaining, 15 * S);
}

#[test]
fn half_open_m_consecutive_successes_close_and_clear_window() {
    let mut b = breaker(Config {
        half_open_required_successes: 3,
        ..Config::default()
    });
    tripped(&mut b, 0);
    for i in 0..3 {
        let probe = admit(&mut b, 15 * S);
        let t = b.record(probe, Outcome::Success, 15 * S);
        assert_eq!(t.transitions.is_empty(), i < 2);
    }
    let m = b.metrics(15 * S);
    assert_eq!((m.state, m.window.calls), (State::Closed, 0));
}

#[test]
fn half_open_graduation_by_success_rate() {
    let config = Config {
        half_open_success_rate: Some(75),
        half_open_required_successes: 4,
        half_open_max_probes: 4,
        ..Config::default()
    };
    let mut b = breaker(config);
    tripped(&mut b, 0);
    let probes: Vec<Permit> = (0..4).map(|_| admit(&mut b, 15 * S)).collect();
    let outcomes = [
        Outcome::Success,
        status(500),
        Outcome::Success,
        Outcome::Success,
    ];
    let mut last = Transitions::default();
    for (p, o) in probes.into_iter().zip(outcomes) {
        last = b.record(p, o, 15 * S).transitions;
    }
    assert_eq!(
        moves(&last),
        [(State::HalfOpen, State::Closed, Reason::ProbesSucceeded)]
    );
}

#[test]
fn half_open_retired_probes_keep_their_slots_until_outcome_or_timeout() {
    // A re-open retires the round's probes, but their calls may still be at the upstream:
    // the next round admits only enough new probes to keep the upstream at K.
    let config = Config {
        half_open_max_probes: 2,
        cooldown: 5 * S,
        ..Config::default()
    };
    let mut b = breaker(config);
    tripped(&mut b, 0);
    let (failing, slow) = (admit(&mut b, 5 * S), admit(&mut b, 5 * S));
    b.record(failing, status(503), 5 * S);
    let admitted = (0..10)
        .filter(|_| b.acquire(10 * S).decision.is_ok())
        .count();
    assert_eq!(
        admitted, 1,
        "the slow probe of the last round still holds a slot"
    );
    let recorded = b.record(slow, Outcome::Success, 11 * S);
    assert!(recorded.stale && recorded.transitions.is_empty());
    assert_eq!(
        b.metrics(11 * S).probes_out,
        1,
        "its stale outcome released the slot"
    );
    assert!(b.acquire(11 * S).decision.is_ok());

    // Without an outcome, a retired probe holds its slot only until its probe-timeout.
    let mut b = breaker(config);
    tripped(&mut b, 0);
    let (failing, _leaked) = (admit(&mut b, 5 * S), admit(&mut b, 5 * S));
    b.record(failing, status(503), 5 * S);
    assert_eq!(b.metrics(20 * S - 1).probes_out, 1);
    assert_eq!(b.metrics(20 * S).probes_out, 0);
    assert_eq!(
        (0..10)
            .filter(|_| b.acquire(20 * S).decision.is_ok())
            .count(),
        2
    );
}

#[test]
fn half_open_leaked_probe_times_out_as_a_fault() {
    let mut b = breaker(Config::default());
    tripped(&mut b, 0);
    let _leaked = admit(&mut b, 15 * S);
    assert_eq!(b.state(30 * S - 1), State::HalfOpen);
    assert_eq!(b.state(30 * S), State::Open);
    let admission = b.acquire(30 * S);
    assert_eq!(
        moves(&admission.transitions),
        [(State::HalfOpen, State::Open, Reason::ProbeTimeout)]
    );
    assert_eq!(b.metrics(30 * S).faults_total, 6);
    assert!(admit(&mut b, 45 * S).is_probe(), "never wedged");
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

#[test]
fn config_every_violation_names_the_field_and_rule() {
    let d = Config::default();
    let cases: Vec<(Config, Field, &str)> = vec![
        (
            Config {
                failure_threshold: 0,
                ..d
            },
            Field::FailureThreshold,
            "failure-threshold must be >= 1",
        ),
        (
            Config { min_calls: 0, ..d },
            Field::MinCalls,
            "min-calls must be >= 1",
        ),
        (
            Config { window: 0, ..d },
            Field::Window,
            "window must be > 0",
        ),
        (
            Config { buckets: 0, ..d },
            Field::Buckets,
            "buckets must be between 1 and 64",
        ),
        (
            Config { buckets: 65, ..d },
            Field::Buckets,
            "buckets must be between 1 and 64",
        ),
        (
            Config {
                window: 5,
                buckets: 10,
                ..d
            },
            Field::Window,
            "window must be >= buckets",
        ),
        (
            Config {
                window_calls: Some(0),
                ..d
            },
            Field::WindowCalls,
            "window-calls must be between 1 and 1024",
        ),
        (
            Config {
                window_calls: Some(4),
                ..d
            },
            Field::WindowCalls,
            "window-calls must be >= min-calls",
        ),
        (
            Config { cooldown: 0, ..d },
            Field::Cooldown,
            "cooldown must be > 0",
        ),
        (
            Config {
                max_cooldown: Some(S),
                ..d
            },
            Field::MaxCooldown,
            "max-cooldown must be >= cooldown",
        ),
        (
            Config {
                backoff_factor: 0.5,
                ..d
            },
            Field::BackoffFactor,
            "backoff-factor must be a finite number",
        ),
        (
            Config {
                backoff_factor: f64::NAN,
                ..d
            },
            Field::BackoffFactor,
            "backoff-factor must be a finite number",
        ),
        (
            Config {
                jitter_percent: 101,
                ..d
            },
            Field::JitterPercent,
            "jitter-percent must be between 0 and 100",
        ),
        (
            Config {
                max_in_flight: Some(0),
                ..d
            },
            Field::MaxInFlight,
            "max-in-flight must be >= 1",
        ),
        (
            Config {
                half_open_max_probes: 0,
                ..d
            },
            Field::HalfOpenMaxProbes,
            "half-open-max-probes must be between 1 and 64",
        ),
        (
            Config {
                half_open_max_probes: 65,
                ..d
            },
            Field::HalfOpenMaxProbes,
            "half-open-max-probes must be between 1 and 64",
        ),
        (
            Config {
                half_open_required_successes: 0,
                ..d
            },
            Field::HalfOpenRequiredSuccesses,
            "half-open-required-successes must be >= 1",
        ),
        (
            Config {
                failure_rate: Some(0),
                ..d
            },
            Field::FailureRate,
            "failure-rate must be between 1 and 100",
        ),
        (
            Config {
                slow_call_rate: Some(101),
                ..d
            },
            Field::SlowCallRate,
            "slow-call-rate must be between 1 and 100",
        ),
        (
            Config {
                half_open_success_rate: Some(0),
                ..d
            },
            Field::HalfOpenSuccessRate,
            "half-open-success-rate must be between 1 and 100",
        ),
        (
            Config {
                slow_call_duration: Some(0),
                ..d
            },
            Field::SlowCallDuration,
            "slow-call-duration must be > 0",
        ),
        (
            Config {
                probe_timeout: 0,
                ..d
            },
            Field::ProbeTimeout,
            "probe-timeout must be > 0",
        ),
    ];
    for (config, field, message) in cases {
        let error = Breaker::new(config, 0).unwrap_err();
        assert_eq!(error.field, field);
        assert!(
            error.to_string().starts_with(message),
            "{error} vs {message}"
        );
    }
    assert_eq!(
        Breaker::new(
            Config {
                failure_threshold: 0,
                ..d
            },
            0
        )
        .unwrap_err()
        .rule,
        Rule::AtLeast(1)
    );
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

#[test]
fn observability_the_causing_call_reports_each_transition() {
    let mut b = breaker(Config::default());
    let t = calls(&mut b, 5, status(503), 0);
    assert_eq!(t.len(), 1);
    assert_eq!(
        b.acquire(15 * S).transitions.last().unwrap().reason,
        Reason::CooldownElapsed
    );
    assert_eq!(b.isolate(16 * S).last().unwrap().to, State::Isolated);
    assert!(b.isolate(16 * S).is_empty());
}

// ---- Export / import ----

fn export(b: &Breaker, now: u64) -> Vec<u8> {
    let mut buf = [0u8; MAX_EXPORT_LEN];
    let len = b.export(now, &mut buf).unwrap();
    buf[..len].to_vec()
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
fn snapshot_times_are_relative_across_clock_origins() {
    let mut b = Breaker::new(Config::default(), 1_000 * S).unwrap();
    tripped(&mut b, 1_000 * S);
    let bytes = export(&b, 1_010 * S);
    // A fresh isolate whose clock reads 1 s, 2 s after the export.
    let mut restored = Breaker::new(Config::default(), S).unwrap();
    restored.import(&bytes, 2 * S, S).unwrap();
    assert_eq!(restored.metrics(S).cooldown_remaining, 3 * S);
    assert_eq!(restored.state(4 * S), State::HalfOpen);
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

#[test]
fn snapshot_half_open_with_probes_comes_back_open() {
    let mut b = breaker(Config::default());
    tripped(&mut b, 0);
    let _probe = admit(&mut b, 15 * S);
    let bytes = export(&b, 20 * S);
    let mut restored = breaker(Config::default());
    restored.import(&bytes, 0, 20 * S).unwrap();
    let m = restored.metrics(20 * S);
    assert_eq!(
        (m.state, m.probes_out, m.cooldown_remaining),
        (State::Open, 0, 10 * S)
    );
    assert_eq!(m.last_transition.unwrap().reason, Reason::Restored);
}

#[test]
fn snapshot_import_retires_the_importers_own_permits() {
    let mut live = breaker(Config::default());
    let held: Vec<Permit> = (0..5).map(|_| admit(&mut live, 10 * S)).collect();
    let bytes = export(&breaker(Config::default()), 20 * S);
    live.import(&bytes, 0, 20 * S).unwrap();
    for permit in held {
        let recorded = live.record(permit, Outcome::Timeout, 21 * S);
        assert!(recorded.stale && recorded.transitions.is_empty());
    }
    let m = live.metrics(21 * S);
    assert_eq!((m.state, m.window.faults), (State::Closed, 0));
}

/// Exported bytes with the epoch replaced and the checksum made right again: what someone
/// who can write the stored state could craft.
fn with_epoch(bytes: &[u8], epoch: u64) -> Vec<u8> {
    // "TGB", version, window shape (11 bytes), state: then the epoch.
    let mut crafted = bytes.to_vec();
    crafted[16..24].copy_from_slice(&epoch.to_le_bytes());
    let body = crafted.len() - 4;
    let checksum = crafted[..body].iter().fold(0x811c_9dc5u32, |hash, &b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    crafted[body..].copy_from_slice(&checksum.to_le_bytes());
    crafted
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

// ---- The four failure modes ----

#[test]
fn failure_mode_1_pool_starvation_callers_fail_fast_once_tripped() {
    // A hang: calls never return. Hang detection trips before any timeout, and from then
    // on every caller is turned away at once without holding a worker.
    let config = Config {
        slow_call_duration: Some(S),
        ..Config::default()
    };
    let mut b = breaker(config);
    let hung: Vec<Permit> = (0..5).map(|_| admit(&mut b, 0)).collect();
    let mut rejected = 0;
    for i in 0..10_000u64 {
        if b.acquire(2 * S + i * MS / 10).decision.is_err() {
            rejected += 1;
        }
    }
    assert_eq!(rejected, 10_000);
    assert_eq!(
        b.metrics(3 * S).in_flight,
        0,
        "rejected callers hold nothing"
    );
    drop(hung);
}

#[test]
fn failure_mode_2_half_open_stampede_admits_exactly_k() {
    for k in [1u8, 3, 64] {
        let mut b = breaker(Config {
            half_open_max_probes: k,
            ..Config::default()
        });
        tripped(&mut b, 0);
        let admitted = (0..200)
            .filter(|_| b.acquire(15 * S).decision.is_ok())
            .count();
        assert_eq!(admitted, usize::from(k));
    }
}

#[test]
fn failure_mode_3_client_errors_never_trip() {
    for code in [404, 400, 401, 403, 422] {
        let mut b = breaker(Config::default());
        assert!(calls(&mut b, 20, status(code), 0).is_empty());
        assert_eq!(b.state(0), State::Closed);
    }
}

#[test]
fn failure_mode_4_old_faults_do_not_poison_the_breaker() {
    let mut b = breaker(Config::default());
    for hour in 0..5u64 {
        assert!(calls(&mut b, 1, Outcome::Timeout, hour * 3600 * S).is_empty());
    }
    assert_eq!(b.state(5 * 3600 * S), State::Closed);
}
