//! A `tower` layer: every request through a service passes the breaker.
//!
//! ```
//! use std::sync::Arc;
//! use tower::{ServiceBuilder, ServiceExt};
//! use tripgate::{tower::CircuitBreakerLayer, Breaker, Config};
//!
//! # async fn demo() -> Result<(), tower::BoxError> {
//! let breaker = Arc::new(Breaker::new(Config::default())?);
//! let upstream = tower::service_fn(|_request: http::Request<()>| async {
//!     Ok::<_, std::io::Error>(http::Response::new("hello"))
//! });
//! let client = ServiceBuilder::new()
//!     .layer(CircuitBreakerLayer::new(Arc::clone(&breaker)))
//!     .service(upstream);
//! match client.oneshot(http::Request::new(())).await {
//!     Ok(response) => println!("{}", response.status()),
//!     Err(error) => match error.downcast_ref::<tripgate::tower::Rejected>() {
//!         Some(rejected) => println!("open: retry in {:?}", rejected.retry_after),
//!         None => println!("failed: {error}"),
//!     },
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Responses pass through unchanged, whatever their status (a 503 is still the caller's
//! to handle); the breaker counts them by its rules: 5xx and 429 are faults, other
//! statuses successes (the configured `fault_statuses` decide). Errors count by their
//! cause ([`tripgate_host::error_outcome`]): a timeout (tower's or tokio's `Elapsed`, an
//! `io::ErrorKind::TimedOut`) is a `timeout`, a refused or reset connection a
//! `connection-error`, anything else a `failure`. A response future dropped before it
//! finishes records `cancelled`. While the breaker is open the inner service is not
//! called: the request fails at once with [`Rejected`], which carries `retry_after`.
//!
//! **Put a timeout inside the layer**, between it and the service it guards:
//!
//! ```
//! # use std::{sync::Arc, time::Duration};
//! # use tower::ServiceBuilder;
//! # use tripgate::{tower::CircuitBreakerLayer, Breaker, Config};
//! # let breaker = Arc::new(Breaker::new(Config::default()).unwrap());
//! # let upstream = tower::service_fn(|_: http::Request<()>| async {
//! #     Ok::<_, std::io::Error>(http::Response::new(()))
//! # });
//! let client = ServiceBuilder::new()
//!     .layer(CircuitBreakerLayer::new(breaker))
//!     .timeout(Duration::from_secs(2)) // inside: its `Elapsed` is a `timeout` fault
//!     .service(upstream);
//! ```
//!
//! A timeout outside the layer drops the layer's response future when it fires, which
//! records `cancelled`: the breaker never learns that the upstream hangs, and a hang never
//! trips it (`tests/outage.rs` pins both orders).

use std::error::Error;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tower::{BoxError, Layer, Service};
use tripgate_core::{RejectReason, Rejection, State, StatusSet};
use tripgate_host::{error_outcome, stay_away, Classify, Clock, Status};

use crate::{Breaker, CoarseClock, OwnedPermit};

mod retry;

pub use retry::BudgetedRetry;

/// A request the breaker turned away without calling the inner service. The service's
/// error is a `BoxError`; downcast it to this type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// The state that rejected (open, half-open with every probe out, isolated, or closed
    /// at its concurrency cap).
    pub state: State,
    /// Why.
    pub reason: RejectReason,
    /// When trying again could succeed (zero: no estimate). Suits a `Retry-After` header.
    pub retry_after: Duration,
}

impl From<Rejection> for Rejected {
    fn from(r: Rejection) -> Self {
        Self {
            state: r.state,
            reason: r.reason,
            retry_after: Duration::from_nanos(r.retry_after),
        }
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "circuit breaker rejected the request ({}, {}); retry after {:?}",
            self.state, self.reason, self.retry_after
        )
    }
}

impl Error for Rejected {}

/// Wraps services in [`CircuitBreakerService`], all sharing one breaker.
#[derive(Debug)]
pub struct CircuitBreakerLayer<C: Clock = CoarseClock> {
    breaker: Arc<Breaker<C>>,
}

impl<C: Clock> CircuitBreakerLayer<C> {
    /// A layer guarded by `breaker` (keep a clone to read its state and metrics).
    pub fn new(breaker: Arc<Breaker<C>>) -> Self {
        Self { breaker }
    }
}

impl<C: Clock> Clone for CircuitBreakerLayer<C> {
    fn clone(&self) -> Self {
        Self {
            breaker: Arc::clone(&self.breaker),
        }
    }
}

impl<S, C: Clock> Layer<S> for CircuitBreakerLayer<C> {
    type Service = CircuitBreakerService<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        CircuitBreakerService {
            inner,
            breaker: Arc::clone(&self.breaker),
        }
    }
}

/// A service whose calls pass the breaker first (see the [module docs](self)).
#[derive(Debug)]
pub struct CircuitBreakerService<S, C: Clock = CoarseClock> {
    inner: S,
    breaker: Arc<Breaker<C>>,
}

impl<S: Clone, C: Clock> Clone for CircuitBreakerService<S, C> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            breaker: Arc::clone(&self.breaker),
        }
    }
}

impl<S, C: Clock> CircuitBreakerService<S, C> {
    /// The breaker guarding this service.
    pub fn breaker(&self) -> &Arc<Breaker<C>> {
        &self.breaker
    }
}

impl<S, C, Request, Body> Service<Request> for CircuitBreakerService<S, C>
where
    S: Service<Request, Response = http::Response<Body>>,
    S::Error: Into<BoxError>,
    C: Clock,
{
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, C>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Readiness is the inner service's: a rejection is decided per request in `call`
        // (as `tower::filter` does), so a rejected request costs no inner call.
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match self.breaker.acquire_owned() {
            Ok(permit) => ResponseFuture {
                future: Some(self.inner.call(request)),
                permit: Some(permit),
                rejected: None,
            },
            Err(rejection) => ResponseFuture {
                future: None,
                permit: None,
                rejected: Some(rejection.into()),
            },
        }
    }
}

pin_project! {
    /// The response of a [`CircuitBreakerService`]: the inner service's, recorded once
    /// when it resolves; `cancelled` if dropped before.
    pub struct ResponseFuture<F, C: Clock = CoarseClock> {
        #[pin]
        future: Option<F>,
        permit: Option<OwnedPermit<C>>,
        rejected: Option<Rejected>,
    }
}

impl<F, C: Clock> fmt::Debug for ResponseFuture<F, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("permit", &self.permit)
            .field("rejected", &self.rejected)
            .finish_non_exhaustive()
    }
}

/// Whether an error means a deadline passed: tower's and tokio's timeout errors.
fn timed_out(error: &(dyn Error + 'static)) -> bool {
    error.is::<tower::timeout::error::Elapsed>() || error.is::<tokio::time::error::Elapsed>()
}

/// The outcome the layer records for a service's error: `timeout` for tower's and
/// tokio's timeout errors, else by the first `io::Error` among its causes
/// ([`tripgate_host::error_outcome`]: a refused connection is a `connection-error`),
/// else `failure`.
pub fn error_outcome_of(error: &(dyn Error + 'static)) -> tripgate_core::Outcome {
    error_outcome(error, timed_out)
}

impl<F, C, Body, E> Future for ResponseFuture<F, C>
where
    F: Future<Output = Result<http::Response<Body>, E>>,
    E: Into<BoxError>,
    C: Clock,
{
    type Output = Result<http::Response<Body>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Some(future) = this.future.as_pin_mut() else {
            let rejected = this.rejected.take().map_or_else(
                || BoxError::from("ResponseFuture polled after completion"),
                |rejected| Box::new(rejected) as BoxError,
            );
            return Poll::Ready(Err(rejected));
        };
        let result = match future.poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(result) => result.map_err(Into::into),
        };
        let (outcome, retry_after) = match &result {
            Ok(response) => {
                let status = response.status().as_u16();
                // Only an answer that could trip the breaker has a stay-away worth reading
                // (a fault status by the core's defaults): a success costs no header lookup.
                let asks = StatusSet::default().contains(status);
                let headers = response.headers();
                let header = |name: &str| headers.get(name)?.to_str().ok();
                let retry_after = if asks {
                    stay_away::from_headers(status, header)
                } else {
                    0
                };
                (Status(status).outcome(), retry_after)
            }
            Err(error) => (error_outcome_of(&**error), 0),
        };
        if let Some(permit) = this.permit.take() {
            if retry_after > 0 {
                permit.record_with_retry_after(outcome, Duration::from_nanos(retry_after));
            } else {
                permit.record(outcome);
            }
        }
        Poll::Ready(result)
    }
}
