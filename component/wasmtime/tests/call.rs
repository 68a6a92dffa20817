//! The component breaker's own API around the guarded call: its `call` methods,
//! classification and the registry. What every host's breaker must do is the conformance
//! suite's (`tests/conformance.rs`).

mod common;

use std::io;
use std::time::Duration;

use tripgate_wasmtime::{
    Breaker, CallError, Class, Classify, Config, Outcome, Registry, State, Status, SECOND,
};

fn refused() -> io::Result<Status> {
    Err(io::Error::from(io::ErrorKind::ConnectionRefused))
}

#[test]
fn handles_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<tripgate_wasmtime::Runtime>();
    assert_send_sync::<tripgate_wasmtime::Instance>();
    assert_send_sync::<Breaker>();
    assert_send_sync::<tripgate_wasmtime::Permit>();
    assert_send_sync::<Registry>();
}

#[test]
fn io_errors_and_statuses_classify_as_a_caller_would_expect() {
    // The core's rules: this host converts the core's outcome into the WIT's.
    use io::ErrorKind as K;
    use tripgate_wasmtime::tripgate_core::Outcome;
    for kind in [
        K::ConnectionRefused,
        K::ConnectionReset,
        K::ConnectionAborted,
        K::BrokenPipe,
    ] {
        assert_eq!(
            io::Error::from(kind).outcome(),
            Outcome::ConnectionError,
            "{kind:?}"
        );
    }
    assert_eq!(K::TimedOut.outcome(), Outcome::Timeout);
    assert_eq!(K::Interrupted.outcome(), Outcome::Cancelled);
    assert_eq!(K::PermissionDenied.outcome(), Outcome::Failure);
    assert_eq!(
        Ok::<_, io::Error>(Status(404)).outcome(),
        Outcome::status(404).unwrap()
    );
    assert_eq!(refused().outcome(), Outcome::ConnectionError);
    assert_eq!(
        tripgate_wasmtime::Outcome::from(Outcome::status(404).unwrap()),
        tripgate_wasmtime::Outcome::Status(404)
    );
}

/// The breaker's own `call`, `call_with` and `call_async` are the guarded call the
/// conformance suite checks (tests/conformance.rs), with the classifier each names.
#[tokio::test(start_paused = true)]
async fn the_breakers_own_calls_are_the_guarded_call() {
    let (runtime, clock) = common::fake(0);
    let breaker = runtime.breaker(&Config::default()).unwrap();
    let late = breaker.call(Duration::from_millis(100), || {
        clock.advance(SECOND / 5);
        Ok::<_, io::Error>(Status(200))
    });
    assert!(matches!(late, Err(CallError::Failed(Ok(Status(200))))));
    let custom = breaker.call_with(
        Duration::from_secs(1),
        || "busy",
        |r| {
            if *r == "busy" {
                tripgate_core::Outcome::status(429).unwrap()
            } else {
                tripgate_core::Outcome::Success
            }
        },
    );
    assert!(matches!(custom, Err(CallError::Failed("busy"))));
    let quick = breaker
        .call_async(Duration::from_secs(1), async { Status(201) })
        .await;
    assert!(matches!(quick, Ok(Status(201))));
    assert_eq!(breaker.metrics().unwrap().faults_total, 2);
}

#[test]
fn the_registry_keeps_one_breaker_per_name() {
    let (runtime, _clock) = common::fake(0);
    let registry = Registry::new(runtime, Config::default());
    let payments = registry.get("payments").unwrap();
    let strict = Config {
        failure_threshold: 1,
        min_calls: 1,
        ..Config::default()
    };
    let identity = registry.get_or_create("identity", &strict).unwrap();

    // Same name, same breaker: what one handle records, the other sees.
    let permit = registry
        .get("payments")
        .unwrap()
        .acquire()
        .unwrap()
        .decision
        .unwrap();
    assert_eq!(
        permit.record(Outcome::Status(503)).unwrap().class,
        Class::Fault
    );
    assert_eq!(payments.metrics().unwrap().faults_total, 1);

    // Different names are independent, each with its own config.
    let permit = identity.acquire().unwrap().decision.unwrap();
    permit.record(Outcome::Timeout).unwrap();
    assert_eq!(identity.state().unwrap(), State::Open);
    assert_eq!(payments.state().unwrap(), State::Closed);

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
}
