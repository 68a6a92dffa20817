//! Retries for the layer's callers: a [`tower::retry::Policy`] run by the core's retry
//! policy and the budget the breaker's callers share (SPEC § Retries). Put it outside the
//! breaker's layer, so that every attempt passes the breaker:
//!
//! ```
//! # use std::{sync::Arc, time::Duration};
//! # use tower::ServiceBuilder;
//! use tripgate::tower::{BudgetedRetry, CircuitBreakerLayer};
//! use tripgate::{Breaker, Config};
//!
//! # let upstream = tower::service_fn(|_: http::Request<()>| async {
//! #     Ok::<_, std::io::Error>(http::Response::new(()))
//! # });
//! let breaker = Arc::new(Breaker::new(Config::default()).unwrap());
//! let retries = Arc::new(breaker.retries(tripgate::RetryPolicy::default()).unwrap());
//! let client = ServiceBuilder::new()
//!     .retry(BudgetedRetry::new(Arc::clone(&breaker), retries))
//!     .layer(CircuitBreakerLayer::new(breaker))
//!     .timeout(Duration::from_secs(2))
//!     .service(upstream);
//! # let _ = client;
//! ```
//!
//! A fault (a 5xx or 429 answer, a timeout, a refused connection, by the breaker's config)
//! is tried again after the policy's wait, or the answer's longer `Retry-After`; the
//! breaker's [`Rejected`](super::Rejected) ends the retries and is the caller's answer.

use std::sync::Arc;
use std::time::Duration;

use tower::BoxError;
use tripgate_core::retry::Next;
use tripgate_host::{stay_away, Clock, Retries, Status};

use super::{error_outcome_of, Rejected};
use crate::{Breaker, Classify, CoarseClock};

/// A `tower` retry policy that retries as the breaker's callers' [`Retries`] allow.
/// Cloned for each request (its attempts are the request's own; the budget is shared).
#[derive(Debug)]
pub struct BudgetedRetry<C: Clock = CoarseClock> {
    breaker: Arc<Breaker<C>>,
    retries: Arc<Retries>,
    attempt: u8,
}

impl<C: Clock> BudgetedRetry<C> {
    /// Retries through `breaker`'s layer by `retries` (shared by its callers: make it
    /// once, with `breaker.retries(policy)`).
    pub fn new(breaker: Arc<Breaker<C>>, retries: Arc<Retries>) -> Self {
        Self {
            breaker,
            retries,
            attempt: 1,
        }
    }
}

impl<C: Clock> Clone for BudgetedRetry<C> {
    fn clone(&self) -> Self {
        Self::new(Arc::clone(&self.breaker), Arc::clone(&self.retries))
    }
}

impl<C: Clock, Req: Clone, B> tower::retry::Policy<Req, http::Response<B>, BoxError>
    for BudgetedRetry<C>
{
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _request: &mut Req,
        result: &mut Result<http::Response<B>, BoxError>,
    ) -> Option<Self::Future> {
        let (outcome, retry_after) = match result {
            Ok(response) => {
                let status = response.status().as_u16();
                let headers = response.headers();
                let header = |name: &str| headers.get(name)?.to_str().ok();
                (
                    Status(status).outcome(),
                    stay_away::from_headers(status, header),
                )
            }
            // The breaker's answer ends the retries; a first attempt it turned away paid
            // nothing in.
            Err(error) if error.is::<Rejected>() => return None,
            Err(error) => (error_outcome_of(&**error), 0),
        };
        if self.attempt == 1 {
            self.retries.deposit();
        }
        let class = self.breaker.config().classify(outcome);
        let now = self.breaker.clock().now();
        match self.retries.next(self.attempt, class, retry_after, now) {
            Next::Retry(wait) => {
                self.attempt = self.attempt.saturating_add(1);
                Some(tokio::time::sleep(Duration::from_nanos(wait)))
            }
            Next::Stop(_) => None,
        }
    }

    fn clone_request(&mut self, request: &Req) -> Option<Req> {
        Some(request.clone())
    }
}
