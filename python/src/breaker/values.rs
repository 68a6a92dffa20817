//! `Rejection` and `Transition`: the values a breaker hands out, read-only.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyList;

use tripgate::{Rejection as CoreRejection, Transition as CoreTransition};

use crate::clock::AnyClock;

pub(super) fn seconds(ns: u64) -> f64 {
    AnyClock::seconds(ns)
}

/// The `CircuitOpenError` for a rejection.
pub(super) fn open_error<'py>(
    py: Python<'py>,
    rejection: &CoreRejection,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    crate::errors::circuit_open(py)?.call1((
        rejection.reason.name(),
        rejection.state.name(),
        seconds(rejection.retry_after),
        name,
    ))
}

pub(super) fn transitions_list<'py>(
    py: Python<'py>,
    ts: &[CoreTransition],
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for t in ts {
        list.append(Bound::new(py, Transition::from(*t))?)?;
    }
    Ok(list)
}

/// A call the breaker turned away (falsy). `reason`: `open`, `probing`, `isolated`,
/// `saturated` or `probing-elsewhere`; `retry_after` in seconds (0: no estimate).
#[pyclass(frozen, module = "tripgate._native", name = "Rejection")]
pub struct Rejection {
    rejection: CoreRejection,
    breaker: Arc<str>,
}

impl Rejection {
    pub(super) fn new(rejection: &CoreRejection, breaker: Arc<str>) -> Self {
        Self {
            rejection: *rejection,
            breaker,
        }
    }

    fn inner(&self) -> CoreRejection {
        self.rejection
    }
}

#[pymethods]
impl Rejection {
    /// Always false: the call was turned away.
    #[getter]
    fn admitted(&self) -> bool {
        false
    }

    /// Why the call was turned away: `open` (open, or tripped by hang detection at this call),
    /// `probing` (half-open, every probe slot taken), `isolated`, `saturated`
    /// (`max_in_flight` calls out) or `probing-elsewhere` (a fleet member without the
    /// probe lease).
    #[getter]
    fn reason(&self) -> &'static str {
        self.inner().reason.name()
    }

    /// The state that rejected.
    #[getter]
    fn state(&self) -> &'static str {
        self.inner().state.name()
    }

    /// Seconds until a call could be admitted (0 when there is no estimate).
    #[getter]
    fn retry_after(&self) -> f64 {
        seconds(self.rejection.retry_after)
    }

    /// `retry_after` in nanoseconds.
    #[getter]
    fn retry_after_ns(&self) -> u64 {
        self.rejection.retry_after
    }

    /// Always false: nothing to record.
    #[getter]
    fn probe(&self) -> bool {
        false
    }

    /// The `CircuitOpenError` to raise for this rejection.
    fn error<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        open_error(py, &self.inner(), &self.breaker)
    }

    fn __bool__(&self) -> bool {
        false
    }

    fn __repr__(&self) -> String {
        let inner = self.inner();
        format!(
            "<Rejection {} ({}), retry after {:.3}s>",
            inner.reason.name(),
            inner.state.name(),
            seconds(inner.retry_after)
        )
    }
}

/// What `reconfigure` did: `window_kept` (the window kept its outcomes, its shape being
/// the same, or started empty) and `transitions` (those time alone had made due, made
/// under the old configuration before the new one took over; the listeners heard them).
#[pyclass(frozen, module = "tripgate._native", name = "Reconfigured")]
pub struct Reconfigured {
    inner: tripgate::Reconfigured,
}

impl From<tripgate::Reconfigured> for Reconfigured {
    fn from(inner: tripgate::Reconfigured) -> Self {
        Self { inner }
    }
}

#[pymethods]
impl Reconfigured {
    /// Whether the window kept its outcomes: its shape (`window_calls`, or `window` and
    /// `buckets`) is the same. Otherwise it started empty.
    #[getter]
    fn window_kept(&self) -> bool {
        self.inner.window_kept
    }

    /// The transitions the reconfiguration made (a new list at each read), as
    /// `isolate()` and the others return theirs.
    #[getter]
    fn transitions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        transitions_list(py, self.inner.transitions.as_slice())
    }

    fn __repr__(&self) -> String {
        let count = self.inner.transitions.as_slice().len();
        format!(
            "<Reconfigured: window {}, {count} transition{}>",
            if self.inner.window_kept {
                "kept"
            } else {
                "started empty"
            },
            if count == 1 { "" } else { "s" }
        )
    }
}

/// A state change: `from_state`, `to_state`, `reason`, `at` (seconds on the breaker's
/// clock; `at_ns`), `epoch` (the one entered).
#[pyclass(frozen, module = "tripgate._native", name = "Transition")]
pub struct Transition {
    inner: CoreTransition,
}

impl From<CoreTransition> for Transition {
    fn from(inner: CoreTransition) -> Self {
        Self { inner }
    }
}

#[pymethods]
impl Transition {
    /// The state left (`closed`, `open`, `half-open`, `isolated`, `disabled`).
    #[getter(from_state)]
    fn state_left(&self) -> &'static str {
        self.inner.from.name()
    }
    /// The state entered.
    #[getter(to_state)]
    fn state_entered(&self) -> &'static str {
        self.inner.to.name()
    }
    /// Why: one of `TRANSITION_REASONS` (`failure-threshold`, `cooldown-elapsed`, ...).
    #[getter]
    fn reason(&self) -> &'static str {
        self.inner.reason.name()
    }
    /// When, in seconds on the breaker's clock.
    #[getter]
    fn at(&self) -> f64 {
        seconds(self.inner.at)
    }
    /// When, in nanoseconds on the breaker's clock.
    #[getter]
    fn at_ns(&self) -> u64 {
        self.inner.at
    }
    /// The epoch entered: it counts the breaker's state changes.
    #[getter]
    fn epoch(&self) -> u64 {
        self.inner.epoch
    }
    /// `(from_state, to_state, reason)`.
    fn as_tuple(&self) -> (&'static str, &'static str, &'static str) {
        (
            self.inner.from.name(),
            self.inner.to.name(),
            self.inner.reason.name(),
        )
    }
    fn __repr__(&self) -> String {
        format!(
            "<Transition {}->{} ({}) at {:.3}s, epoch {}>",
            self.inner.from.name(),
            self.inner.to.name(),
            self.inner.reason.name(),
            seconds(self.inner.at),
            self.inner.epoch
        )
    }
}
