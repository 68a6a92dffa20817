//! `Permit`: one admitted call, recorded once (or cancelled when dropped).

use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::PyTraverseError;

use tripgate::{Outcome, OwnedPermit};
use tripgate_core::{Class, Verdict};

use super::Breaker;
use crate::clock::AnyClock;
use crate::outcome;
use crate::stay_away::{self, Judged};

/// An admitted call. Record it once with `record(outcome)`; a permit dropped unrecorded
/// (garbage-collected, or `cancel()`) records `cancelled`, which counts as nothing.
#[pyclass(module = "tripgate._native", name = "Permit")]
pub struct Permit {
    pub(super) breaker: Py<Breaker>,
    pub(super) permit: Option<OwnedPermit<AnyClock>>,
    pub(super) verdict: Option<Verdict>,
    pub(super) probe: bool,
    /// Admitted only because the breaker is in shadow mode.
    pub(super) shadow: bool,
    /// Admitted by `with breaker:` whose block has not exited.
    pub(super) entered: bool,
    /// Once recorded: the stay-away its answer asked for, in ns (0: none), which a retried
    /// call's next wait is at least.
    pub(super) asked: u64,
}

impl Permit {
    pub(crate) fn finish(&mut self, py: Python<'_>, outcome: Outcome) -> Option<&'static str> {
        self.finish_judged(py, outcome.into())
    }

    /// Records an outcome with the stay-away it asked for, if any (`None` once recorded).
    pub(crate) fn finish_judged(&mut self, py: Python<'_>, judged: Judged) -> Option<&'static str> {
        let permit = self.permit.take()?;
        self.breaker.get().refresh(py);
        let verdict = match judged.retry_after {
            None => permit.record(judged.outcome),
            Some(ns) => permit.record_with_retry_after(judged.outcome, Duration::from_nanos(ns)),
        };
        self.verdict = Some(verdict);
        self.asked = judged.retry_after.unwrap_or(0);
        Some(verdict.class.name())
    }

    /// Records what the breaker's rules made of a value; an interrupt raised while they
    /// ran (inside `classify`, say) records `cancelled` and goes on.
    fn settle(&mut self, py: Python<'_>, judged: PyResult<Judged>) -> PyResult<&'static str> {
        match judged {
            Ok(judged) => self.finish_judged(py, judged).ok_or_else(Self::spent),
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
    ///
    /// `retry_after`: how long the upstream asked its callers to stay away, in seconds
    /// (or a `timedelta`); if this outcome trips the breaker, it opens for at least that
    /// long, as far as `max_cooldown` allows (`SPEC.md` § Retry-After). Not given, it is
    /// read from a response's `Retry-After` (on a 429 or a 503) or
    /// `grpc-retry-pushback-ms` headers, or from the response an exception carries.
    #[pyo3(signature = (outcome = None, *, retry_after = None))]
    fn record(
        &mut self,
        py: Python<'_>,
        outcome: Option<&Bound<'_, PyAny>>,
        retry_after: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<&'static str> {
        if self.permit.is_none() {
            return Err(Self::spent());
        }
        // Read before the outcome: a bad one leaves the permit out.
        let asked = match retry_after {
            Some(value) if !value.is_none() => Some(stay_away::seconds_arg(value)?),
            _ => None,
        };
        let mut judged = match outcome {
            None => Outcome::Success.into(),
            Some(value) => match outcome::judge_any(value) {
                Ok(judged) => judged,
                Err(error) if outcome::is_interrupt(error.value(py)) => {
                    return self.settle(py, Err(error))
                }
                // Unreadable: the permit stays out.
                Err(error) => return Err(error),
            },
        };
        if asked.is_some() {
            judged.retry_after = asked;
        }
        self.finish_judged(py, judged).ok_or_else(Self::spent)
    }

    /// Records a returned value by the breaker's rules (a response by its status, else
    /// success; the breaker's `classify` if given), with the stay-away its headers ask
    /// for.
    fn record_result(
        &mut self,
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<&'static str> {
        if self.permit.is_none() {
            return Err(Self::spent());
        }
        let judged = self.breaker.get().built()?.judge_value(py, value);
        self.settle(py, judged)
    }

    /// Records a raised exception by the breaker's rules, with the stay-away the response
    /// it carries asks for.
    fn record_error(&mut self, py: Python<'_>, error: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        if self.permit.is_none() {
            return Err(Self::spent());
        }
        let judged = self.breaker.get().built()?.judge_error(py, error);
        self.settle(py, judged)
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

    /// Whether shadow mode let this call through (`shadow=True`): the breaker would have
    /// turned it away, and its outcome counts nothing.
    #[getter]
    fn shadow(&self) -> bool {
        self.shadow
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
            "<Permit{}{}{}>",
            if self.probe { " probe" } else { "" },
            if self.shadow { " shadow" } else { "" },
            match self.verdict {
                Some(v) => format!(" recorded {}", v.class.name()),
                None if self.permit.is_some() => " pending".into(),
                None => " cancelled".into(),
            }
        )
    }
}
