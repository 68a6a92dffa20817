//! A raised exception's outcome: the core's error table (`tripgate_core::errors`) over the
//! names each exception of its chain carries, after the status or gRPC code it carries.
//!
//! For each exception of the chain (`__cause__`, else `__context__` unless suppressed; the
//! exception itself and at most `MAX_CAUSES - 1` more), the first that says something
//! decides:
//! 1. an HTTP status on it or on its `response` (`status_code`, else `status`: requests'
//!    and httpx's errors through `response`, aiohttp's `ClientResponseError` itself):
//!    `status:N`, or `failure` outside 100–599;
//! 2. a gRPC error (a class of the `grpc` package with `code()`): `grpc:N`, or `failure`
//!    outside 0–16;
//! 3. the names it carries, by the core's table: its `errno` by name (`ETIMEDOUT`), and
//!    every class of its type's hierarchy, a built-in by its name (`ConnectionError`),
//!    any other as `package.Class` (`requests.Timeout`).
//!
//! The exception that decides also says how long the upstream asked its callers to stay
//! away (`crate::stay_away`): the headers of the response that carried the status, a gRPC
//! error's trailing metadata.
//!
//! Nothing is imported from the package's Python modules; from the standard library only
//! `errno`'s table of names.

use pyo3::exceptions::{PyException, PyOSError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyInt, PyString, PyTuple, PyType};

use tripgate_core::{errors, ErrorName, Outcome, MAX_CAUSES};

use crate::stay_away::{self, Judged};

/// The outcome of `error` and its causes, with the stay-away asked for by the exception
/// that decided it (the response it carries, a gRPC error's trailing metadata: see
/// `crate::stay_away`); `Err` only for an interrupt raised while one is read.
pub fn judge_exception(error: &Bound<'_, PyAny>) -> PyResult<Judged> {
    let mut link = Some(error.clone());
    for _ in 0..MAX_CAUSES {
        let Some(error) = link else { break };
        if let Some(judged) = one(&error)? {
            return Ok(judged);
        }
        link = cause(&error)?;
    }
    Ok(Outcome::Failure.into())
}

/// What one exception of the chain says, if anything.
fn one(error: &Bound<'_, PyAny>) -> PyResult<Option<Judged>> {
    let py = error.py();
    let response = read(error, intern!(py, "response"))?;
    for holder in [Some(error.clone()), response].into_iter().flatten() {
        if let Some(code) = status_of(&holder)? {
            let Some(n) = code.extract::<i64>().ok() else {
                return Ok(Some(Outcome::Failure.into()));
            };
            return Ok(Some(Judged {
                outcome: status(n).unwrap_or(Outcome::Failure),
                retry_after: stay_away::of_response(&holder, n)?,
            }));
        }
    }
    if let Some(code) = grpc_code(error)? {
        return Ok(Some(Judged {
            outcome: grpc(code).unwrap_or(Outcome::Failure),
            retry_after: stay_away::of_grpc_error(error)?,
        }));
    }
    let kinds = kind_names(&error.get_type())?;
    let errno = errno_name(error)?;
    Ok(errors::outcome_of(|name, text| match name {
        ErrorName::Errno => errno.as_deref() == Some(text),
        ErrorName::Kind => kinds.iter().any(|kind| kind == text),
        ErrorName::Code => false,
    })
    .map(Judged::from))
}

/// The exception this one was raised from, or during.
fn cause<'py>(error: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = error.py();
    if let Some(cause) = read(error, intern!(py, "__cause__"))? {
        return Ok(Some(cause));
    }
    let suppressed = read(error, intern!(py, "__suppress_context__"))?
        .is_some_and(|s| s.is_truthy().unwrap_or(false));
    if suppressed {
        return Ok(None);
    }
    read(error, intern!(py, "__context__"))
}

/// An attribute, `None` when absent, `None` or raising; an interrupt raised reading it
/// is the only error.
fn read<'py>(
    value: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    match value.getattr_opt(name) {
        Ok(Some(v)) if !v.is_none() => Ok(Some(v)),
        Err(error) if is_interrupt(error.value(value.py())) => Err(error),
        _ => Ok(None),
    }
}

/// The names of the classes of `kind`'s hierarchy, as the core's table spells them.
fn kind_names(kind: &Bound<'_, PyType>) -> PyResult<Vec<String>> {
    let mut names = Vec::new();
    for class in kind.mro().iter() {
        let Ok(class) = class.cast_into::<PyType>() else {
            continue;
        };
        let name = class.name()?.to_string();
        let module = class.module()?.to_string();
        names.push(match module.as_str() {
            "builtins" => name,
            module => format!("{}.{name}", module.split('.').next().unwrap_or(module)),
        });
    }
    Ok(names)
}

static ERRNO_NAMES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

/// The errno name of an `OSError` (`errno.errorcode`, the platform's own table).
fn errno_name(error: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let py = error.py();
    if !error.is_instance_of::<PyOSError>() {
        return Ok(None);
    }
    let Some(code) = read(error, intern!(py, "errno"))? else {
        return Ok(None);
    };
    let names = ERRNO_NAMES.get_or_try_init(py, || -> PyResult<_> {
        let table = py.import("errno")?.getattr("errorcode")?;
        Ok(table.cast_into::<PyDict>()?.unbind())
    })?;
    Ok(names
        .bind(py)
        .get_item(code)?
        .and_then(|name| name.extract::<String>().ok()))
}

/// The code of a gRPC error: a class of the `grpc` package whose `code()` gives a
/// `grpc.StatusCode` (an `(int, name)` value) or an int.
fn grpc_code(error: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    let py = error.py();
    let of_grpc = kind_names(&error.get_type())?
        .iter()
        .any(|name| name.starts_with("grpc."));
    if !of_grpc {
        return Ok(None);
    }
    let Some(code) = read(error, intern!(py, "code"))? else {
        return Ok(None);
    };
    let value = match code.call0() {
        Ok(value) => value,
        Err(raised) if is_interrupt(raised.value(py)) => return Err(raised),
        Err(_) => return Ok(None),
    };
    let value = read(&value, intern!(py, "value"))?.unwrap_or(value);
    let value = match value.cast::<PyTuple>() {
        Ok(tuple) => tuple.get_item(0).ok(),
        Err(_) => Some(value),
    };
    Ok(value
        .filter(|v| v.is_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>())
        .and_then(|v| v.extract().ok()))
}

/// An HTTP status outcome, or a `ValueError` for a status outside 100–599.
pub fn status(n: i64) -> PyResult<Outcome> {
    u16::try_from(n)
        .ok()
        .and_then(|n| Outcome::status(n).ok())
        .ok_or_else(|| PyValueError::new_err(format!("HTTP status {n} is outside 100-599")))
}

/// A gRPC outcome, or a `ValueError` for a code outside 0–16.
pub fn grpc(n: i64) -> PyResult<Outcome> {
    u8::try_from(n)
        .ok()
        .and_then(|n| Outcome::grpc(n).ok())
        .ok_or_else(|| PyValueError::new_err(format!("gRPC code {n} is outside 0-16")))
}

/// The status a response-like value carries: `status_code`, else `status`, when it is an
/// int (an `HTTPStatus` too). Attributes that raise count as absent; an interrupt
/// raised while one is read (`KeyboardInterrupt`) is the only error.
pub fn status_of<'py>(value: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = value.py();
    for name in [intern!(py, "status_code"), intern!(py, "status")] {
        match value.getattr_opt(name) {
            Ok(Some(v)) if v.is_instance_of::<PyInt>() && !v.is_instance_of::<PyBool>() => {
                return Ok(Some(v));
            }
            Err(error) if is_interrupt(error.value(py)) => return Err(error),
            _ => {}
        }
    }
    Ok(None)
}

/// Whether a raised `error` is an interrupt rather than a failure: a `BaseException` that
/// is not an `Exception` (`KeyboardInterrupt`, `SystemExit`, `GeneratorExit`,
/// `asyncio.CancelledError`). Never a fault, never replaced by a fallback.
#[inline]
pub fn is_interrupt(error: &Bound<'_, PyAny>) -> bool {
    !error.is_instance_of::<PyException>()
}
