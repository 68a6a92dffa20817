//! The guarded call (sync and async), RAII permits, classification, fallbacks, the
//! registry and transition listeners, all on fake clocks.

use std::io;
use std::sync::{Arc, Mutex};
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

fn refused() -> io::Result<Status> {
    Err(io::Error::from(io::ErrorKind::ConnectionRefused))
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

#[test]
fn sync_calls_classify_record_and_fall_back() {
    let (breaker, _clock) = fake();
    let budget = Duration::from_secs(1);
    // A 404 is the upstream answering: the value comes back, counted as a success.
    let ok = breaker.call(budget, || Ok::<_, io::Error>(Status(404)));
    assert_eq!(ok.unwrap().unwrap(), Status(404));
    // A 503 and a refused connection are faults: the caller gets the result to inspect.
    let failed = breaker.call(budget, || Ok::<_, io::Error>(Status(503)));
    assert!(matches!(failed, Err(CallError::Failed(Ok(Status(503))))));
    let fallback = breaker.call(budget, refused).unwrap_or_else(|error| {
        assert!(matches!(error, CallError::Failed(Err(_))));
        Ok(Status(299))
    });
    assert_eq!(fallback.unwrap(), Status(299));
    let m = breaker.metrics();
    assert_eq!((m.successes_total, m.faults_total), (1, 2));

    // Three more faults trip it; then the closure does not even run.
    for _ in 0..3 {
        let _ = breaker.call(budget, refused);
    }
    assert_eq!(breaker.state(), State::Open);
    let mut ran = false;
    let error = breaker
        .call(budget, || {
            ran = true;
            Ok::<_, io::Error>(Status(200))
        })
        .unwrap_err();
    assert!(!ran);
    let rejection = error.rejection().unwrap();
    assert_eq!(
        (rejection.reason, rejection.retry_after),
        (RejectReason::Open, 15 * SECOND)
    );
    assert_eq!(error.retry_after(), Some(Duration::from_secs(15)));
    assert_eq!(
        error.to_string(),
        "circuit breaker rejected the call (open, open); retry after 15s"
    );
}

#[test]
fn a_sync_call_past_its_budget_by_the_breakers_clock_is_a_timeout_fault() {
    let (breaker, clock) = fake();
    let late = breaker.call(Duration::from_millis(100), || {
        clock.advance(SECOND / 5); // the call "takes" 200 ms on the breaker's clock
        Ok::<_, io::Error>(Status(200))
    });
    assert!(matches!(late, Err(CallError::Failed(Ok(Status(200))))));
    assert_eq!(breaker.metrics().faults_total, 1);
    // Within budget, the same answer is a success.
    let on_time = breaker.call(Duration::from_millis(100), || {
        Ok::<_, io::Error>(Status(200))
    });
    assert!(on_time.is_ok());
    // A classifier of one's own.
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
}

#[test]
fn a_panicking_call_releases_its_permit() {
    let (breaker, _clock) = fake();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = breaker.call(Duration::from_secs(1), || -> Status {
            panic!("the client blew up")
        });
    }));
    assert!(result.is_err());
    let m = breaker.metrics();
    assert_eq!(
        (m.in_flight, m.window.calls),
        (0, 0),
        "released as cancelled"
    );
    // And the breaker still works.
    assert!(breaker.call(Duration::from_secs(1), || ()).is_ok());
}

#[tokio::test(start_paused = true)]
async fn async_calls_time_out_and_cancel_cleanly() {
    let (breaker, _clock) = fake();
    // Paused tokio time: the 10 s "hang" costs no wall time.
    let hung = breaker
        .call_async(Duration::from_secs(1), async {
            tokio::time::sleep(Duration::from_secs(10)).await;
            Ok::<_, io::Error>(Status(200))
        })
        .await;
    assert!(matches!(hung, Err(CallError::TimedOut(limit)) if limit == Duration::from_secs(1)));
    let m = breaker.metrics();
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
    let m = breaker.metrics();
    assert_eq!((m.in_flight, m.successes_total, m.faults_total), (0, 1, 1));
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
fn transitions_reach_the_listener_without_polling() {
    let clock = Arc::new(FakeClock::new(0));
    let breaker = Arc::new(Breaker::with_clock(Config::default(), Arc::clone(&clock)).unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (sink, inner) = (Arc::clone(&seen), Arc::clone(&breaker));
    breaker.on_transition(move |t| {
        // The listener may use the breaker: its lock is not held.
        let now = inner.state();
        sink.lock()
            .unwrap()
            .push(format!("{}->{} {} (now {now})", t.from, t.to, t.reason));
    });
    // `call` trips it; the cooldown passes on the next acquire; a dropped probe is
    // cancelled (no transition); two good probes close it; then a manual reset.
    for _ in 0..5 {
        let _ = breaker.call(Duration::from_secs(1), refused);
    }
    clock.advance(15 * SECOND);
    drop(breaker.acquire().unwrap());
    for _ in 0..2 {
        breaker.acquire().unwrap().record(Outcome::Success);
    }
    breaker.reset();
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
