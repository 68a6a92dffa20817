//! The guarded call: acquire, run, classify, record, and a value to fall back on.

#[cfg(feature = "tokio")]
use std::future::Future;
use std::time::{Duration, Instant};

use tripgate_core::Classify;

use crate::{Breaker, Outcome, Permit};

/// The WIT's outcome for the core's: every Rust host classifies by the core's rules
/// ([`Classify`], [`tripgate_core::error_outcome`]) and this host hands the result to the
/// component. (The reverse needs no function: the component validates a WIT outcome.)
impl From<tripgate_core::Outcome> for Outcome {
    fn from(outcome: tripgate_core::Outcome) -> Self {
        use tripgate_core::Outcome as Core;
        match outcome {
            Core::Success => Self::Success,
            Core::Status(status) => Self::Status(status.get()),
            Core::Grpc(code) => Self::Grpc(code.get()),
            Core::Timeout => Self::Timeout,
            Core::ConnectionError => Self::ConnectionError,
            Core::Failure => Self::Failure,
            Core::Cancelled => Self::Cancelled,
            Core::Ignored => Self::Ignored,
        }
    }
}

/// Why a guarded call gives no good value: the core's, shared with every Rust host; its
/// `Host` case carries the error of a component call that failed (never expected: the
/// component does not trap on input).
pub type CallError<R> = tripgate_core::CallError<R, anyhow::Error>;

impl Breaker {
    fn admit<R>(&self) -> Result<Permit, CallError<R>> {
        self.acquire()?.decision.map_err(CallError::Rejected)
    }

    fn finish<R>(
        permit: Permit,
        outcome: impl Into<Outcome>,
        result: R,
    ) -> Result<R, CallError<R>> {
        CallError::verdict(permit.record(outcome)?.class, result)
    }

    /// Runs `f` if the breaker admits it, records how its result [classifies](Classify),
    /// and returns the result, or why there is no good one.
    ///
    /// A synchronous closure cannot be interrupted: `timeout` is the call's budget (give
    /// it to your socket as its read timeout), and a call that returns after it is
    /// recorded as a `timeout` fault and returned as [`CallError::Failed`]. If `f` panics,
    /// its permit is released as `cancelled`.
    pub fn call<R: Classify>(
        &self,
        timeout: Duration,
        f: impl FnOnce() -> R,
    ) -> Result<R, CallError<R>> {
        self.call_with(timeout, f, R::outcome)
    }

    /// [`Self::call`] with your own classifier (returning the core's or the WIT's outcome).
    pub fn call_with<R, O: Into<Outcome>>(
        &self,
        timeout: Duration,
        f: impl FnOnce() -> R,
        classify: impl FnOnce(&R) -> O,
    ) -> Result<R, CallError<R>> {
        let permit = self.admit()?;
        let started = Instant::now();
        let result = f();
        let outcome = if started.elapsed() > timeout {
            Outcome::Timeout
        } else {
            classify(&result).into()
        };
        Self::finish(permit, outcome, result)
    }

    /// Awaits `future` if the breaker admits it, for at most `timeout`: past it the future
    /// is dropped, a `timeout` fault is recorded and [`CallError::TimedOut`] returned. If
    /// the caller drops this future, the permit is released as `cancelled`.
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
    pub async fn call_async_with<R, O: Into<Outcome>>(
        &self,
        timeout: Duration,
        future: impl Future<Output = R>,
        classify: impl FnOnce(&R) -> O,
    ) -> Result<R, CallError<R>> {
        let permit = self.admit()?;
        match tokio::time::timeout(timeout, future).await {
            Ok(result) => {
                let outcome = classify(&result);
                Self::finish(permit, outcome, result)
            }
            Err(_) => {
                permit.record(Outcome::Timeout)?;
                Err(CallError::TimedOut(timeout))
            }
        }
    }
}
