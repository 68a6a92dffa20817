//! What a failed call's error says, read as an outcome: the one table every host classifies
//! errors by.
//!
//! Hosts meet errors in their own shapes (Rust's `io::Error`, a Node error with a `code`, a
//! Python exception class), but the names those errors carry are few and shared: POSIX
//! errno names, a client library's error codes, an error type's name. A host reads those
//! names off each error of a chain (its `source()`, `cause` or `__cause__`, at most
//! [`MAX_CAUSES`](crate::MAX_CAUSES) deep) and asks [`outcome_of`]; the first error that
//! names a rule decides. Statuses and gRPC codes carried by an error are read by the host
//! and checked by [`Outcome::status`] and [`Outcome::grpc`]; whatever says nothing is a
//! `failure`.
//!
//! ```
//! use tripgate_core::{errors, ErrorName, Outcome};
//! let said = errors::outcome_of(|name, text| name == ErrorName::Errno && text == "ETIMEDOUT");
//! assert_eq!(said, Some(Outcome::Timeout));
//! // A class that is both a timeout and a connection error is a timeout: rules go in order.
//! let both = ["requests.ConnectionError", "requests.Timeout"];
//! let said = errors::outcome_of(|name, text| name == ErrorName::Kind && both.contains(&text));
//! assert_eq!(said, Some(Outcome::Timeout));
//! ```

use crate::outcome::Outcome;
use crate::table::table;

table! {
    /// What a name in [`RULES`] names.
    pub enum ErrorName {
        /// A POSIX errno name (`ECONNREFUSED`): a Node error's `code`, a Python
        /// `OSError`'s `errno`, a Rust `io::Error`'s raw OS error.
        Errno = 0 => "errno",
        /// A client library's error code (undici's `UND_ERR_SOCKET`): a Node error's `code`.
        Code = 1 => "code",
        /// An error type: a JS error's `name`, a Python exception class (a built-in by its
        /// name, a client library's as `package.Class`, any class of its hierarchy), a Rust
        /// `io::ErrorKind` by its variant's name.
        Kind = 2 => "kind",
    }
}

/// One rule: an error that carries `text` as its `name` reports `outcome`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorRule {
    /// What `text` names.
    pub name: ErrorName,
    /// The name, as the error carries it.
    pub text: &'static str,
    /// What an error that carries it reports.
    pub outcome: Outcome,
}

const fn rule(name: ErrorName, text: &'static str, outcome: Outcome) -> ErrorRule {
    ErrorRule {
        name,
        text,
        outcome,
    }
}

use ErrorName::{Code, Errno, Kind};
use Outcome::{Cancelled, ConnectionError as Conn, Timeout};

/// The rules, in the order they are tried: an error that names several (a client's
/// "connect timeout" is a connection error and a timeout) reports the first. Timeouts come
/// first, then connection failures, then a caller that gave up.
///
/// `ETIMEDOUT` is a timeout in every host: the kernel gave up waiting, which is what a
/// timeout means; both are faults by default, so only the outcome's name depends on it.
pub const RULES: &[ErrorRule] = &[
    rule(Errno, "ETIMEDOUT", Timeout),
    rule(Code, "UND_ERR_HEADERS_TIMEOUT", Timeout),
    rule(Code, "UND_ERR_BODY_TIMEOUT", Timeout),
    rule(Code, "ABORT_ERR_TIMEOUT", Timeout),
    rule(Kind, "TimeoutError", Timeout),
    rule(Kind, "TimedOut", Timeout),
    // A socket read that timed out: Rust reports `SO_RCVTIMEO` as `WouldBlock`.
    rule(Kind, "WouldBlock", Timeout),
    rule(Kind, "asyncio.TimeoutError", Timeout),
    rule(Kind, "requests.Timeout", Timeout),
    rule(Kind, "httpx.TimeoutException", Timeout),
    rule(Kind, "httpcore.TimeoutException", Timeout),
    rule(Kind, "urllib3.TimeoutError", Timeout),
    rule(Kind, "aiohttp.ServerTimeoutError", Timeout),
    rule(Kind, "aiohttp.ConnectionTimeoutError", Timeout),
    rule(Kind, "aiohttp.SocketTimeoutError", Timeout),
    rule(Errno, "ECONNREFUSED", Conn),
    rule(Errno, "ECONNRESET", Conn),
    rule(Errno, "ECONNABORTED", Conn),
    rule(Errno, "ENOTCONN", Conn),
    rule(Errno, "EPIPE", Conn),
    rule(Errno, "EADDRNOTAVAIL", Conn),
    rule(Errno, "EHOSTUNREACH", Conn),
    rule(Errno, "EHOSTDOWN", Conn),
    rule(Errno, "ENETUNREACH", Conn),
    rule(Errno, "ENETDOWN", Conn),
    // Node's name-lookup failures.
    rule(Errno, "ENOTFOUND", Conn),
    rule(Errno, "EAI_AGAIN", Conn),
    // undici (Node's fetch) wraps socket failures in these.
    rule(Code, "UND_ERR_SOCKET", Conn),
    rule(Code, "UND_ERR_CONNECT_TIMEOUT", Conn),
    rule(Code, "UND_ERR_CLOSED", Conn),
    rule(Kind, "ConnectionError", Conn),
    rule(Kind, "socket.gaierror", Conn),
    rule(Kind, "ConnectionRefused", Conn),
    rule(Kind, "ConnectionReset", Conn),
    rule(Kind, "ConnectionAborted", Conn),
    rule(Kind, "NotConnected", Conn),
    rule(Kind, "AddrNotAvailable", Conn),
    rule(Kind, "BrokenPipe", Conn),
    rule(Kind, "HostUnreachable", Conn),
    rule(Kind, "NetworkUnreachable", Conn),
    rule(Kind, "NetworkDown", Conn),
    rule(Kind, "requests.ConnectionError", Conn),
    rule(Kind, "httpx.NetworkError", Conn),
    rule(Kind, "httpx.RemoteProtocolError", Conn),
    rule(Kind, "httpcore.NetworkError", Conn),
    rule(Kind, "httpcore.RemoteProtocolError", Conn),
    rule(Kind, "urllib3.NewConnectionError", Conn),
    rule(Kind, "urllib3.ProtocolError", Conn),
    rule(Kind, "urllib3.MaxRetryError", Conn),
    rule(Kind, "aiohttp.ClientConnectionError", Conn),
    rule(Errno, "EINTR", Cancelled),
    rule(Kind, "AbortError", Cancelled),
    rule(Kind, "Interrupted", Cancelled),
];

/// The outcome of the first rule whose name the error carries (`carries(name, text)`),
/// or `None` when it carries none.
pub fn outcome_of(mut carries: impl FnMut(ErrorName, &str) -> bool) -> Option<Outcome> {
    RULES
        .iter()
        .find(|rule| carries(rule.name, rule.text))
        .map(|rule| rule.outcome)
}

/// The outcome of an error that carries exactly one name.
pub fn outcome_of_name(name: ErrorName, text: &str) -> Option<Outcome> {
    outcome_of(|n, t| n == name && t == text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_told_once_and_names_a_kind_without_a_code() {
        for (i, a) in RULES.iter().enumerate() {
            assert!(
                matches!(a.outcome, Timeout | Conn | Cancelled),
                "{a:?}: a name reports a timeout, a connection error or a cancel"
            );
            for b in RULES.iter().skip(i + 1) {
                assert!((a.name, a.text) != (b.name, b.text), "{a:?} told twice");
            }
        }
    }

    #[test]
    fn an_unknown_name_says_nothing() {
        assert_eq!(outcome_of_name(Errno, "ENOENT"), None);
        assert_eq!(outcome_of_name(Kind, "ETIMEDOUT"), None);
    }
}
