//! How a call's result reads to the breaker: the one set of rules every Rust host (the
//! native breaker, its tower layer, the wasmtime host) classifies results by.
//!
//! A [`Classify`] value names the [`Outcome`] it reports; the breaker then classifies that
//! outcome with its configured fault sets, so a 503 is a fault and a 404 is not, by the
//! breaker's rules and nobody else's.
//!
//! ```
//! use tripgate_host::{Classify, Status};
//! use tripgate_core::Outcome;
//! assert_eq!(Status(503).outcome(), Outcome::status(503).unwrap());
//! let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
//! assert_eq!(Err::<Status, _>(refused).outcome(), Outcome::ConnectionError);
//! ```

use tripgate_core::{Nanos, Outcome};

/// How a call's result reads to the breaker.
pub trait Classify {
    /// The outcome this result reports.
    fn outcome(&self) -> Outcome;

    /// How long the upstream asked callers to stay away with this result, in ns (0: it
    /// did not ask): what an HTTP answer's `Retry-After` or a gRPC pushback says, read by
    /// [`stay_away::from_headers`](crate::stay_away::from_headers).
    fn retry_after(&self) -> Nanos {
        0
    }
}

/// What the guarded call records for a result: its outcome and the stay-away it asked
/// for. A classifier may give just an [`Outcome`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Judged {
    /// The outcome.
    pub outcome: Outcome,
    /// The stay-away it asked for, in ns; 0 for none.
    pub retry_after: Nanos,
}

impl From<Outcome> for Judged {
    fn from(outcome: Outcome) -> Self {
        Self {
            outcome,
            retry_after: 0,
        }
    }
}

impl Judged {
    /// A [`Classify`] result's outcome and stay-away.
    pub fn of<R: Classify>(result: &R) -> Self {
        Self {
            outcome: result.outcome(),
            retry_after: result.retry_after(),
        }
    }
}

/// An HTTP status as a call's result (`Status(503)`).
///
/// A status no HTTP upstream may send (outside 100–599, which `http::StatusCode` allows up
/// to 999) reports [`Outcome::Failure`]: the upstream answered, but not in HTTP, which is
/// evidence of a broken upstream, not of a healthy one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Status(pub u16);

impl Classify for Status {
    #[inline]
    fn outcome(&self) -> Outcome {
        Outcome::status(self.0).unwrap_or(Outcome::Failure)
    }
}

impl Classify for Outcome {
    #[inline]
    fn outcome(&self) -> Outcome {
        *self
    }
}

impl Classify for () {
    #[inline]
    fn outcome(&self) -> Outcome {
        Outcome::Success
    }
}

impl<T: Classify, E: Classify> Classify for Result<T, E> {
    #[inline]
    fn outcome(&self) -> Outcome {
        match self {
            Ok(value) => value.outcome(),
            Err(error) => error.outcome(),
        }
    }

    fn retry_after(&self) -> Nanos {
        match self {
            Ok(value) => value.retry_after(),
            Err(error) => error.retry_after(),
        }
    }
}

mod io_rules {
    use std::error::Error;
    use std::io;
    use std::string::String;
    use std::vec::Vec;

    use super::Classify;
    use crate::errno;
    use tripgate_core::{errors, ErrorName, Outcome, MAX_CAUSES};

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
        /// By the core's table ([`tripgate_core::errors`]), the kind by its name
        /// (`ConnectionRefused`, `TimedOut`, ...); a kind it does not name: `failure`.
        fn outcome(&self) -> Outcome {
            let kind = std::format!("{self:?}");
            errors::outcome_of(|name, text| name == ErrorName::Kind && text == kind)
                .unwrap_or(Outcome::Failure)
        }
    }

    impl Classify for io::Error {
        /// By the core's table: the raw OS error by its errno name (`EHOSTDOWN`, which
        /// `io::ErrorKind` does not tell apart), then the kind by its name.
        fn outcome(&self) -> Outcome {
            let kind = std::format!("{:?}", self.kind());
            let raw = self.raw_os_error();
            errors::outcome_of(|name, text| match name {
                ErrorName::Errno => raw.is_some_and(|code| errno::code(text) == Some(code)),
                ErrorName::Kind => text == kind,
                ErrorName::Code => false,
            })
            .unwrap_or(Outcome::Failure)
        }
    }

    /// The outcome of any error, by its cause: the first [`io::Error`] in its `source()`
    /// chain (itself included) classifies by its kind, so a client's "connect error" that
    /// wraps a refused connection is a `connection-error`; `timed_out` says which other
    /// error types mean a deadline passed (the caller's timer types: this crate knows no
    /// runtime); anything else is a `failure`. At most [`MAX_CAUSES`]
    /// errors of the chain are looked at, so a chain that loops back on itself still ends.
    pub fn error_outcome(
        error: &(dyn Error + 'static),
        timed_out: impl Fn(&(dyn Error + 'static)) -> bool,
    ) -> Outcome {
        for error in std::iter::successors(Some(error), |&e| e.source()).take(MAX_CAUSES) {
            if timed_out(error) {
                return Outcome::Timeout;
            }
            if let Some(io) = error.downcast_ref::<io::Error>() {
                return io.outcome();
            }
        }
        Outcome::Failure
    }
}

pub use io_rules::error_outcome;
