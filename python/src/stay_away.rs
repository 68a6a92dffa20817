//! The upstream's stay-away (`SPEC.md` § Retry-After) as the package reads it: a
//! response's `Retry-After` on a 429 or a 503 (an HTTP date against the wall clock,
//! `time.time()`), else its `grpc-retry-pushback-ms`; a gRPC error's trailing metadata
//! `grpc-retry-pushback-ms`. The values are read by the core's rules
//! (`tripgate_core::retry_after`), never here: this module only finds the text.

use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyModule, PyString};

use tripgate_core::{retry_after, Nanos, Outcome};

/// What a call's result or error reads as: its outcome and the stay-away it asked for
/// (`None`: it asked nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Judged {
    pub outcome: Outcome,
    pub retry_after: Option<Nanos>,
}

impl From<Outcome> for Judged {
    #[inline(always)]
    fn from(outcome: Outcome) -> Self {
        Self {
            outcome,
            retry_after: None,
        }
    }
}

/// The stay-away a response-like `holder` with HTTP `status` asks for, from its
/// `headers` (looked up with their `get`, case-insensitive in requests, httpx, aiohttp,
/// urllib3 and http.client; a plain `dict` is searched without regard to case). `Err`
/// only for an interrupt raised while they are read.
pub fn of_response(holder: &Bound<'_, PyAny>, status: i64) -> PyResult<Option<Nanos>> {
    let py = holder.py();
    let headers = match holder.getattr_opt(intern!(py, "headers")) {
        Ok(Some(headers)) if !headers.is_none() => headers,
        Err(error) if interrupted(py, &error) => return Err(error),
        _ => return Ok(None),
    };
    let applies = u16::try_from(status).is_ok_and(retry_after::applies);
    if applies {
        if let Some(value) = header(&headers, intern!(py, "retry-after"))? {
            if let Some(ns) = retry_after::http(&value, unix_now(py)?) {
                return Ok(Some(ns));
            }
        }
    }
    let pushback = header(&headers, intern!(py, "grpc-retry-pushback-ms"))?;
    Ok(pushback.and_then(|value| retry_after::grpc_pushback(&value)))
}

/// The pushback a gRPC error asks for, from its `trailing_metadata()` (`(key, value)`
/// pairs). `Err` only for an interrupt.
pub fn of_grpc_error(error: &Bound<'_, PyAny>) -> PyResult<Option<Nanos>> {
    let py = error.py();
    let metadata = match error.call_method0(intern!(py, "trailing_metadata")) {
        Ok(metadata) if !metadata.is_none() => metadata,
        Err(raised) if interrupted(py, &raised) => return Err(raised),
        _ => return Ok(None),
    };
    let Ok(pairs) = metadata.try_iter() else {
        return Ok(None);
    };
    for pair in pairs {
        let Ok((key, value)) =
            pair.and_then(|p| p.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>())
        else {
            continue;
        };
        if text(&key).is_some_and(|k| k.eq_ignore_ascii_case("grpc-retry-pushback-ms")) {
            return Ok(text(&value).and_then(|v| retry_after::grpc_pushback(&v)));
        }
    }
    Ok(None)
}

/// Whether reading raised an interrupt (`KeyboardInterrupt`: not an `Exception`), the
/// only error that goes on; anything else raised while reading asks nothing.
fn interrupted(py: Python<'_>, error: &PyErr) -> bool {
    !error.is_instance_of::<PyException>(py)
}

/// One header's text, if present (a `str`, or `bytes` in UTF-8).
fn header(headers: &Bound<'_, PyAny>, name: &Bound<'_, PyString>) -> PyResult<Option<String>> {
    let py = headers.py();
    if let Ok(dict) = headers.cast::<PyDict>() {
        let wanted = name.to_cow()?;
        for (key, value) in dict.iter() {
            if text(&key).is_some_and(|k| k.eq_ignore_ascii_case(&wanted)) {
                return Ok(text(&value));
            }
        }
        return Ok(None);
    }
    match headers.call_method1(intern!(py, "get"), (name,)) {
        Ok(value) => Ok(text(&value)),
        Err(error) if interrupted(py, &error) => Err(error),
        Err(_) => Ok(None),
    }
}

fn text(value: &Bound<'_, PyAny>) -> Option<String> {
    if let Ok(s) = value.cast::<PyString>() {
        return s.to_cow().ok().map(|s| s.into_owned());
    }
    let bytes = value.cast::<PyBytes>().ok()?;
    std::str::from_utf8(bytes.as_bytes())
        .ok()
        .map(str::to_owned)
}

static TIME: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The wall clock in whole seconds since 1970, as `time.time()` gives it (looked up at
/// each reading, so a test may replace it); 0 for a reading that is not one.
fn unix_now(py: Python<'_>) -> PyResult<u64> {
    let time = TIME.get_or_try_init(py, || py.import("time").map(Bound::unbind))?;
    let reading = match time.bind(py).call_method0(intern!(py, "time")) {
        Ok(reading) => reading.extract::<f64>().unwrap_or(0.0),
        Err(error) if interrupted(py, &error) => return Err(error),
        Err(_) => 0.0,
    };
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let seconds = if reading.is_finite() && reading > 0.0 {
        reading.floor().min(u64::MAX as f64) as u64
    } else {
        0
    };
    Ok(seconds)
}

/// A `retry_after=` argument: seconds (an int, a float or a `timedelta`) as nanoseconds,
/// saturating; `TypeError` for another type, `ValueError` for a negative or non-finite
/// one.
pub fn seconds_arg(value: &Bound<'_, PyAny>) -> PyResult<Nanos> {
    let seconds: f64 = if value.is_instance_of::<PyBool>() {
        return Err(wrong_type(value));
    } else if value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>() {
        // An int beyond a float's range is beyond every stay-away: it saturates.
        value.extract().unwrap_or_else(|_| {
            if value.lt(0i32).unwrap_or(false) {
                -1.0
            } else {
                f64::MAX
            }
        })
    } else if value.get_type().name().is_ok_and(|n| n == "timedelta") {
        value
            .call_method0(intern!(value.py(), "total_seconds"))?
            .extract()?
    } else {
        return Err(wrong_type(value));
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(PyValueError::new_err(format!(
            "retry_after must be a finite number of seconds >= 0, not {seconds}"
        )));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ns = (seconds * 1e9).round().min(u64::MAX as f64) as u64;
    Ok(ns)
}

fn wrong_type(value: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "retry_after must be a number of seconds or a timedelta, not {}",
        crate::options::type_name(value)
    ))
}
