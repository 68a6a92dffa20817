//! The guarded call (sync and async), classification, fallbacks, and the registry.

mod common;

use std::io;
use std::time::Duration;

use tripgate_wasmtime::{
    Breaker, CallError, Class, Classify, Config, Outcome, Registry, RejectReason, State, Status,
    SECOND,
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

#[test]
fn sync_calls_classify_record_and_fall_back() {
    let (runtime, _clock) = common::fake(0);
    let breaker = runtime.breaker(&Config::default()).unwrap();

    // A 404 is the upstream answering: the value comes back, counted as a success.
    let ok = breaker.call(Duration::from_secs(1), || Ok::<_, io::Error>(Status(404)));
    assert_eq!(ok.unwrap().unwrap(), Status(404));
    // A 503 and a refused connection are faults: the caller gets the result to inspect,
    // and a fallback is one `unwrap_or_else` away.
    let failed = breaker.call(Duration::from_secs(1), || Ok::<_, io::Error>(Status(503)));
    assert!(matches!(failed, Err(CallError::Failed(Ok(Status(503))))));
    let fallback = breaker
        .call(Duration::from_secs(1), refused)
        .unwrap_or_else(|error| {
            assert!(matches!(error, CallError::Failed(Err(_))));
            Ok(Status(299))
        });
    assert_eq!(fallback.unwrap(), Status(299));
    let m = breaker.metrics().unwrap();
    assert_eq!((m.successes_total, m.faults_total), (1, 2));

    // Three more faults trip it; then the closure does not even run.
    for _ in 0..3 {
        let _ = breaker.call(Duration::from_secs(1), refused);
    }
    assert_eq!(breaker.state().unwrap(), State::Open);
    let mut ran = false;
    let rejected = breaker.call(Duration::from_secs(1), || {
        ran = true;
        Ok::<_, io::Error>(Status(200))
    });
    let error = rejected.unwrap_err();
    let rejection = error.rejection().unwrap();
    assert_eq!(
        (rejection.reason, rejection.retry_after),
        (RejectReason::Open, 15 * SECOND)
    );
    assert!(!ran);
    // The same error, and the same words, as the native breaker's (the core's).
    assert_eq!(error.retry_after(), Some(Duration::from_secs(15)));
    assert_eq!(
        error.to_string(),
        "circuit breaker rejected the call (open, open); retry after 15s"
    );
}

#[test]
fn a_sync_call_past_its_budget_by_the_breakers_clock_is_a_timeout_fault() {
    let (runtime, clock) = common::fake(0);
    let breaker = runtime.breaker(&Config::default()).unwrap();
    // The call "takes" 200 ms on the breaker's fake clock, against a 100 ms budget: the
    // guarded call times it on the breaker's clock, not on the machine's.
    let late = breaker.call(Duration::from_millis(100), || {
        clock.advance(SECOND / 5);
        Ok::<_, io::Error>(Status(200))
    });
    assert!(matches!(late, Err(CallError::Failed(Ok(Status(200))))));
    assert_eq!(breaker.metrics().unwrap().faults_total, 1);
    // Within budget by that clock, the same answer is a success, however long the machine
    // took.
    let on_time = breaker.call(Duration::from_millis(100), || {
        std::thread::yield_now();
        Ok::<_, io::Error>(Status(200))
    });
    assert!(on_time.is_ok());
    assert_eq!(breaker.metrics().unwrap().faults_total, 1);
    // A custom classifier.
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
}

#[test]
fn a_panicking_call_releases_its_permit() {
    let (runtime, _clock) = common::fake(0);
    let breaker = runtime.breaker(&Config::default()).unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = breaker.call(Duration::from_secs(1), || -> Status {
            panic!("the client blew up")
        });
    }));
    assert!(result.is_err());
    let m = breaker.metrics().unwrap();
    assert_eq!(
        (m.in_flight, m.window.calls),
        (0, 0),
        "released as cancelled"
    );
}

#[tokio::test(start_paused = true)]
async fn async_calls_time_out_and_cancel_cleanly() {
    let (runtime, _clock) = common::fake(0);
    let breaker = runtime.breaker(&Config::default()).unwrap();

    // Paused tokio time: the 10 s "hang" costs no wall time.
    let hung = breaker
        .call_async(Duration::from_secs(1), async {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Ok::<_, io::Error>(Status(200))
        })
        .await;
    assert!(matches!(hung, Err(CallError::TimedOut(limit)) if limit == Duration::from_secs(1)));
    let m = breaker.metrics().unwrap();
    assert_eq!((m.faults_total, m.in_flight), (1, 0));

    let quick = breaker
        .call_async(Duration::from_secs(1), async {
            Ok::<_, io::Error>(Status(201))
        })
        .await;
    assert_eq!(quick.unwrap().unwrap(), Status(201));

    // The caller gives up on the guarded call itself: its permit is released as cancelled.
    let slow = breaker.call_async(Duration::from_secs(30), async {
        tokio::time::sleep(Duration::from_secs(20)).await;
        Ok::<_, io::Error>(Status(200))
    });
    tokio::select! {
        _ = slow => panic!("should not finish first"),
        _ = tokio::time::sleep(Duration::from_secs(2)) => {}
    }
    let m = breaker.metrics().unwrap();
    assert_eq!((m.in_flight, m.successes_total, m.faults_total), (0, 1, 1));
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

#[test]
fn transitions_reach_the_listener_without_polling() {
    use std::sync::{Arc, Mutex};
    let (runtime, clock) = common::fake(0);
    let breaker = runtime.breaker(&Config::default()).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let inner = breaker.clone();
    breaker.on_transition(move |t| {
        // The listener may use the breaker: the guest's lock is not held.
        let state = inner.state().unwrap();
        sink.lock()
            .unwrap()
            .push(format!("{}->{} {} (now {state})", t.from, t.to, t.reason));
    });
    // `call` trips it; the cooldown passes on the next acquire; a dropped probe is
    // cancelled (no transition); two good probes close it; then a manual reset.
    for _ in 0..5 {
        let _ = breaker.call(Duration::from_secs(1), refused);
    }
    clock.advance(15 * SECOND);
    drop(breaker.acquire().unwrap());
    for _ in 0..2 {
        let probe = breaker.acquire().unwrap().decision.unwrap();
        probe.record(Outcome::Success).unwrap();
    }
    breaker.reset().unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "closed->open failure-threshold (now open)",
            "open->half-open cooldown-elapsed (now half-open)",
            "half-open->closed probes-succeeded (now closed)",
            "closed->closed reset (now closed)",
        ]
    );
}
