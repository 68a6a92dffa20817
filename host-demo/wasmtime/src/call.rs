//! The guarded call: acquire, run, classify, record, and a value to fall back on.

use std::fmt;
#[cfg(feature = "tokio")]
use std::future::Future;
use std::io;
use std::time::{Duration, Instant};

use crate::{Breaker, Class, Outcome, Permit, Rejection};

/// How a call's result reads to the breaker. The component then classifies the
/// [`Outcome`] with the breaker's configured fault sets (a 503 is a fault, a 404 is not).
pub trait Classify {
    /// The outcome this result reports.
    fn outcome(&self) -> Outcome;
}

/// An HTTP status as a call's result (`Status(503)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Status(pub u16);

impl Classify for Status {
    fn outcome(&self) -> Outcome {
        Outcome::Status(self.0)
    }
}

impl Classify for () {
    fn outcome(&self) -> Outcome {
        Outcome::Success
    }
}

impl Classify for String {
    fn outcome(&self) -> Outcome {
        Outcome::Success
    }
}

impl Classify for Vec<u8> {
    fn outcome(&self) -> Outcome {
        Outcome::Success
    }
}

impl Classify for io::ErrorKind {
    /// Refused, reset, aborted, unreachable or not connected: `connection-error`;
    /// `TimedOut` and `WouldBlock` (a socket timeout): `timeout`; `Interrupted`:
    /// `cancelled`; anything else: `failure`.
    fn outcome(&self) -> Outcome {
        use io::ErrorKind as K;
        match self {
            K::ConnectionRefused
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::NotConnected
            | K::AddrNotAvailable
            | K::BrokenPipe
            | K::HostUnreachable
            | K::NetworkUnreachable
            | K::NetworkDown => Outcome::ConnectionError,
            K::TimedOut | K::WouldBlock => Outcome::Timeout,
            K::Interrupted => Outcome::Cancelled,
            _ => Outcome::Failure,
        }
    }
}

impl Classify for io::Error {
    fn outcome(&self) -> Outcome {
        self.kind().outcome()
    }
}

impl<T: Classify, E: Classify> Classify for Result<T, E> {
    fn outcome(&self) -> Outcome {
        match self {
            Ok(value) => value.outcome(),
            Err(error) => error.outcome(),
        }
    }
}

/// Why a guarded call gives no good value: fall back on it with `unwrap_or_else`.
#[derive(Debug)]
pub enum CallError<R> {
    /// The breaker turned the call away; the closure did not run.
    Rejected(Rejection),
    /// The call ran and the breaker counted its result as a fault (a 503, a refused
    /// connection, or a sync call that returned after its timeout). The result is here.
    Failed(R),
    /// The async call did not finish within its timeout and was dropped.
    TimedOut(Duration),
    /// The component could not be called (never expected: the component does not trap
    /// on input).
    Host(anyhow::Error),
}

impl<R> CallError<R> {
    /// The rejection, if the call was turned away.
    pub fn rejection(&self) -> Option<&Rejection> {
        match self {
            Self::Rejected(rejection) => Some(rejection),
            _ => None,
        }
    }
}

impl<R> fmt::Display for CallError<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rejected(r) => write!(
                f,
                "circuit breaker rejected the call ({}, {}); retry after {} ns",
                r.state.name(),
                r.reason.name(),
                r.retry_after
            ),
            Self::Failed(_) => f.write_str("the call failed"),
            Self::TimedOut(limit) => write!(f, "the call timed out after {limit:?}"),
            Self::Host(e) => write!(f, "the breaker component failed: {e:#}"),
        }
    }
}

impl<R: fmt::Debug> std::error::Error for CallError<R> {}

impl<R> From<anyhow::Error> for CallError<R> {
    fn from(error: anyhow::Error) -> Self {
        Self::Host(error)
    }
}

impl Breaker {
    fn admit<R>(&self) -> Result<Permit, CallError<R>> {
        self.acquire()?.decision.map_err(CallError::Rejected)
    }

    fn finish<R>(permit: Permit, outcome: Outcome, result: R) -> Result<R, CallError<R>> {
        match permit.record(outcome)?.class {
            Class::Fault => Err(CallError::Failed(result)),
            Class::Success | Class::Neutral => Ok(result),
        }
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

    /// [`Self::call`] with your own classifier.
    pub fn call_with<R>(
        &self,
        timeout: Duration,
        f: impl FnOnce() -> R,
        classify: impl FnOnce(&R) -> Outcome,
    ) -> Result<R, CallError<R>> {
        let permit = self.admit()?;
        let started = Instant::now();
        let result = f();
        let outcome = if started.elapsed() > timeout {
            Outcome::Timeout
        } else {
            classify(&result)
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
    pub async fn call_async_with<R>(
        &self,
        timeout: Duration,
        future: impl Future<Output = R>,
        classify: impl FnOnce(&R) -> Outcome,
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
