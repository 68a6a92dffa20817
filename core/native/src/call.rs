//! The guarded call: acquire, run, classify, record, and a value to fall back on.

#[cfg(feature = "tokio")]
use std::future::Future;
use std::time::Duration;

use tripgate_core::{CallError, Classify, Clock, Outcome};

use crate::{Breaker, Permit};

impl<C: Clock> Breaker<C> {
    fn admit_call<R>(&self) -> Result<Permit<'_, C>, CallError<R>> {
        self.acquire().map_err(CallError::Rejected)
    }

    /// Runs `f` if the breaker admits it, records how its result [classifies](Classify),
    /// and returns the result, or why there is no good one.
    ///
    /// A synchronous closure cannot be interrupted: `timeout` is the call's budget (give
    /// it to your socket as its read timeout), and a call that returns after it, by the
    /// breaker's clock, is recorded as a `timeout` fault and returned as
    /// [`CallError::Failed`]. If `f` panics, its permit is released as `cancelled`.
    pub fn call<R: Classify>(
        &self,
        timeout: Duration,
        f: impl FnOnce() -> R,
    ) -> Result<R, CallError<R>> {
        self.call_with(timeout, f, R::outcome)
    }

    /// [`Self::call`] with your own classifier.
    pub fn call_with<R>(
        &self,
        timeout: Duration,
        f: impl FnOnce() -> R,
        classify: impl FnOnce(&R) -> Outcome,
    ) -> Result<R, CallError<R>> {
        let permit = self.admit_call()?;
        let started = self.clock().now();
        let result = f();
        let took = self.clock().now().saturating_sub(started);
        let outcome = if u128::from(took) > timeout.as_nanos() {
            Outcome::Timeout
        } else {
            classify(&result)
        };
        CallError::verdict(permit.record(outcome).class, result)
    }

    /// Awaits `future` if the breaker admits it, for at most `timeout` (tokio's timer):
    /// past it the future is dropped, a `timeout` fault is recorded and
    /// [`CallError::TimedOut`] returned. If the caller drops this future first, the
    /// permit is released as `cancelled`.
    #[cfg(feature = "tokio")]
    pub async fn call_async<R: Classify>(
        &self,
        timeout: Duration,
        future: impl Future<Output = R>,
    ) -> Result<R, CallError<R>> {
        self.call_async_with(timeout, future, R::outcome).await
    }

    /// [`Self::call_async`] with your own classifier.
    #[cfg(feature = "tokio")]
    pub async fn call_async_with<R>(
        &self,
        timeout: Duration,
        future: impl Future<Output = R>,
        classify: impl FnOnce(&R) -> Outcome,
    ) -> Result<R, CallError<R>> {
        let permit = self.admit_call()?;
        match tokio::time::timeout(timeout, future).await {
            Ok(result) => {
                let outcome = classify(&result);
                CallError::verdict(permit.record(outcome).class, result)
            }
            Err(_) => {
                permit.record(Outcome::Timeout);
                Err(CallError::TimedOut(timeout))
            }
        }
    }
}
