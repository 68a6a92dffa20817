//! The tower layer around a real hyper client, against a real hyper server on 127.0.0.1.
//! The breaker's time is a fake clock; nothing sleeps.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};
use tower::{BoxError, ServiceBuilder, ServiceExt};
use tripgate::tower::{
    error_outcome_of, BudgetedRetry, CircuitBreakerLayer, CircuitBreakerService, Rejected,
};
use tripgate::{
    Breaker, Config, FakeClock, Outcome, RejectReason, RetryPolicy, State, MILLISECOND, SECOND,
};

type Fake = Arc<FakeClock>;
type Guarded = CircuitBreakerService<Client<HttpConnector, Empty<Bytes>>, Fake>;

/// The upstream: `/404`, `/503`, `/200` answer at once; `/hold` answers 200 once the
/// test adds a permit to `release`, after telling `arrived`.
struct Upstream {
    addr: SocketAddr,
    requests: AtomicUsize,
    arrived: Notify,
    release: Semaphore,
}

impl Upstream {
    async fn start() -> Arc<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream = Arc::new(Self {
            addr: listener.local_addr().unwrap(),
            requests: AtomicUsize::new(0),
            arrived: Notify::new(),
            release: Semaphore::new(0),
        });
        let server = Arc::clone(&upstream);
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let server = Arc::clone(&server);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let server = Arc::clone(&server);
                        async move { Ok::<_, Infallible>(server.answer(request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        upstream
    }

    async fn answer(&self, request: Request<Incoming>) -> Response<Empty<Bytes>> {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let status = match request.uri().path() {
            "/404" => StatusCode::NOT_FOUND,
            "/503" => StatusCode::SERVICE_UNAVAILABLE,
            "/503-for-a-minute" => {
                let mut response = Response::new(Empty::new());
                *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                let minute = hyper::header::HeaderValue::from_static("60");
                response
                    .headers_mut()
                    .insert(hyper::header::RETRY_AFTER, minute);
                return response;
            }
            "/hold" => {
                self.arrived.notify_one();
                self.release.acquire().await.unwrap().forget();
                StatusCode::OK
            }
            _ => StatusCode::OK,
        };
        let mut response = Response::new(Empty::new());
        *response.status_mut() = status;
        response
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

fn guarded(config: Config) -> (Guarded, Arc<Breaker<Fake>>, Fake) {
    let clock = Arc::new(FakeClock::new(0));
    let breaker = Arc::new(Breaker::with_clock(config, Arc::clone(&clock)).unwrap());
    let client = Client::builder(TokioExecutor::new()).build_http();
    let service = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(Arc::clone(&breaker)))
        .service(client);
    (service, breaker, clock)
}

async fn get(
    service: &Guarded,
    addr: SocketAddr,
    path: &str,
) -> Result<Response<Incoming>, BoxError> {
    let request = Request::get(format!("http://{addr}{path}"))
        .body(Empty::new())
        .unwrap();
    service.clone().oneshot(request).await
}

fn rejected(error: &BoxError) -> Rejected {
    *error
        .downcast_ref::<Rejected>()
        .unwrap_or_else(|| panic!("not a rejection: {error}"))
}

#[tokio::test]
async fn four_oh_fours_never_trip_five_oh_threes_do_and_open_sends_nothing() {
    let upstream = Upstream::start().await;
    let (service, breaker, clock) = guarded(Config::default());

    for _ in 0..20 {
        let response = get(&service, upstream.addr, "/404").await.unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }
    let m = breaker.metrics();
    assert_eq!(
        (m.state, m.successes_total, m.faults_total),
        (State::Closed, 20, 0)
    );

    // 503s pass through to the caller unchanged, and five of them trip the breaker.
    for _ in 0..5 {
        let response = get(&service, upstream.addr, "/503").await.unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(upstream.requests(), 25);

    // Open: every request fails at once with the rejection, and none is sent.
    clock.advance(5 * SECOND);
    for _ in 0..10 {
        let error = get(&service, upstream.addr, "/200").await.unwrap_err();
        let rejected = rejected(&error);
        assert_eq!(rejected.reason, RejectReason::Open);
        assert_eq!(rejected.retry_after, Duration::from_secs(10));
    }
    assert_eq!(upstream.requests(), 25, "no request reached the upstream");
    assert_eq!(breaker.metrics().rejected(RejectReason::Open), 10);
}

/// Trips `breaker` through the service and moves past the cooldown.
async fn to_half_open(
    service: &Guarded,
    breaker: &Breaker<Fake>,
    clock: &FakeClock,
    upstream: &Upstream,
) {
    for _ in 0..5 {
        get(service, upstream.addr, "/503").await.unwrap();
    }
    assert_eq!(breaker.state(), State::Open);
    clock.advance(15 * SECOND);
    assert_eq!(breaker.state(), State::HalfOpen);
}

#[tokio::test]
async fn exactly_one_probe_reaches_a_recovering_upstream() {
    let upstream = Upstream::start().await;
    let (service, breaker, clock) = guarded(Config::default());
    to_half_open(&service, &breaker, &clock, &upstream).await;
    let before = upstream.requests();

    // Twenty callers at once: one probe goes out and is held at the upstream.
    let callers: Vec<_> = (0..20)
        .map(|_| {
            let (service, addr) = (service.clone(), upstream.addr);
            tokio::spawn(async move { get(&service, addr, "/hold").await })
        })
        .collect();
    upstream.arrived.notified().await;
    // Every other caller is turned away while the probe is out (each is decided on its
    // task's first poll), before the probe is let go.
    while breaker.metrics().rejected(RejectReason::Probing) < 19 {
        tokio::task::yield_now().await;
    }
    let mut outcomes = Vec::new();
    upstream.release.add_permits(1);
    for caller in callers {
        outcomes.push(caller.await.unwrap());
    }
    let probes: Vec<_> = outcomes.iter().filter(|o| o.is_ok()).collect();
    assert_eq!(probes.len(), 1, "exactly one probe");
    assert_eq!(probes[0].as_ref().unwrap().status(), StatusCode::OK);
    for error in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert_eq!(rejected(error).reason, RejectReason::Probing);
    }
    assert_eq!(upstream.requests(), before + 1, "the others sent nothing");

    // One success of the two required: still half-open; a second probe closes it.
    assert_eq!(breaker.state(), State::HalfOpen);
    get(&service, upstream.addr, "/200").await.unwrap();
    assert_eq!(breaker.state(), State::Closed);
}

#[tokio::test]
async fn a_dropped_response_future_releases_its_permit() {
    let upstream = Upstream::start().await;
    let (service, breaker, clock) = guarded(Config::default());

    // Closed: the call is in flight while the upstream holds it, and not after the
    // caller drops its response future.
    let (svc, addr) = (service.clone(), upstream.addr);
    let call = tokio::spawn(async move { get(&svc, addr, "/hold").await });
    upstream.arrived.notified().await;
    assert_eq!(breaker.metrics().in_flight, 1);
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    let m = breaker.metrics();
    assert_eq!(
        (m.in_flight, m.window.calls),
        (0, 0),
        "cancelled counts as nothing"
    );

    // Half-open with its one probe slot taken: dropping the probe frees the slot at once,
    // long before its probe timeout, and the next caller is the new probe.
    to_half_open(&service, &breaker, &clock, &upstream).await;
    let (svc, addr) = (service.clone(), upstream.addr);
    let probe = tokio::spawn(async move { get(&svc, addr, "/hold").await });
    upstream.arrived.notified().await;
    assert_eq!(breaker.metrics().probes_out, 1);
    let error = get(&service, upstream.addr, "/200").await.unwrap_err();
    assert_eq!(rejected(&error).reason, RejectReason::Probing);
    probe.abort();
    assert!(probe.await.unwrap_err().is_cancelled());
    assert_eq!(breaker.metrics().probes_out, 0);
    let response = get(&service, upstream.addr, "/200").await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(breaker.metrics().successes_total, 1);
}

#[tokio::test]
async fn refused_connections_are_connection_faults_and_trip() {
    // A port that was just free: nothing listens on it.
    let addr = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let (service, breaker, _clock) = guarded(Config::default());
    for _ in 0..5 {
        let error = get(&service, addr, "/").await.unwrap_err();
        assert!(error.downcast_ref::<Rejected>().is_none());
        assert_eq!(error_outcome_of(&*error), Outcome::ConnectionError);
    }
    let m = breaker.metrics();
    assert_eq!((m.state, m.faults_total), (State::Open, 5));
    let error = get(&service, addr, "/").await.unwrap_err();
    assert_eq!(rejected(&error).reason, RejectReason::Open);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_inside_the_layer_is_a_timeout_fault() {
    let clock = Arc::new(FakeClock::new(0));
    let breaker = Arc::new(Breaker::with_clock(Config::default(), Arc::clone(&clock)).unwrap());
    // An upstream that never answers, behind tower's timeout (paused tokio time).
    let never = tower::service_fn(|_: Request<()>| {
        std::future::pending::<Result<Response<()>, Infallible>>()
    });
    let service = ServiceBuilder::new()
        .layer(CircuitBreakerLayer::new(Arc::clone(&breaker)))
        .timeout(Duration::from_secs(1))
        .service(never);
    for _ in 0..5 {
        let error = service.clone().oneshot(Request::new(())).await.unwrap_err();
        assert_eq!(error_outcome_of(&*error), Outcome::Timeout);
    }
    assert_eq!(breaker.metrics().faults_total, 5);
    assert_eq!(breaker.state(), State::Open);
}

/// The upstream's `Retry-After: 60` on the 503 that trips the breaker holds it open for
/// the minute (max-cooldown allows two), not the 15 s cooldown.
#[tokio::test]
async fn a_503_that_asks_for_a_minute_opens_the_breaker_for_a_minute() {
    let upstream = Upstream::start().await;
    let config = Config {
        max_cooldown: Some(120 * SECOND),
        ..Config::default()
    };
    let (service, breaker, clock) = guarded(config);
    for _ in 0..5 {
        let response = get(&service, upstream.addr, "/503-for-a-minute")
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    assert_eq!(breaker.state(), State::Open);
    clock.advance(30 * SECOND);
    let error = get(&service, upstream.addr, "/200").await.unwrap_err();
    assert_eq!(rejected(&error).retry_after, Duration::from_secs(30));
    clock.advance(30 * SECOND);
    assert_eq!(breaker.state(), State::HalfOpen);
}

/// Retries outside the layer, by the core's policy: a 503 is tried three times, each
/// attempt through the breaker; once five faults trip it, the breaker's rejection ends
/// the retries and nothing more reaches the upstream.
#[tokio::test]
async fn retries_pass_the_breaker_and_its_rejection_ends_them() {
    let upstream = Upstream::start().await;
    let clock = Arc::new(FakeClock::new(0));
    let breaker = Arc::new(Breaker::with_clock(Config::default(), Arc::clone(&clock)).unwrap());
    let policy = RetryPolicy {
        max_attempts: 3,
        base_delay: MILLISECOND,
        max_delay: 2 * MILLISECOND,
        budget_percent: 1000,
        min_retries_per_second: 0,
        seed: 5,
    };
    let retries = Arc::new(breaker.retries(policy).unwrap());
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let service = ServiceBuilder::new()
        .retry(BudgetedRetry::new(Arc::clone(&breaker), retries))
        .layer(CircuitBreakerLayer::new(Arc::clone(&breaker)))
        .service(client);
    let call = || {
        let request = Request::get(format!("http://{}/503", upstream.addr))
            .body(Empty::new())
            .unwrap();
        service.clone().oneshot(request)
    };
    let first = call().await.unwrap();
    assert_eq!(first.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(upstream.requests(), 3, "three attempts");
    let second = call().await.unwrap_err();
    assert_eq!(rejected(&second).reason, RejectReason::Open);
    assert_eq!(
        upstream.requests(),
        5,
        "the fifth fault tripped it: no sixth attempt"
    );
    let third = call().await.unwrap_err();
    assert_eq!(rejected(&third).reason, RejectReason::Open);
    assert_eq!(upstream.requests(), 5, "open: no attempt, no retry");
}
