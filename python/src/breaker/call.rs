//! The guarded call's machinery: the rejection objects, acquire → run → classify →
//! record → fall back, for plain and awaited calls, and the operator calls.

use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};

use tripgate::{Clock, Outcome, OwnedPermit, Rejection as CoreRejection};

use super::permit::Permit;
use super::values::{open_error, transitions_list, Rejection};
use super::Breaker;
use crate::clock::AnyClock;
use crate::outcome;

pub(super) static STATE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// What a fallback gives for `error`: its result when it is callable, else itself.
pub(crate) fn fall_back<'py>(
    fallback: &Bound<'py, PyAny>,
    error: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if fallback.is_callable() {
        fallback.call1((error,))
    } else {
        Ok(fallback.clone())
    }
}

static ASYNC_HELPER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static RUN: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static RUN_FALLBACK: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static RAISE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static VALUE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static COROUTINE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

impl Breaker {
    /// The `Rejection` for `rejection`: the spare one refilled when the only reference to
    /// it is the spare slot's (the GIL is held, and the module keeps it: `gil_used`),
    /// else a new one that becomes the spare.
    pub(super) fn rejection<'py>(
        &self,
        py: Python<'py>,
        rejection: &CoreRejection,
    ) -> PyResult<Bound<'py, Rejection>> {
        let mut spare = self
            .shared
            .spare
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(object) = spare.as_ref() {
            // Deprecated for free-threaded builds, where a count read without the GIL
            // means nothing; this module keeps the GIL (`gil_used = true`).
            #[allow(deprecated)]
            let only_ours = object.get_refcnt(py) == 1;
            if only_ours {
                object.get().fill(rejection);
                return Ok(object.bind(py).clone());
            }
        }
        let object = Bound::new(py, Rejection::new(rejection, Arc::clone(&self.shared.name)))?;
        *spare = Some(object.clone().unbind());
        Ok(object)
    }

    /// The native breaker (fleet mode drives it through the `Member` operations).
    pub(crate) fn native(&self) -> &Arc<tripgate::Breaker<AnyClock>> {
        &self.inner
    }

    /// Reads a callable clock (no-op for the others); call with no lock held.
    #[inline(always)]
    pub(crate) fn refresh(&self, py: Python<'_>) {
        self.shared.clock.refresh(py);
    }

    /// Starts a guarded await: the permit is taken now and `fn` called; the coroutine
    /// returned (`tripgate._breaker._run`) awaits its awaitable and records the outcome.
    /// With a timeout, the coroutine of `_guarded_async` (which takes the permit when it
    /// starts) is returned instead.
    pub(super) fn start_async<'py>(
        slf: &Bound<'py, Self>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        timeout: Option<f64>,
        fallback: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        if let Some(timeout) = timeout {
            let kwargs = match kwargs {
                Some(k) => k.clone(),
                None => PyDict::new(py),
            };
            let has_fallback = fallback.is_some();
            let fallback = fallback.unwrap_or_else(|| py.None());
            return ASYNC_HELPER
                .import(py, "tripgate._breaker", "_guarded_async")?
                .call1((slf, f, args, kwargs, timeout, has_fallback, fallback));
        }
        this.refresh(py);
        let helper = |name: &str| -> PyResult<Bound<'py, PyAny>> {
            let cell = match name {
                "_run" => &RUN,
                "_run_fallback" => &RUN_FALLBACK,
                "_raise" => &RAISE,
                _ => &VALUE,
            };
            Ok(cell.import(py, "tripgate._breaker", name)?.clone())
        };
        // A value or an error decided before any await, as a coroutine.
        let decided = |result: PyResult<Bound<'py, PyAny>>| match result {
            Ok(value) => helper("_value")?.call1((value,)),
            Err(error) => helper("_raise")?.call1((error.value(py),)),
        };
        let permit = match this.inner.acquire_owned() {
            Ok(permit) => Self::new_permit(slf, permit)?,
            Err(rejection) => {
                return decided(match &fallback {
                    Some(fallback) if !fallback.bind(py).is_callable() => {
                        Ok(fallback.bind(py).clone())
                    }
                    Some(fallback) => open_error(py, &rejection, &this.shared.name)
                        .and_then(|error| fallback.bind(py).call1((error,))),
                    None => open_error(py, &rejection, &this.shared.name)
                        .and_then(|error| Err(PyErr::from_value(error))),
                });
            }
        };
        let awaitable = match f.call(args, kwargs) {
            Ok(awaitable) => awaitable,
            Err(error) => {
                let value = error.value(py).clone().into_any();
                let outcome = this.outcome_of_error(py, &value);
                permit.borrow_mut().finish(py, outcome);
                return decided(match &fallback {
                    Some(fallback) if outcome != Outcome::Cancelled => {
                        fall_back(fallback.bind(py), &value)
                    }
                    _ => Err(error),
                });
            }
        };
        let coroutine = COROUTINE.import(py, "types", "CoroutineType")?;
        if !awaitable.is_instance(coroutine)?
            && !awaitable.hasattr(pyo3::intern!(py, "__await__"))?
        {
            // Not an awaitable: the call never happened.
            permit.borrow_mut().finish(py, Outcome::Cancelled);
            return Err(PyTypeError::new_err(format!(
                "call_async needs a function that returns an awaitable, got {}",
                awaitable.get_type().name()?
            )));
        }
        match fallback {
            None => helper("_run")?.call1((permit, awaitable)),
            Some(fallback) => helper("_run_fallback")?.call1((permit, awaitable, fallback)),
        }
    }

    #[inline(always)]
    pub(crate) fn outcome_of_value(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> Outcome {
        match &self.shared.classify {
            None => outcome::of_value(value),
            Some(classify) => outcome::of_custom(py, classify, value),
        }
    }

    pub(crate) fn outcome_of_error(&self, py: Python<'_>, error: &Bound<'_, PyAny>) -> Outcome {
        if !error.is_instance_of::<pyo3::exceptions::PyException>() {
            return Outcome::Cancelled;
        }
        match &self.shared.classify {
            None => outcome::of_error(py, error),
            Some(classify) => outcome::of_custom(py, classify, error),
        }
    }

    /// The guarded call: acquire, run, classify, record, fall back.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn guarded<'py>(
        &self,
        py: Python<'py>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        timeout: Option<u64>,
        fallback: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let clock = &self.shared.clock;
        clock.refresh(py);
        let permit = match self.inner.acquire() {
            Ok(permit) => permit,
            Err(rejection) => {
                return match fallback {
                    // A fallback value needs no exception made.
                    Some(fallback) if !fallback.is_callable() => Ok(fallback.clone()),
                    Some(fallback) => {
                        fallback.call1((open_error(py, &rejection, &self.shared.name)?,))
                    }
                    None => Err(PyErr::from_value(open_error(
                        py,
                        &rejection,
                        &self.shared.name,
                    )?)),
                };
            }
        };
        let started = timeout.map(|_| self.inner.clock().now());
        let result = f.call(args, kwargs);
        clock.refresh(py);
        // A synchronous call cannot be interrupted: one that returns after its budget, by
        // the breaker's clock, counts as a timeout (as the native breaker's `call`).
        let late = match (timeout, started) {
            (Some(limit), Some(start)) => self.inner.clock().now().saturating_sub(start) > limit,
            _ => false,
        };
        match result {
            Ok(value) => {
                let outcome = if late {
                    Outcome::Timeout
                } else {
                    self.outcome_of_value(py, &value)
                };
                permit.record(outcome);
                Ok(value)
            }
            Err(error) => {
                let value = error.value(py).clone().into_any();
                let outcome = if late {
                    Outcome::Timeout
                } else {
                    self.outcome_of_error(py, &value)
                };
                permit.record(outcome);
                match fallback {
                    // A caller that gave up (KeyboardInterrupt, a cancelled task) gets no
                    // fallback: the exception goes on.
                    Some(fallback) if outcome != Outcome::Cancelled => fall_back(fallback, &value),
                    _ => Err(error),
                }
            }
        }
    }

    pub(super) fn new_permit<'py>(
        slf: &Bound<'py, Self>,
        permit: OwnedPermit<AnyClock>,
    ) -> PyResult<Bound<'py, Permit>> {
        let probe = permit.is_probe();
        Bound::new(
            slf.py(),
            Permit {
                breaker: slf.clone().unbind(),
                permit: Some(permit),
                verdict: None,
                probe,
                entered: false,
            },
        )
    }

    pub(super) fn manual(
        &self,
        py: Python<'_>,
        op: fn(&tripgate::Breaker<AnyClock>) -> tripgate::Transitions,
    ) -> PyResult<Py<PyList>> {
        self.shared.clock.refresh(py);
        let transitions = op(&self.inner);
        Ok(transitions_list(py, transitions.as_slice())?.unbind())
    }
}
