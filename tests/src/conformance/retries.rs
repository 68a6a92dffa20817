//! The conformance checks of retries through a host's breaker (SPEC § Retries): the
//! policy's attempts, the budget, the breaker's rejection ending them, the upstream's
//! `Retry-After`, and an async call given up while it waits.

use std::cell::Cell;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use tripgate_core::retry::RetryPolicy;
use tripgate_core::{Config, Nanos, Outcome, State, MILLISECOND, SECOND};
use tripgate_host::call::CallError;
use tripgate_host::retry::{retrying, Retries};
use tripgate_host::{Classify, Clock, FakeClock, Judged, Status};

use super::{metrics, Host};

/// Retries that allow many per call, no floor, waits under 100 ms.
fn generous(now: Nanos) -> Retries {
    let policy = RetryPolicy {
        max_attempts: 3,
        base_delay: 10 * MILLISECOND,
        max_delay: 100 * MILLISECOND,
        budget_percent: 1000,
        min_retries_per_second: 0,
        seed: 1,
    };
    Retries::new(policy, now).expect("a valid policy")
}

fn refused() -> io::Result<Status> {
    Err(io::Error::from(io::ErrorKind::ConnectionRefused))
}

/// A fault is tried again up to `max-attempts`, waiting on the breaker's clock; when the
/// breaker trips during the retries, its rejection is the call's answer and nothing more
/// reaches the upstream.
pub fn retries_stop_at_the_policy_and_at_the_breaker<H: Host>(host: &H) {
    let clock = Arc::new(FakeClock::new(0));
    let breaker = host.breaker(&Config::default(), Arc::clone(&clock));
    let retries = generous(0);
    let ran = Cell::new(0);
    let f = || {
        ran.set(ran.get() + 1);
        refused()
    };
    let first = retrying(&breaker, &retries, Duration::from_secs(1), f, Judged::of);
    assert!(matches!(first, Err(CallError::Failed(Err(_)))));
    assert_eq!(ran.get(), 3, "three attempts");
    let waited = clock.now();
    assert!(
        waited > 0 && waited <= 200 * MILLISECOND,
        "waited {waited} ns"
    );
    let second = retrying(&breaker, &retries, Duration::from_secs(1), f, Judged::of);
    let rejection = second.unwrap_err();
    assert!(
        rejection.rejection().is_some(),
        "the breaker's answer: {rejection}"
    );
    assert_eq!(ran.get(), 5, "the fifth fault tripped it; no sixth attempt");
    assert_eq!(metrics(&breaker).state, State::Open);
}

/// No budget and no floor: a fault is not retried. A fault then a success answers with
/// the success.
pub fn the_budget_bounds_retries_and_a_success_ends_them<H: Host>(host: &H) {
    let clock = Arc::new(FakeClock::new(0));
    let breaker = host.breaker(&Config::default(), Arc::clone(&clock));
    let stingy = RetryPolicy {
        budget_percent: 0,
        min_retries_per_second: 0,
        ..RetryPolicy::default()
    };
    let none = Retries::new(stingy, 0).unwrap();
    let ran = Cell::new(0);
    let once = retrying(
        &breaker,
        &none,
        Duration::from_secs(1),
        || {
            ran.set(ran.get() + 1);
            refused()
        },
        Judged::of,
    );
    assert!(once.is_err());
    assert_eq!(ran.get(), 1, "no budget: no retry");
    let retries = generous(0);
    let flaky = Cell::new(0);
    let answer = retrying(
        &breaker,
        &retries,
        Duration::from_secs(1),
        || {
            flaky.set(flaky.get() + 1);
            if flaky.get() == 1 {
                Status(503)
            } else {
                Status(200)
            }
        },
        Judged::of,
    );
    assert_eq!(answer.unwrap(), Status(200));
    assert_eq!(flaky.get(), 2);
}

/// A 503 that asks for `retry_after`.
struct Asked(Nanos);

impl Classify for Asked {
    fn outcome(&self) -> Outcome {
        Outcome::ConnectionError
    }
    fn retry_after(&self) -> Nanos {
        self.0
    }
}

/// The upstream's Retry-After: a longer one than the drawn wait is waited; one longer
/// than `max-delay` ends the retries at once.
pub fn retries_wait_out_the_upstreams_retry_after<H: Host>(host: &H) {
    let clock = Arc::new(FakeClock::new(0));
    let breaker = host.breaker(&Config::default(), Arc::clone(&clock));
    let retries = generous(0);
    let ran = Cell::new(0);
    let ran = &ran;
    let asked = |after: Nanos| {
        move || {
            ran.set(ran.get() + 1);
            Asked(after)
        }
    };
    let _ = retrying(
        &breaker,
        &retries,
        Duration::from_secs(1),
        asked(90 * MILLISECOND),
        Judged::of,
    );
    assert_eq!(ran.get(), 3);
    assert_eq!(
        clock.now(),
        180 * MILLISECOND,
        "two waits of the asked 90 ms"
    );
    let _ = retrying(
        &breaker,
        &retries,
        Duration::from_secs(1),
        asked(SECOND),
        Judged::of,
    );
    assert_eq!(ran.get(), 4, "a stay-away past max-delay: no retry");
}

/// An async call retried after a fault, one given up by its caller while it waits
/// between attempts, and one given up with an attempt in flight: nothing is left in
/// flight, and the abandoned attempt counts nothing.
pub async fn async_retries_run_and_cancel_cleanly<H: Host>(host: &H) {
    let clock = Arc::new(FakeClock::new(0));
    let breaker = host.breaker(&Config::default(), Arc::clone(&clock));
    let retries = generous(0);
    let ran = Cell::new(0);
    let make = || {
        ran.set(ran.get() + 1);
        let status = if ran.get() == 1 { 503 } else { 200 };
        async move { Status(status) }
    };
    let answer = tripgate_host::retry::retrying_async(
        &breaker,
        &retries,
        Duration::from_secs(1),
        make,
        Judged::of,
    )
    .await;
    assert_eq!(answer.unwrap(), Status(200));
    let always = || async { Status(503) };
    let call = tripgate_host::retry::retrying_async(
        &breaker,
        &retries,
        Duration::from_secs(1),
        always,
        Judged::of,
    );
    tokio::select! {
        _ = call => panic!("three attempts with waits should not be done at once"),
        _ = tokio::time::sleep(Duration::from_nanos(1)) => {}
    }
    let m = metrics(&breaker);
    assert_eq!(
        (m.in_flight, m.faults_total),
        (0, 2),
        "the call given up in its wait left nothing out"
    );
    // Given up with an attempt in flight: the attempt is released as cancelled.
    let hang = || async {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Status(200)
    };
    let call = tripgate_host::retry::retrying_async(
        &breaker,
        &retries,
        Duration::from_secs(30),
        hang,
        Judged::of,
    );
    tokio::select! {
        _ = call => panic!("the attempt hangs for 10 s"),
        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
    }
    let m = metrics(&breaker);
    assert_eq!(
        (m.in_flight, m.faults_total, m.successes_total),
        (0, 2, 1),
        "the attempt given up in flight counts nothing and holds nothing"
    );
}
