//! One conformance suite for every Rust host's breaker: what the guarded call
//! (`tripgate_host::call`) and its retries, the permits (on one thread and on many), live
//! reconfiguration and the transition listener must do on any [`HostBreaker`], run by
//! each host on its own breaker (the native breaker in `tests/tests/conformance.rs`, the
//! component in wasmtime in `component/wasmtime/tests/conformance.rs`) instead of a copy
//! of the tests per host.
//!
//! Each host gives a [`Host`]: how to make its breaker on a fake clock, and writes
//! `tripgate_vectors::conformance_tests!(its_host);` in a test file, which makes one test
//! per check here (a check added here runs on every host). Time moves only on the fake
//! clock (and on tokio's paused clock for the async call; the test file's crate needs
//! tokio with `macros`, `rt` and `test-util`).

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tripgate_core::{Class, Config, Metrics, Outcome, RejectReason, State, SECOND};
use tripgate_host::call::{guarded, guarded_async, CallError};
use tripgate_host::{Classify, FakeClock, HostBreaker, Status};

mod reconfigure;
mod retries;
mod threads;

pub use retries::{
    async_retries_run_and_cancel_cleanly, retries_stop_at_the_policy_and_at_the_breaker,
    retries_wait_out_the_upstreams_retry_after, the_budget_bounds_retries_and_a_success_ends_them,
};

pub use reconfigure::{
    a_live_breaker_takes_a_new_config_and_refuses_a_bad_one,
    shadow_permits_held_at_once_all_count_nothing,
};

pub use threads::{
    a_stampede_after_the_cooldown_admits_exactly_k, no_outcome_is_lost_under_contention,
    threads_never_put_more_than_k_probes_inside,
};

/// A host under test: its breaker, made on a fake clock.
pub trait Host {
    /// The host's breaker.
    type Breaker: HostBreaker + Send + Sync + 'static;
    /// A breaker with `config` whose clock is `clock`.
    fn breaker(&self, config: &Config, clock: Arc<FakeClock>) -> Self::Breaker;
}

/// A breaker with the default config on a fake clock at 0, and the clock.
fn made<H: Host>(host: &H) -> (H::Breaker, Arc<FakeClock>) {
    let clock = Arc::new(FakeClock::new(0));
    (host.breaker(&Config::default(), Arc::clone(&clock)), clock)
}

pub(crate) fn metrics<B: HostBreaker>(breaker: &B) -> Metrics {
    breaker.reading().expect("the breaker answers").metrics
}

fn call<B: HostBreaker, R: Classify>(
    breaker: &B,
    f: impl FnOnce() -> R,
) -> Result<R, CallError<R, B::Error>> {
    guarded(breaker, Duration::from_secs(1), f, R::outcome)
}

fn refused() -> io::Result<Status> {
    Err(io::Error::from(io::ErrorKind::ConnectionRefused))
}

/// A 404 is a success, a 503 and a refused connection are faults the caller gets back to
/// inspect (a fallback is one `unwrap_or_else` away); five faults open the breaker, which
/// then turns calls away without running them, with the core's words.
pub fn calls_classify_record_and_fall_back<H: Host>(host: &H) {
    let (breaker, _clock) = made(host);
    let ok = call(&breaker, || Ok::<_, io::Error>(Status(404)));
    assert_eq!(ok.unwrap().unwrap(), Status(404));
    let failed = call(&breaker, || Ok::<_, io::Error>(Status(503)));
    assert!(matches!(failed, Err(CallError::Failed(Ok(Status(503))))));
    let fallback = call(&breaker, refused).unwrap_or_else(|error| {
        assert!(matches!(error, CallError::Failed(Err(_))));
        Ok(Status(299))
    });
    assert_eq!(fallback.unwrap(), Status(299));
    let m = metrics(&breaker);
    assert_eq!((m.successes_total, m.faults_total), (1, 2));
    for _ in 0..3 {
        let _ = call(&breaker, refused);
    }
    assert_eq!(metrics(&breaker).state, State::Open);
    let mut ran = false;
    let error = call(&breaker, || {
        ran = true;
        Ok::<_, io::Error>(Status(200))
    })
    .unwrap_err();
    assert!(!ran, "a call turned away does not run");
    let rejection = error.rejection().expect("turned away");
    assert_eq!(rejection.reason, RejectReason::Open);
    assert_eq!(error.retry_after(), Some(Duration::from_secs(15)));
    assert_eq!(
        error.to_string(),
        "circuit breaker rejected the call (open, open); retry after 15s"
    );
}

/// A synchronous call that "takes" 200 ms on the breaker's clock against a 100 ms budget
/// is a timeout fault, however quickly the machine ran it; within budget by that clock,
/// the same answer is a success.
pub fn a_sync_call_past_its_budget_by_the_breakers_clock_is_a_timeout_fault<H: Host>(host: &H) {
    let (breaker, clock) = made(host);
    let budget = Duration::from_millis(100);
    let late = guarded(
        &breaker,
        budget,
        || {
            clock.advance(SECOND / 5);
            Status(200)
        },
        Status::outcome,
    );
    assert!(matches!(late, Err(CallError::Failed(Status(200)))));
    assert_eq!(metrics(&breaker).faults_total, 1);
    let in_time = guarded(&breaker, budget, || Status(200), Status::outcome);
    assert!(matches!(in_time, Ok(Status(200))));
}

/// A call that panics releases its permit as `cancelled` while the panic unwinds, and the
/// breaker carries on.
pub fn a_panicking_call_releases_its_permit<H: Host>(host: &H) {
    let (breaker, _clock) = made(host);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = call(&breaker, || -> Status { panic!("the client blew up") });
    }));
    assert!(result.is_err());
    let m = metrics(&breaker);
    assert_eq!(
        (m.in_flight, m.window.calls),
        (0, 0),
        "released as cancelled"
    );
    assert!(call(&breaker, || ()).is_ok());
}

/// An async call past its budget is dropped and counted a timeout fault; a quick one is a
/// success; one the caller gives up on is released as cancelled. Run it on tokio's paused
/// clock: the hangs cost no wall time.
pub async fn async_calls_time_out_and_cancel_cleanly<H: Host>(host: &H) {
    let (breaker, _clock) = made(host);
    let budget = Duration::from_secs(1);
    let hang = async {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok::<_, io::Error>(Status(200))
    };
    let hung = guarded_async(&breaker, budget, hang, Classify::outcome).await;
    assert!(matches!(hung, Err(CallError::TimedOut(limit)) if limit == budget));
    let m = metrics(&breaker);
    assert_eq!((m.faults_total, m.in_flight), (1, 0));
    let quick = async { Ok::<_, io::Error>(Status(201)) };
    let quick = guarded_async(&breaker, budget, quick, Classify::outcome).await;
    assert_eq!(quick.ok().map(Result::unwrap), Some(Status(201)));
    let slow = guarded_async(
        &breaker,
        Duration::from_secs(30),
        async {
            tokio::time::sleep(Duration::from_secs(20)).await;
            Ok::<_, io::Error>(Status(200))
        },
        Classify::outcome,
    );
    tokio::select! {
        _ = slow => panic!("the slow call should not finish first"),
        _ = tokio::time::sleep(Duration::from_secs(2)) => {}
    }
    let m = metrics(&breaker);
    assert_eq!((m.in_flight, m.successes_total, m.faults_total), (0, 1, 1));
}

/// Transitions reach the breaker's listener as they happen, and the listener may use the
/// breaker (its lock is not held): a trip by guarded calls, the cooldown passing, a
/// dropped probe (cancelled: no transition), two good probes closing it.
pub fn transitions_reach_the_listener_without_polling<H: Host>(host: &H) {
    let clock = Arc::new(FakeClock::new(0));
    let breaker = Arc::new(host.breaker(&Config::default(), Arc::clone(&clock)));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (sink, inner) = (Arc::clone(&seen), Arc::clone(&breaker));
    breaker.listeners().set(move |t| {
        let now = metrics(&*inner).state;
        sink.lock()
            .unwrap()
            .push(format!("{}->{} {} (now {now})", t.from, t.to, t.reason));
    });
    for _ in 0..5 {
        let _ = call(&*breaker, refused);
    }
    clock.advance(15 * SECOND);
    drop(breaker.admit().unwrap().unwrap());
    for _ in 0..2 {
        let permit = breaker.admit().unwrap().unwrap();
        assert_eq!(
            breaker.settle(permit, Outcome::Success).unwrap(),
            Class::Success
        );
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "closed->open failure-threshold (now open)",
            "open->half-open cooldown-elapsed (now half-open)",
            "half-open->closed probes-succeeded (now closed)",
        ]
    );
}

/// One test per check of the suite, on `$host` (a [`Host`]).
#[macro_export]
macro_rules! conformance_tests {
    ($host:expr) => {
        #[test]
        fn calls_classify_record_and_fall_back() {
            $crate::conformance::calls_classify_record_and_fall_back(&$host);
        }

        #[test]
        fn a_sync_call_past_its_budget_by_the_breakers_clock_is_a_timeout_fault() {
            $crate::conformance::a_sync_call_past_its_budget_by_the_breakers_clock_is_a_timeout_fault(&$host);
        }

        #[test]
        fn a_panicking_call_releases_its_permit() {
            $crate::conformance::a_panicking_call_releases_its_permit(&$host);
        }

        #[tokio::test(start_paused = true)]
        async fn async_calls_time_out_and_cancel_cleanly() {
            $crate::conformance::async_calls_time_out_and_cancel_cleanly(&$host).await;
        }

        #[test]
        fn a_live_breaker_takes_a_new_config_and_refuses_a_bad_one() {
            $crate::conformance::a_live_breaker_takes_a_new_config_and_refuses_a_bad_one(&$host);
        }

        #[test]
        fn shadow_permits_held_at_once_all_count_nothing() {
            $crate::conformance::shadow_permits_held_at_once_all_count_nothing(&$host);
        }

        #[test]
        fn retries_stop_at_the_policy_and_at_the_breaker() {
            $crate::conformance::retries_stop_at_the_policy_and_at_the_breaker(&$host);
        }

        #[test]
        fn the_budget_bounds_retries_and_a_success_ends_them() {
            $crate::conformance::the_budget_bounds_retries_and_a_success_ends_them(&$host);
        }

        #[test]
        fn retries_wait_out_the_upstreams_retry_after() {
            $crate::conformance::retries_wait_out_the_upstreams_retry_after(&$host);
        }

        #[tokio::test(start_paused = true)]
        async fn async_retries_run_and_cancel_cleanly() {
            $crate::conformance::async_retries_run_and_cancel_cleanly(&$host).await;
        }

        #[test]
        fn threads_never_put_more_than_k_probes_inside() {
            $crate::conformance::threads_never_put_more_than_k_probes_inside(&$host);
        }

        #[test]
        fn a_stampede_after_the_cooldown_admits_exactly_k() {
            $crate::conformance::a_stampede_after_the_cooldown_admits_exactly_k(&$host);
        }

        #[test]
        fn no_outcome_is_lost_under_contention() {
            $crate::conformance::no_outcome_is_lost_under_contention(&$host);
        }

        #[test]
        fn transitions_reach_the_listener_without_polling() {
            $crate::conformance::transitions_reach_the_listener_without_polling(&$host);
        }
    };
}
