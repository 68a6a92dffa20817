//! The guarded call ([`tripgate_host::call`]) on the native breaker.

#[cfg(feature = "tokio")]
use std::future::Future;
use std::time::Duration;

use tripgate_core::retry::{RetryError, RetryPolicy};
use tripgate_host::call::guarded;
#[cfg(feature = "tokio")]
use tripgate_host::call::guarded_async;
#[cfg(feature = "tokio")]
use tripgate_host::retry::retrying_async;
use tripgate_host::retry::{retrying, Retries};
use tripgate_host::{CallError, Classify, Clock, Judged};

use crate::{Breaker, Outcome};

impl<C: Clock> Breaker<C> {
    /// Runs `f` if the breaker admits it, records how its result [classifies](Classify)
    /// (with the stay-away it asked for, [`Classify::retry_after`]), and returns the
    /// result, or why there is no good one.
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
        guarded(self, timeout, f, Judged::of::<R>)
    }

    /// [`Self::call`] with your own classifier.
    pub fn call_with<R>(
        &self,
        timeout: Duration,
        f: impl FnOnce() -> R,
        classify: impl FnOnce(&R) -> Outcome,
    ) -> Result<R, CallError<R>> {
        guarded(self, timeout, f, classify)
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
        guarded_async(self, timeout, future, Judged::of::<R>).await
    }

    /// [`Self::call_async`] with your own classifier.
    #[cfg(feature = "tokio")]
    pub async fn call_async_with<R>(
        &self,
        timeout: Duration,
        future: impl Future<Output = R>,
        classify: impl FnOnce(&R) -> Outcome,
    ) -> Result<R, CallError<R>> {
        guarded_async(self, timeout, future, classify).await
    }

    /// Retries by `policy` for this breaker's callers: share them (an `Arc`) among every
    /// caller of this breaker, for the budget is theirs. A bad policy names its field.
    pub fn retries(&self, policy: RetryPolicy) -> Result<Retries, RetryError> {
        Retries::new(policy, self.clock().now())
    }

    /// [`Self::call`], retried by `retries` (SPEC § Retries): a fault is tried again, each
    /// attempt admitted by this breaker, after a jittered wait (or the upstream's longer
    /// `Retry-After`) on the breaker's clock, while the policy's attempts and the shared
    /// budget allow. A rejection ends the retries with the breaker's own answer.
    pub fn call_retrying<R: Classify>(
        &self,
        retries: &Retries,
        timeout: Duration,
        f: impl FnMut() -> R,
    ) -> Result<R, CallError<R>> {
        retrying(self, retries, timeout, f, Judged::of::<R>)
    }

    /// [`Self::call_async`], retried by `retries` as [`Self::call_retrying`] is; `make`
    /// makes each attempt's future, and the waits are on tokio's timer. Dropping the
    /// returned future cancels the call.
    #[cfg(feature = "tokio")]
    pub async fn call_async_retrying<R: Classify, F: Future<Output = R>>(
        &self,
        retries: &Retries,
        timeout: Duration,
        make: impl FnMut() -> F,
    ) -> Result<R, CallError<R>> {
        retrying_async(self, retries, timeout, make, Judged::of::<R>).await
    }
}
