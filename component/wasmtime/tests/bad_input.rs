//! No input traps the component: every invalid config, status and gRPC code, stale,
//! foreign and malformed permits, damaged snapshots and odd clocks come back as errors or
//! values, and the same instance answers correctly afterwards.

mod common;

use tripgate_core::OutcomeError;
use tripgate_wasmtime::{
    wit, Breaker, Class, Config, ConfigError, Instance, Outcome, RawPermit, RecordError, State,
    SECOND,
};

/// Every rule of the core's `Config::validate`, broken once.
// long: a table, one config per rule, each one line or a short struct
fn invalid_configs() -> Vec<Config> {
    let d = Config::default();
    vec![
        Config {
            failure_threshold: 0,
            ..d
        },
        Config { min_calls: 0, ..d },
        Config {
            failure_rate: Some(0),
            ..d
        },
        Config {
            failure_rate: Some(101),
            ..d
        },
        Config {
            slow_call_rate: Some(0),
            ..d
        },
        Config {
            slow_call_rate: Some(255),
            ..d
        },
        Config {
            slow_call_duration: Some(0),
            ..d
        },
        Config { window: 0, ..d },
        Config { buckets: 0, ..d },
        Config { buckets: 65, ..d },
        Config {
            window: 5,
            buckets: 10,
            ..d
        },
        Config {
            window_calls: Some(0),
            ..d
        },
        Config {
            window_calls: Some(1025),
            ..d
        },
        Config { cooldown: 0, ..d },
        Config {
            backoff_factor: 0.5,
            ..d
        },
        Config {
            backoff_factor: f64::NAN,
            ..d
        },
        Config {
            backoff_factor: f64::INFINITY,
            ..d
        },
        Config {
            backoff_factor: 1000.5,
            ..d
        },
        Config {
            max_cooldown: Some(SECOND),
            ..d
        },
        Config {
            jitter_percent: 101,
            ..d
        },
        Config {
            max_in_flight: Some(0),
            ..d
        },
        Config {
            slow_call_duration: Some(SECOND),
            max_in_flight: Some(4),
            ..d
        },
        Config {
            half_open_max_probes: 0,
            ..d
        },
        Config {
            half_open_max_probes: 65,
            ..d
        },
        Config {
            half_open_required_successes: 0,
            ..d
        },
        Config {
            half_open_success_rate: Some(0),
            ..d
        },
        Config {
            half_open_success_rate: Some(101),
            ..d
        },
        Config {
            probe_timeout: 0,
            ..d
        },
    ]
}

fn config_error(instance: &Instance, config: &Config) -> ConfigError {
    let error = instance.breaker(config).unwrap_err();
    error.downcast::<ConfigError>().expect("a ConfigError")
}

fn record_error(result: anyhow::Result<tripgate_wasmtime::Recorded>) -> RecordError {
    result
        .unwrap_err()
        .downcast::<RecordError>()
        .expect("a RecordError")
}

/// The same instance still trips, rejects and recovers exactly as it should.
fn still_answers(instance: &Instance, clock: &tripgate_wasmtime::FakeClock) {
    let breaker = instance.breaker(&Config::default()).unwrap();
    for _ in 0..5 {
        let permit = breaker.acquire().unwrap().decision.unwrap();
        permit.record(Outcome::Status(503)).unwrap();
    }
    let rejection = breaker.acquire().unwrap().decision.unwrap_err();
    assert_eq!(
        (rejection.state, rejection.retry_after),
        (State::Open, 15 * SECOND)
    );
    clock.advance(15 * SECOND);
    for _ in 0..2 {
        let probe = breaker.acquire().unwrap().decision.unwrap();
        assert!(probe.is_probe());
        probe.record(Outcome::Success).unwrap();
    }
    assert_eq!(breaker.state().unwrap(), State::Closed);
}

#[test]
fn every_invalid_config_is_a_typed_error_in_the_cores_words() {
    let (runtime, clock) = common::fake(0);
    let instance = runtime.instantiate().unwrap();
    let configs = invalid_configs();
    for config in &configs {
        let native = tripgate_core::Breaker::new(*config, 0).unwrap_err();
        let error = config_error(&instance, config);
        assert_eq!(error.field_name(), native.field.name(), "{config:?}");
        assert_eq!(error.to_string(), native.to_string(), "{config:?}");
        assert_eq!(error.rule, native.rule.to_string(), "{config:?}");
    }
    // A registry's error is the breaker's, in the same words.
    let registry = tripgate_wasmtime::Registry::new(runtime.clone(), Config::default());
    let bad = Config {
        failure_threshold: 0,
        ..Config::default()
    };
    let error = registry.get_or_create("payments", &bad).unwrap_err();
    assert_eq!(format!("{error:#}"), "failure-threshold must be >= 1");
    println!(
        "{} invalid configs refused with the core's field and words",
        configs.len()
    );
    still_answers(&instance, &clock);
}

#[test]
fn invalid_fault_code_lists_are_refused_by_the_component() {
    let (runtime, clock) = common::fake(0);
    let instance = runtime.instantiate().unwrap();
    let empty = || tripgate_wasmtime::wit::Config::default();
    // All defaults: fine.
    let breaker = instance.breaker_from_wit(&empty()).unwrap();
    assert_eq!(breaker.state().unwrap(), State::Closed);
    let cases = [
        (
            wit::Config {
                fault_statuses: Some(vec![503, 99]),
                ..empty()
            },
            "fault-statuses must be between 100 and 599",
        ),
        (
            wit::Config {
                fault_statuses: Some(vec![600]),
                ..empty()
            },
            "fault-statuses must be between 100 and 599",
        ),
        (
            wit::Config {
                fault_grpc_codes: Some(vec![14, 17]),
                ..empty()
            },
            "fault-grpc-codes must be between 0 and 16",
        ),
        (
            wit::Config {
                backoff_factor: Some(f64::NEG_INFINITY),
                ..empty()
            },
            "backoff-factor must be a finite number between 1 and 1000",
        ),
    ];
    for (config, words) in cases {
        let error = instance
            .breaker_from_wit(&config)
            .unwrap_err()
            .downcast::<ConfigError>()
            .unwrap();
        assert_eq!(error.to_string(), words);
    }
    // An empty list is valid: nothing is a fault.
    let lenient = instance
        .breaker_from_wit(&wit::Config {
            fault_statuses: Some(vec![]),
            ..empty()
        })
        .unwrap();
    let permit = lenient.acquire().unwrap().decision.unwrap();
    assert_eq!(
        permit.record(Outcome::Status(503)).unwrap().class,
        Class::Success
    );
    still_answers(&instance, &clock);
}

#[test]
fn invalid_outcomes_are_errors_and_release_the_permit() {
    let (runtime, clock) = common::fake(0);
    let instance = runtime.instantiate().unwrap();
    let breaker = instance.breaker(&Config::default()).unwrap();
    let bad = [
        (
            Outcome::Status(0),
            RecordError::Outcome(OutcomeError::Status(0)),
            "HTTP status 0 is outside 100-599",
        ),
        (
            Outcome::Status(99),
            RecordError::Outcome(OutcomeError::Status(99)),
            "HTTP status 99 is outside 100-599",
        ),
        (
            Outcome::Status(600),
            RecordError::Outcome(OutcomeError::Status(600)),
            "HTTP status 600 is outside 100-599",
        ),
        (
            Outcome::Status(u16::MAX),
            RecordError::Outcome(OutcomeError::Status(u16::MAX)),
            "HTTP status 65535 is outside 100-599",
        ),
        (
            Outcome::Grpc(17),
            RecordError::Outcome(OutcomeError::GrpcCode(17)),
            "gRPC code 17 is above 16",
        ),
        (
            Outcome::Grpc(u8::MAX),
            RecordError::Outcome(OutcomeError::GrpcCode(u8::MAX)),
            "gRPC code 255 is above 16",
        ),
    ];
    for (outcome, want, words) in bad {
        let permit = breaker.acquire().unwrap().decision.unwrap();
        let error = permit.record(outcome).unwrap_err();
        assert_eq!(error.to_string(), words);
        assert_eq!(record_error(Err(error)), want);
        // Nothing counted, and the permit is not left in flight.
        let m = breaker.metrics().unwrap();
        assert_eq!(
            (
                m.window.calls,
                m.in_flight,
                m.successes_total,
                m.faults_total
            ),
            (0, 0, 0, 0)
        );
    }
    // The same errors through the raw path leave the raw permit out: record it again.
    let raw = breaker.acquire_raw().unwrap().decision.unwrap();
    record_error(breaker.record_raw(raw, Outcome::Status(1000)));
    assert_eq!(breaker.metrics().unwrap().in_flight, 1);
    assert_eq!(
        breaker.record_raw(raw, Outcome::Status(200)).unwrap().class,
        Class::Success
    );
    assert_eq!(breaker.metrics().unwrap().in_flight, 0);
    still_answers(&instance, &clock);
}

/// A permit resource the guest releases itself (refused as foreign: no `now` comes with
/// the release) is released at its breaker's latest instant, wherever the clock's origin
/// is. Released at 0, which is ahead of a latest instant above 2⁶³, the breaker's clock
/// would jump to 0 and every later reading would be "from the past" for centuries. Found
/// by the `component` fuzz target.
#[test]
fn a_refused_permit_resource_is_released_at_its_breakers_latest_instant() {
    let start = u64::MAX - 10 * SECOND;
    let (mut store, tripgate) = common::bare();
    let api = tripgate.tripgate_breaker_circuit_breaker().breaker();
    let config = tripgate_wasmtime::wit::Config::default();
    let a = api
        .call_create(&mut store, &config, start)
        .unwrap()
        .unwrap();
    let b = api
        .call_create(&mut store, &config, start)
        .unwrap()
        .unwrap();
    let permit = api
        .call_acquire(&mut store, a, start)
        .unwrap()
        .decision
        .unwrap();
    let refused = api
        .call_record_outcome(&mut store, b, permit, Outcome::Success, start)
        .unwrap();
    assert_eq!(
        refused.unwrap_err(),
        tripgate_wasmtime::wit::RecordError::ForeignPermit
    );
    let m = api.call_metrics(&mut store, a, start + SECOND).unwrap();
    // The clock did not jump: one second in state, and the release counted nothing.
    assert_eq!((m.in_flight, m.time_in_state), (0, SECOND));
}

#[test]
fn stale_foreign_and_malformed_permits_never_trap() {
    let (runtime, clock) = common::fake(0);
    let instance = runtime.instantiate().unwrap();
    let a = instance.breaker(&Config::default()).unwrap();
    let b = instance.breaker(&Config::default()).unwrap();

    // Stale: the breaker changed state since the permit was issued.
    let old = a.acquire().unwrap().decision.unwrap();
    a.reset().unwrap();
    let recorded = old.record(Outcome::Status(503)).unwrap();
    assert!(recorded.stale);
    assert_eq!(a.metrics().unwrap().stale_total, 1);

    // Foreign, same instance or another: a raw permit of another breaker is stale there,
    // and stays out on its own breaker until recorded there.
    let elsewhere = runtime.breaker(&Config::default()).unwrap();
    let raw = a.acquire_raw().unwrap().decision.unwrap();
    for other in [&b, &elsewhere] {
        let recorded = other.record_raw(raw, Outcome::Status(503)).unwrap();
        assert!(recorded.stale);
        let m = other.metrics().unwrap();
        assert_eq!((m.window.calls, m.faults_total), (0, 0));
    }
    assert_eq!(a.metrics().unwrap().in_flight, 1);
    assert!(!a.record_raw(raw, Outcome::Success).unwrap().stale);
    assert_eq!(a.metrics().unwrap().in_flight, 0);

    // A permit that outlives every handle to its breaker still records.
    let c = instance.breaker(&Config::default()).unwrap();
    let permit = c.acquire().unwrap().decision.unwrap();
    drop(c);
    assert_eq!(
        permit.record(Outcome::Success).unwrap().class,
        Class::Success
    );

    // Raw permits: numbers from nowhere, and one recorded twice, are stale outcomes.
    let before = a.metrics().unwrap();
    for ticket in [0, 1, 12_345, (1 << 30) - 1, u64::from(u32::MAX), u64::MAX] {
        let forged = RawPermit::from_ticket(ticket);
        let recorded = a.record_raw(forged, Outcome::Failure).unwrap();
        assert!(recorded.stale, "ticket {ticket}");
    }
    let raw = a.acquire_raw().unwrap().decision.unwrap();
    assert!(!a.record_raw(raw, Outcome::Success).unwrap().stale);
    assert!(a.record_raw(raw, Outcome::Status(503)).unwrap().stale);
    let after = a.metrics().unwrap();
    assert_eq!(
        (after.faults_total, after.stale_total),
        (before.faults_total, before.stale_total + 7),
        "stale outcomes count nothing"
    );

    // Dropping permits releases them as cancelled.
    let held: Vec<_> = (0..3)
        .map(|_| a.acquire().unwrap().decision.unwrap())
        .collect();
    assert_eq!(a.metrics().unwrap().in_flight, 3);
    drop(held);
    assert_eq!(a.metrics().unwrap().in_flight, 0);
    still_answers(&instance, &clock);
}

#[test]
fn damaged_snapshots_and_odd_clocks_never_trap() {
    let (runtime, clock) = common::fake(10 * SECOND);
    let instance = runtime.instantiate().unwrap();
    let breaker = instance.breaker(&Config::default()).unwrap();
    let permit = breaker.acquire().unwrap().decision.unwrap();
    permit.record(Outcome::Status(503)).unwrap();
    let good = breaker.export_state().unwrap();
    let before = breaker.export_state().unwrap();

    let mut garbage: Vec<Vec<u8>> = vec![vec![], vec![0], b"TGB".to_vec(), vec![0xff; 4096]];
    garbage.push(good[..good.len() - 1].to_vec());
    let mut extra = good.clone();
    extra.push(0);
    garbage.push(extra);
    for i in 0..good.len() {
        let mut flipped = good.clone();
        flipped[i] ^= 0x5a;
        garbage.push(flipped);
    }
    let windowed = instance
        .breaker(&Config {
            window_calls: Some(10),
            ..Config::default()
        })
        .unwrap();
    for bytes in &garbage {
        let error = breaker.import_state(bytes, 0).unwrap_err();
        assert!(
            error.downcast_ref::<wit::SnapshotError>().is_some(),
            "{error:#}"
        );
    }
    // Another window shape refuses the bytes too.
    let error = windowed.import_state(&good, 0).unwrap_err();
    assert_eq!(
        error.downcast_ref::<wit::SnapshotError>().unwrap().kind,
        wit::SnapshotErrorKind::WindowShape
    );
    assert_eq!(
        breaker.export_state().unwrap(),
        before,
        "refused imports change nothing"
    );
    breaker.import_state(&good, u64::MAX).unwrap();

    // Clocks at the extremes and stepping back.
    for now in [0, u64::MAX, 1, u64::MAX - 1, 5] {
        clock.set(now);
        let admission = breaker.acquire().unwrap();
        drop(admission);
        breaker.metrics().unwrap();
        breaker.export_state().unwrap();
    }
    clock.set(0);
    let fresh: Breaker = instance.breaker(&Config::default()).unwrap();
    assert_eq!(fresh.state().unwrap(), State::Closed);
    still_answers(&instance, &clock);
}
