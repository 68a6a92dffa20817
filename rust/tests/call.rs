//! The native breaker's own API around the guarded call: its `call` methods, RAII
//! permits, config errors, the registry and export/import, on fake clocks. What every
//! host's breaker must do is the conformance suite's (`tests/tests/conformance.rs`).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tripgate::{
    Breaker, CallError, Class, Classify, CoarseClock, Config, FakeClock, Outcome, Registry,
    RejectReason, State, Status, SECOND,
};

type Fake = Arc<FakeClock>;

fn fake() -> (Breaker<Fake>, Fake) {
    let clock = Arc::new(FakeClock::new(0));
    (
        Breaker::with_clock(Config::default(), Arc::clone(&clock)).unwrap(),
        clock,
    )
}

#[test]
fn handles_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Breaker>();
    assert_send_sync::<Breaker<Fake>>();
    assert_send_sync::<tripgate::Permit<'static>>();
    assert_send_sync::<tripgate::OwnedPermit>();
    assert_send_sync::<Registry>();
}

#[test]
fn a_bad_config_is_refused_with_the_cores_words() {
    let bad = Config {
        failure_threshold: 0,
        ..Config::default()
    };
    let error = Breaker::new(bad).unwrap_err();
    assert_eq!(error.to_string(), "failure-threshold must be >= 1");
    let registry = Registry::new(CoarseClock::new(), Config::default());
    assert!(registry.get_or_create("bad", &bad).is_err());
    assert!(
        registry.names().is_empty(),
        "a refused config registers nothing"
    );
}

#[test]
fn a_dropped_permit_is_cancelled_and_a_recorded_one_counts_once() {
    let (breaker, _clock) = fake();
    let permit = breaker.acquire().unwrap();
    assert_eq!(breaker.metrics().in_flight, 1);
    drop(permit);
    let m = breaker.metrics();
    assert_eq!(
        (m.in_flight, m.window.calls),
        (0, 0),
        "cancelled counts as nothing"
    );

    let recorded = breaker.acquire().unwrap().record(Status(503).outcome());
    assert_eq!(recorded.class, Class::Fault);
    let m = breaker.metrics();
    assert_eq!((m.in_flight, m.faults_total, m.window.calls), (0, 1, 1));
}

/// The breaker's own `call`, `call_with` and `call_async` are the guarded call the
/// conformance suite checks (`tests/tests/conformance.rs`), with the classifier each names.
#[tokio::test(start_paused = true)]
async fn the_breakers_own_calls_are_the_guarded_call() {
    let (breaker, clock) = fake();
    let late = breaker.call(Duration::from_millis(100), || {
        clock.advance(SECOND / 5); // the call "takes" 200 ms on the breaker's clock
        Ok::<_, io::Error>(Status(200))
    });
    assert!(matches!(late, Err(CallError::Failed(Ok(Status(200))))));
    let custom = breaker.call_with(
        Duration::from_secs(1),
        || "busy",
        |reply| {
            if *reply == "busy" {
                Outcome::status(429).unwrap()
            } else {
                Outcome::Success
            }
        },
    );
    assert!(matches!(custom, Err(CallError::Failed("busy"))));
    let quick = breaker
        .call_async(Duration::from_secs(1), async { Status(201) })
        .await;
    assert!(matches!(quick, Ok(Status(201))));
    assert_eq!(breaker.metrics().faults_total, 2);
}

#[test]
fn the_registry_keeps_one_breaker_per_name() {
    let clock = Arc::new(FakeClock::new(0));
    let registry = Registry::new(Arc::clone(&clock), Config::default());
    let payments = registry.get("payments").unwrap();
    let strict = Config {
        failure_threshold: 1,
        min_calls: 1,
        ..Config::default()
    };
    let identity = registry.get_or_create("identity", &strict).unwrap();

    // Same name, same breaker: what one handle records, the other sees.
    let recorded = registry
        .get("payments")
        .unwrap()
        .acquire()
        .unwrap()
        .record(Outcome::status(503).unwrap());
    assert_eq!(recorded.class, Class::Fault);
    assert_eq!(payments.metrics().faults_total, 1);
    assert!(Arc::ptr_eq(&payments, &registry.get("payments").unwrap()));

    // Different names are independent, each with its own config.
    identity.acquire().unwrap().record(Outcome::Timeout);
    assert_eq!(identity.state(), State::Open);
    assert_eq!(payments.state(), State::Closed);
    // An existing breaker keeps its config.
    assert_eq!(
        registry.get("identity").unwrap().config().failure_threshold,
        1
    );

    assert_eq!(registry.names(), ["identity", "payments"]);
    let readings = registry.readings();
    assert!(readings.failed.is_empty());
    let names: Vec<&str> = readings
        .read
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(names, ["identity", "payments"]);
    assert_eq!(readings.read[0].1.metrics.state, State::Open);
    assert_eq!(readings.read[1].1.metrics.faults_total, 1);
    assert!(registry.remove("identity").is_some());
    assert_eq!(registry.names(), ["payments"]);
    // Handles already out keep working; they read the registry's clock.
    clock.advance(15 * SECOND);
    assert_eq!(identity.state(), State::HalfOpen);
}

#[test]
fn state_moves_between_breakers_with_export_and_import() {
    let (breaker, _clock) = fake();
    for _ in 0..5 {
        breaker.acquire().unwrap().record(Outcome::Timeout);
    }
    let bytes = breaker.export_state();
    let (fresh, _) = fake();
    fresh.import_state(&bytes, 5 * SECOND).unwrap();
    let rejection = fresh.acquire().unwrap_err();
    assert_eq!(
        (rejection.reason, rejection.retry_after),
        (RejectReason::Open, 10 * SECOND)
    );
    assert!(fresh.import_state(&bytes[..bytes.len() - 1], 0).is_err());
}

/// A reload reconfigures the registry's breakers by name: an existing one keeps its state
/// and takes the new rules, an absent one is made with the config, a bad config is refused
/// and changes nothing.
#[test]
fn the_registry_reconfigures_its_breakers_by_name() {
    let registry = Registry::new(Arc::new(FakeClock::new(0)), Config::default());
    let payments = registry.get("payments").unwrap();
    for _ in 0..2 {
        payments.acquire().unwrap().record(Outcome::Timeout);
    }
    let strict = Config {
        failure_threshold: 3,
        min_calls: 3,
        ..Config::default()
    };
    let done = registry.reconfigure("payments", &strict).unwrap();
    assert!(done.is_some_and(|done| done.window_kept));
    assert_eq!(payments.config().failure_threshold, 3);
    payments.acquire().unwrap().record(Outcome::Timeout);
    assert_eq!(
        payments.state(),
        State::Open,
        "the third fault, by the new rule"
    );

    assert!(registry.reconfigure("identity", &strict).unwrap().is_none());
    assert_eq!(registry.get("identity").unwrap().config(), strict);

    let bad = Config {
        min_calls: 0,
        ..Config::default()
    };
    let error = registry.reconfigure("identity", &bad).unwrap_err();
    assert_eq!(error.to_string(), "min-calls must be >= 1");
    assert_eq!(registry.get("identity").unwrap().config(), strict);
}
