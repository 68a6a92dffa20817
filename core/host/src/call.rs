//! The guarded call, written once for every Rust host: acquire, run, classify, record,
//! and a value to fall back on ([`CallError`]). Each host's `call`, `call_with`,
//! `call_async` and `call_async_with` are these functions on its breaker.

use std::convert::Infallible;
use std::fmt;
#[cfg(feature = "tokio")]
use std::future::Future;
use std::time::Duration;

use tripgate_core::{Class, Outcome, Rejection};

use crate::classify::Judged;
use crate::HostBreaker;

/// Runs `f` if `breaker` admits it and records how `classify` reads its result (an
/// [`Outcome`], or a [`Judged`] with the stay-away the answer asked for).
///
/// A synchronous closure cannot be interrupted: `timeout` is the call's budget (give it to
/// your socket as its read timeout). A call that returns after it, by the breaker's own
/// clock, is recorded as a `timeout` fault and returned as [`CallError::Failed`]. If `f`
/// panics, its permit is released as `cancelled` while the panic unwinds.
pub fn guarded<B: HostBreaker, R, J: Into<Judged>>(
    breaker: &B,
    timeout: Duration,
    f: impl FnOnce() -> R,
    classify: impl FnOnce(&R) -> J,
) -> Result<R, CallError<R, B::Error>> {
    let permit = breaker.admit()?.map_err(CallError::Rejected)?;
    let started = breaker.now();
    let result = f();
    let took = breaker.now().saturating_sub(started);
    let judged = if u128::from(took) > timeout.as_nanos() {
        Judged::from(Outcome::Timeout)
    } else {
        classify(&result).into()
    };
    CallError::verdict(settle(breaker, permit, judged)?, result)
}

/// Records a judged result, with its stay-away when it asked for one.
fn settle<B: HostBreaker>(
    breaker: &B,
    permit: B::Permit<'_>,
    judged: Judged,
) -> Result<Class, B::Error> {
    if judged.retry_after > 0 {
        breaker.settle_after(permit, judged.outcome, judged.retry_after)
    } else {
        breaker.settle(permit, judged.outcome)
    }
}

/// Awaits `future` if `breaker` admits it, for at most `timeout` on tokio's timer: past
/// it the future is dropped, a `timeout` fault is recorded and [`CallError::TimedOut`]
/// returned. If the caller drops this future first, the permit is released as
/// `cancelled`.
#[cfg(feature = "tokio")]
pub async fn guarded_async<B: HostBreaker, R, J: Into<Judged>>(
    breaker: &B,
    timeout: Duration,
    future: impl Future<Output = R>,
    classify: impl FnOnce(&R) -> J,
) -> Result<R, CallError<R, B::Error>> {
    let permit = breaker.admit()?.map_err(CallError::Rejected)?;
    match tokio::time::timeout(timeout, future).await {
        Ok(result) => {
            let judged = classify(&result).into();
            CallError::verdict(settle(breaker, permit, judged)?, result)
        }
        Err(_) => {
            breaker.settle(permit, Outcome::Timeout)?;
            Err(CallError::TimedOut(timeout))
        }
    }
}

/// Why a guarded call gives no good value: fall back on it with `unwrap_or_else`.
///
/// `E` is what the host itself can fail with: nothing for the native breaker
/// ([`Infallible`], so a `match` needs no arm for it), `anyhow::Error` for the component
/// in wasmtime.
#[derive(Debug)]
pub enum CallError<R, E = Infallible> {
    /// The breaker turned the call away; the closure did not run.
    Rejected(Rejection),
    /// The call ran and the breaker counted its result as a fault (a 503, a refused
    /// connection, or a sync call that returned after its timeout). The result is here.
    Failed(R),
    /// The async call did not finish within its timeout and was dropped.
    TimedOut(Duration),
    /// The breaker could not be asked (the component could not be called: never expected,
    /// the component does not trap on input).
    Host(E),
}

impl<R, E> CallError<R, E> {
    /// The rejection, if the call was turned away.
    pub fn rejection(&self) -> Option<&Rejection> {
        match self {
            Self::Rejected(rejection) => Some(rejection),
            _ => None,
        }
    }

    /// How long to wait before trying again, if the call was turned away (0: no
    /// estimate, as for an isolated breaker).
    pub fn retry_after(&self) -> Option<Duration> {
        self.rejection()
            .map(|r| Duration::from_nanos(r.retry_after))
    }

    /// The result handed back, or the fault it was counted as.
    pub fn verdict(class: Class, result: R) -> Result<R, Self> {
        match class {
            Class::Fault => Err(Self::Failed(result)),
            Class::Success | Class::Neutral => Ok(result),
        }
    }
}

impl<R, E> From<E> for CallError<R, E> {
    fn from(error: E) -> Self {
        Self::Host(error)
    }
}

impl<R, E: fmt::Display> fmt::Display for CallError<R, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rejected(r) => write!(
                f,
                "circuit breaker rejected the call ({}, {}); retry after {:?}",
                r.state,
                r.reason,
                Duration::from_nanos(r.retry_after)
            ),
            Self::Failed(_) => f.write_str("the call failed"),
            Self::TimedOut(limit) => write!(f, "the call timed out after {limit:?}"),
            // `#`: an error with causes (anyhow) prints them all.
            Self::Host(e) => write!(f, "the breaker could not be asked: {e:#}"),
        }
    }
}

impl<R: fmt::Debug, E: fmt::Debug + fmt::Display> std::error::Error for CallError<R, E> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;
    use tripgate_core::{RejectReason, State};

    #[test]
    fn reads_and_prints_the_same_in_every_host() {
        let rejected: CallError<(), Infallible> = CallError::Rejected(Rejection {
            state: State::Open,
            reason: RejectReason::Open,
            retry_after: 1_500_000_000,
        });
        assert_eq!(rejected.retry_after(), Some(Duration::from_millis(1500)));
        assert_eq!(
            rejected.to_string(),
            "circuit breaker rejected the call (open, open); retry after 1.5s"
        );
        let host: CallError<(), &str> = CallError::from("trapped");
        assert_eq!(host.to_string(), "the breaker could not be asked: trapped");
        assert!(host.rejection().is_none());
        assert!(matches!(
            CallError::<_, Infallible>::verdict(Class::Fault, 503),
            Err(CallError::Failed(503))
        ));
        assert!(matches!(
            CallError::<_, Infallible>::verdict(Class::Neutral, 404),
            Ok(404)
        ));
    }
}
