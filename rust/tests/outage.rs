//! The breaker never becomes the outage through the user's own code: a listener that
//! panics, an error whose chain of causes loops, a timeout placed where it cannot be seen.

use std::error::Error;
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tower::{ServiceBuilder, ServiceExt};
use tripgate::tower::{error_outcome_of, CircuitBreakerLayer};
use tripgate::{error_outcome, Breaker, Config, FakeClock, Outcome, State, SECOND};

fn open_breaker(clock: &Arc<FakeClock>) -> Breaker<Arc<FakeClock>> {
    let config = Config {
        failure_threshold: 1,
        min_calls: 1,
        cooldown: SECOND,
        probe_timeout: SECOND,
        half_open_required_successes: 1,
        ..Config::default()
    };
    let breaker = Breaker::with_clock(config, Arc::clone(clock)).unwrap();
    breaker.acquire().unwrap().record(Outcome::Timeout);
    assert_eq!(breaker.state(), State::Open);
    breaker
}

/// A listener that panics on open → half-open, inside the `acquire` that admits the
/// probe: the probe is still handed out, and recording it closes the breaker. (The panic
/// used to unwind out of `acquire` before the permit existed, leaking the probe: every
/// caller was rejected as `probing` until the probe timeout re-opened the breaker.)
#[test]
fn a_panicking_listener_leaks_no_probe() {
    let clock = Arc::new(FakeClock::new(0));
    let breaker = open_breaker(&clock);
    breaker.on_transition(|t| {
        if t.to == State::HalfOpen {
            panic!("a listener bug");
        }
    });
    clock.advance(SECOND);
    let probe = breaker.acquire().expect("the probe is admitted");
    assert!(probe.is_probe());
    assert_eq!(breaker.listener_panics(), 1);
    assert_eq!(breaker.metrics().probes_out, 1);
    probe.record(Outcome::Success);
    assert_eq!(breaker.state(), State::Closed);
    // With `acquire_owned` too.
    let breaker = Arc::new(open_breaker(&clock));
    breaker.on_transition(|_| panic!("a listener bug"));
    clock.advance(SECOND);
    let probe = breaker.acquire_owned().expect("the probe is admitted");
    probe.record(Outcome::Success);
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(breaker.listener_panics(), 2, "half-open, then closed");
}

/// A guarded call's closure panics; the permit dropped during the unwind settles a probe
/// round past its timeout (a transition); the listener panics on it. That second panic,
/// in a destructor during an unwind, aborted the process. Run in a child process, so that
/// an abort fails this test instead of killing the test binary.
#[test]
fn a_listener_panic_while_a_call_unwinds_does_not_abort() {
    if std::env::var_os("TRIPGATE_UNWIND_CHILD").is_some() {
        // The panics are the test's own: keep them off the log.
        std::panic::set_hook(Box::new(|_| {}));
        let clock = Arc::new(FakeClock::new(0));
        let breaker = open_breaker(&clock);
        let told = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&told);
        breaker.on_transition(move |_| {
            seen.fetch_add(1, Ordering::SeqCst);
            panic!("a listener bug");
        });
        clock.advance(SECOND);
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            breaker.call(Duration::from_secs(1), || -> Result<(), io::Error> {
                clock.advance(2 * SECOND); // the probe outlives its timeout
                panic!("the call's own bug")
            })
        }));
        assert!(unwound.is_err(), "the call's panic reaches its caller");
        assert!(told.load(Ordering::SeqCst) >= 2, "the listener was told");
        assert_eq!(
            breaker.state(),
            State::HalfOpen,
            "re-opened, then half-open"
        );
        return;
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_listener_panic_while_a_call_unwinds_does_not_abort",
            "--nocapture",
        ])
        .env("TRIPGATE_UNWIND_CHILD", "1")
        .status()
        .unwrap();
    assert!(status.success(), "the child ended with {status}");
}

/// An error whose `source()` is itself.
#[derive(Debug)]
struct Loop;

impl fmt::Display for Loop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a loop")
    }
}

impl Error for Loop {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(self)
    }
}

/// An error that wraps `inner` one level down.
#[derive(Debug)]
struct Wrap(Box<dyn Error + Send + Sync>);

impl fmt::Display for Wrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("wrapped")
    }
}

impl Error for Wrap {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.0)
    }
}

fn wrapped(levels: usize) -> Box<dyn Error + Send + Sync> {
    let mut error: Box<dyn Error + Send + Sync> =
        Box::new(io::Error::from(io::ErrorKind::ConnectionRefused));
    for _ in 1..levels {
        error = Box::new(Wrap(error));
    }
    error
}

/// A chain of causes that loops back on itself is followed at most `MAX_CAUSES` errors
/// deep, so classifying it ends (it never did); a cause within that depth is found, one
/// past it is not.
#[test]
fn error_chains_are_followed_a_bounded_depth() {
    assert_eq!(tripgate_core::MAX_CAUSES, 8);
    assert_eq!(error_outcome_of(&Loop), Outcome::Failure);
    assert_eq!(error_outcome(&Loop, |_| false), Outcome::Failure);
    assert_eq!(error_outcome_of(&*wrapped(8)), Outcome::ConnectionError);
    assert_eq!(error_outcome_of(&*wrapped(9)), Outcome::Failure);
}

/// The same loop through the tower layer: the request settles (as a `failure`).
#[tokio::test]
async fn a_service_error_that_loops_settles_through_the_layer() {
    let breaker = Arc::new(Breaker::new(Config::default()).unwrap());
    let service = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(Arc::clone(&breaker)))
        .service(tower::service_fn(|_: http::Request<()>| async {
            Err::<http::Response<()>, _>(Loop)
        }));
    let result = service.oneshot(http::Request::new(())).await;
    assert!(result.is_err());
    assert_eq!(breaker.metrics().faults_total, 1);
}

/// Where a tower timeout goes: inside the breaker's layer, its `Elapsed` error reaches
/// the breaker as a `timeout` fault, and a hanging upstream trips the breaker; outside,
/// the timeout drops the breaker's response future, which records `cancelled`, and the
/// breaker never learns of the hang. The module docs show the first order.
#[tokio::test(start_paused = true)]
async fn a_timeout_inside_the_layer_trips_the_breaker_and_one_outside_cannot() {
    let hang = || {
        tower::service_fn(|_: http::Request<()>| async {
            std::future::pending::<Result<http::Response<()>, io::Error>>().await
        })
    };
    let inside = Arc::new(Breaker::new(Config::default()).unwrap());
    let outside = Arc::new(Breaker::new(Config::default()).unwrap());
    for _ in 0..5 {
        let right = ServiceBuilder::new()
            .layer(CircuitBreakerLayer::new(Arc::clone(&inside)))
            .timeout(Duration::from_millis(100))
            .service(hang());
        assert!(right.oneshot(http::Request::new(())).await.is_err());
        let wrong = ServiceBuilder::new()
            .timeout(Duration::from_millis(100))
            .layer(CircuitBreakerLayer::new(Arc::clone(&outside)))
            .service(hang());
        assert!(wrong.oneshot(http::Request::new(())).await.is_err());
    }
    assert_eq!(inside.state(), State::Open, "five timeouts: tripped");
    let m = outside.metrics();
    assert_eq!(
        (m.state, m.faults_total, m.successes_total),
        (State::Closed, 0, 0),
        "only cancellations: the hang is invisible"
    );
}
