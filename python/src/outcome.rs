//! Python values as the core's outcomes.
//!
//! The rules are the core's (`SPEC.md` § Outcomes): the Python side only says what it
//! saw. A returned value with an HTTP status (`status_code`, then `status`: `requests`,
//! `httpx`, `aiohttp` responses) reports that status; any other value is a success. A
//! raised exception is classified by `crate::classify` (the core's error table, statuses
//! and gRPC codes, through the cause chain); an exception
//! that is not an `Exception` (`KeyboardInterrupt`, `asyncio.CancelledError`) is
//! `cancelled`. A breaker's `classify` option replaces both.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

use tripgate_core::{Outcome, OutcomeKind};

use crate::stay_away::{self, Judged};

// The primitives a raised exception's classification reads, kept with it.
pub use crate::classify::{grpc, is_interrupt, status, status_of};

/// An outcome named in the vectors' words: `success`, `timeout`, `connection-error`,
/// `failure`, `cancelled`, `ignored`, `status:503`, `grpc:14` (`_` for `-` too).
pub fn parse_name(text: &str) -> PyResult<Outcome> {
    let bad = || {
        PyValueError::new_err(format!(
            "unknown outcome {text:?}: one of success, timeout, connection-error, failure, \
             cancelled, ignored, status:N, grpc:N, an HTTP status, a response or an exception"
        ))
    };
    let (name, code) = match text.split_once(':') {
        Some((name, code)) => (name, Some(code)),
        None => (text, None),
    };
    let kind = OutcomeKind::from_name(&name.replace('_', "-")).ok_or_else(bad)?;
    match (kind, code) {
        (OutcomeKind::Status, Some(code)) => {
            let n: i64 = code.trim().parse().map_err(|_| bad())?;
            status(n)
        }
        (OutcomeKind::Grpc, Some(code)) => {
            let n: i64 = code.trim().parse().map_err(|_| bad())?;
            grpc(n)
        }
        (kind, None) => Outcome::of_kind(kind).ok_or_else(bad),
        _ => Err(bad()),
    }
}

/// Whether `value`'s type is one that never carries a status: the values most calls
/// return, answered without looking up attributes.
#[inline(always)]
pub fn plain(value: &Bound<'_, PyAny>) -> bool {
    value.is_none()
        || value.is_exact_instance_of::<PyBool>()
        || value.is_exact_instance_of::<PyInt>()
        || value.is_exact_instance_of::<PyString>()
        || value.is_exact_instance_of::<PyBytes>()
        || value.is_exact_instance_of::<PyDict>()
        || value.is_exact_instance_of::<PyList>()
        || value.is_exact_instance_of::<PyTuple>()
        || value.is_exact_instance_of::<PyFloat>()
}

/// A returned value's outcome (no custom classifier); `Err` only for an interrupt.
pub fn of_value(value: &Bound<'_, PyAny>) -> PyResult<Outcome> {
    judge_value(value).map(|judged| judged.outcome)
}

/// A returned value's outcome and stay-away (no custom classifier): a response by its
/// status and headers (`crate::stay_away`); `Err` only for an interrupt.
#[inline(always)]
pub fn judge_value(value: &Bound<'_, PyAny>) -> PyResult<Judged> {
    if plain(value) {
        return Ok(Outcome::Success.into());
    }
    judge_response(value)
}

#[cold]
fn judge_response(value: &Bound<'_, PyAny>) -> PyResult<Judged> {
    let Some(code) = status_of(value)? else {
        return Ok(Outcome::Success.into());
    };
    let Some(n) = code.extract::<i64>().ok() else {
        return Ok(Outcome::Failure.into());
    };
    Ok(Judged {
        // The upstream answered, but not in HTTP (a status outside 100–599): the Rust
        // hosts' rule (`Status`), a failure.
        outcome: status(n).unwrap_or(Outcome::Failure),
        retry_after: stay_away::of_response(value, n)?,
    })
}

/// A raised exception's outcome by the package's rules (`crate::classify`); `Err` only
/// for an interrupt raised while it is classified (a `KeyboardInterrupt` from a signal).
pub fn of_error(error: &Bound<'_, PyAny>) -> PyResult<Outcome> {
    judge_error(error).map(|judged| judged.outcome)
}

/// A raised exception's outcome and the stay-away the answer it carries asked for.
pub fn judge_error(error: &Bound<'_, PyAny>) -> PyResult<Judged> {
    if is_interrupt(error) {
        // KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError: the
        // caller gave up, no evidence about the upstream.
        return Ok(Outcome::Cancelled.into());
    }
    crate::classify::judge_exception(error)
}

/// Any outcome a caller hands `record`: a name, an HTTP status (int), an exception, a
/// response (by its status, with the stay-away its headers ask for), or `None`
/// (success).
pub fn judge_any(value: &Bound<'_, PyAny>) -> PyResult<Judged> {
    if value.is_none() {
        return Ok(Outcome::Success.into());
    }
    if let Ok(text) = value.cast::<PyString>() {
        return parse_name(&text.to_cow()?).map(Judged::from);
    }
    if value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(
            "a bool is not an outcome: pass 'success' or 'failure'",
        ));
    }
    if value.is_instance_of::<PyInt>() {
        let n: i64 = value
            .extract()
            .map_err(|_| PyValueError::new_err("HTTP status is outside 100-599"))?;
        return status(n).map(Judged::from);
    }
    if value.is_instance_of::<pyo3::exceptions::PyBaseException>() {
        return judge_error(value);
    }
    match status_of(value)? {
        Some(code) => {
            let n: i64 = code
                .extract()
                .map_err(|_| PyValueError::new_err("HTTP status is outside 100-599"))?;
            Ok(Judged {
                outcome: status(n)?,
                retry_after: stay_away::of_response(value, n)?,
            })
        }
        None => Err(PyTypeError::new_err(format!(
            "cannot read an outcome from a {}: pass an outcome name, an HTTP status, an \
             exception or a response with a status_code or status",
            value
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "?".into())
        ))),
    }
}

/// `judge_any`'s outcome alone (what a custom classifier's answer is read as).
pub fn of_any(value: &Bound<'_, PyAny>) -> PyResult<Outcome> {
    judge_any(value).map(|judged| judged.outcome)
}

/// A custom classifier's answer for a value or an exception: `Ok(None)` when it returned
/// `None` (the package's rules decide), `Err` when it raised (a `KeyboardInterrupt` too:
/// the caller tells the two apart) or returned something that is not an outcome.
pub fn of_custom(
    py: Python<'_>,
    classify: &Py<PyAny>,
    value: &Bound<'_, PyAny>,
) -> PyResult<Option<Outcome>> {
    let result = classify.bind(py).call1((value,))?;
    if result.is_none() {
        return Ok(None);
    }
    of_any(&result).map(Some).map_err(|error| {
        if is_interrupt(error.value(py)) {
            return error;
        }
        let err = PyTypeError::new_err(format!(
            "classify returned {:.80}, which is not an outcome ({})",
            result
                .repr()
                .map(|r| r.to_string())
                .unwrap_or_else(|_| "?".into()),
            error.value(py)
        ));
        err.set_cause(py, Some(error));
        err
    })
}

static GENERATOR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static ASYNC_GENERATOR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static COROUTINE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// What a value returned by a plain call is when its work has not run yet: a generator
/// (runs when iterated), an async generator, a coroutine (runs when awaited); None for
/// anything else. These types cannot be subclassed, so their exact types are compared.
pub fn lazy(value: &Bound<'_, PyAny>) -> PyResult<Option<&'static str>> {
    let py = value.py();
    let kind = value.get_type();
    for (cell, name, what) in [
        (&GENERATOR, "GeneratorType", "a generator"),
        (&COROUTINE, "CoroutineType", "a coroutine"),
        (&ASYNC_GENERATOR, "AsyncGeneratorType", "an async generator"),
    ] {
        if kind.is(cell.import(py, "types", name)?) {
            return Ok(Some(what));
        }
    }
    Ok(None)
}

/// An outcome in the vectors' words (`success`, `status:503`, `grpc:14`).
pub fn name_of(outcome: Outcome) -> String {
    match outcome {
        Outcome::Status(code) => format!("status:{}", code.get()),
        Outcome::Grpc(code) => format!("grpc:{}", code.get()),
        other => other.kind().name().to_string(),
    }
}
