//! What a guarded call gives back instead of a good value: the error of every Rust
//! host's `call` / `call_async` (`tripgate`, `tripgate-wasmtime`), written once so that
//! both read and print the same.

use core::convert::Infallible;
use core::fmt;
use core::time::Duration;

use crate::{Class, Rejection};

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

impl<R: fmt::Debug, E: fmt::Debug + fmt::Display> core::error::Error for CallError<R, E> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RejectReason, State};
    use alloc::string::ToString;

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
