//! `Permit`: one admitted call, recorded once (or cancelled when dropped).

use pyo3::exceptions::PyRuntimeError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

use tripgate::{Outcome, OwnedPermit};
use tripgate_core::{Class, Verdict};

use super::Breaker;
use crate::clock::AnyClock;
use crate::outcome;

/// An admitted call. Record it once with `record(outcome)`; a permit dropped unrecorded
/// (garbage-collected, or `cancel()`) records `cancelled`, which counts as nothing.
#[pyclass(module = "tripgate._native", name = "Permit")]
pub struct Permit {
    pub(super) breaker: Py<Breaker>,
    pub(super) permit: Option<OwnedPermit<AnyClock>>,
    pub(super) verdict: Option<Verdict>,
    pub(super) probe: bool,
    /// Admitted by `with breaker:` whose block has not exited.
    pub(super) entered: bool,
}

impl Permit {
    pub(crate) fn finish(&mut self, py: Python<'_>, outcome: Outcome) -> Option<&'static str> {
        let permit = self.permit.take()?;
        self.breaker.get().refresh(py);
        let verdict = permit.record(outcome);
        self.verdict = Some(verdict);
        Some(verdict.class.name())
    }

    /// Records what the breaker's rules made of a value; an interrupt raised while they
    /// ran (inside `classify`, say) records `cancelled` and goes on.
    fn settle(&mut self, py: Python<'_>, outcome: PyResult<Outcome>) -> PyResult<&'static str> {
        match outcome {
            Ok(outcome) => self.finish(py, outcome).ok_or_else(Self::spent),
            Err(interrupt) => {
                self.finish(py, Outcome::Cancelled);
                Err(interrupt)
            }
        }
    }

    fn spent() -> PyErr {
        PyRuntimeError::new_err("this permit was already recorded")
    }
}

fn class_name(class: Class) -> &'static str {
    class.name()
}

#[pymethods]
impl Permit {
    /// Records the call's outcome and returns its class (`success`, `fault` or
    /// `neutral`). The outcome: `success` (the default), `timeout`, `connection-error`,
    /// `failure`, `cancelled`, `ignored`, `status:N`, `grpc:N`, an HTTP status (int), an
    /// exception (classified), or a response (by its `status_code` or `status`). One the
    /// breaker cannot read raises `ValueError`/`TypeError` and the permit stays out.
    #[pyo3(signature = (outcome = None))]
    fn record(
        &mut self,
        py: Python<'_>,
        outcome: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<&'static str> {
        if self.permit.is_none() {
            return Err(Self::spent());
        }
        let outcome = match outcome {
            None => Outcome::Success,
            Some(value) => match outcome::of_any(value) {
                Ok(outcome) => outcome,
                Err(error) if outcome::is_interrupt(error.value(py)) => {
                    return self.settle(py, Err(error))
                }
                // Unreadable: the permit stays out.
                Err(error) => return Err(error),
            },
        };
        self.finish(py, outcome).ok_or_else(Self::spent)
    }

    /// Records a returned value by the breaker's rules (a response by its status, else
    /// success; the breaker's `classify` if given).
    fn record_result(
        &mut self,
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<&'static str> {
        if self.permit.is_none() {
            return Err(Self::spent());
        }
        let outcome = self.breaker.get().built()?.outcome_of_value(py, value);
        self.settle(py, outcome)
    }

    /// Records a raised exception by the breaker's rules.
    fn record_error(&mut self, py: Python<'_>, error: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        if self.permit.is_none() {
            return Err(Self::spent());
        }
        let outcome = self.breaker.get().built()?.outcome_of_error(py, error);
        self.settle(py, outcome)
    }

    /// Gives the permit back as `cancelled` (no-op once recorded).
    fn cancel(&mut self, py: Python<'_>) {
        self.finish(py, Outcome::Cancelled);
    }

    /// Always true: the call was admitted.
    #[getter]
    fn admitted(&self) -> bool {
        true
    }

    /// Whether this call is a half-open probe.
    #[getter]
    fn probe(&self) -> bool {
        self.probe
    }

    /// Whether the permit is still out (not yet recorded).
    #[getter]
    fn pending(&self) -> bool {
        self.permit.is_some()
    }

    /// After `record`: the class (`success`, `fault`, `neutral`); None before.
    #[getter]
    fn outcome_class(&self) -> Option<&'static str> {
        self.verdict.map(|v| class_name(v.class))
    }

    /// After `record`: whether the success was slower than `slow_call_duration`.
    #[getter]
    fn slow(&self) -> Option<bool> {
        self.verdict.map(|v| v.slow)
    }

    /// After `record`: whether the permit was from an earlier state (nothing counted).
    #[getter]
    fn stale(&self) -> Option<bool> {
        self.verdict.map(|v| v.stale)
    }

    fn __bool__(&self) -> bool {
        true
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.breaker)
    }

    fn __repr__(&self) -> String {
        format!(
            "<Permit{}{}>",
            if self.probe { " probe" } else { "" },
            match self.verdict {
                Some(v) => format!(" recorded {}", v.class.name()),
                None if self.permit.is_some() => " pending".into(),
                None => " cancelled".into(),
            }
        )
    }
}
