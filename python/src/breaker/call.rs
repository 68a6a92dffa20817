//! The guarded call's machinery: the rejection objects, acquire → run → classify →
//! record → fall back, for plain and awaited calls, and the operator calls.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};

use tripgate::{Clock, Outcome, OwnedPermit, Rejection as CoreRejection};
use tripgate_core::{Class, Nanos};

use super::permit::Permit;
use super::values::{open_error, transitions_list, Rejection};
use super::{Breaker, Built};
use crate::clock::AnyClock;
use crate::outcome;
use crate::report;
use crate::stay_away::Judged;

/// The error for a plain call whose function returned work that has not run (`what`: a
/// generator, a coroutine, an async generator): recording it would guard nothing.
#[cold]
fn not_run(py: Python<'_>, f: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>, what: &str) -> PyErr {
    let name = f
        .getattr(pyo3::intern!(py, "__qualname__"))
        .and_then(|n| n.extract::<String>())
        .unwrap_or_else(|_| "the function".into());
    let advice = if what == "a coroutine" {
        let _ = value.call_method0(pyo3::intern!(py, "close"));
        "await breaker.call_async(fn, ...) (or decorate the coroutine function)"
    } else {
        if what == "a generator" {
            let _ = value.call_method0(pyo3::intern!(py, "close"));
        }
        "decorate the generator function with @breaker to guard its iteration"
    };
    PyTypeError::new_err(format!(
        "{name} returned {what}, whose work runs later, outside the guarded call: {advice}"
    ))
}

/// A budget in seconds as nanoseconds, at least 1.
pub(super) fn budget_ns(seconds: f64) -> u64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ns = (seconds * 1e9).round().max(1.0) as u64;
    ns
}

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

/// The coroutine functions `call_async` returns a frame of, handed over by the package's
/// Python side when it is imported (`_install_coroutines`): the native module imports
/// nothing of the package's.
pub(crate) struct Coroutines {
    run: Py<PyAny>,
    run_fallback: Py<PyAny>,
    run_timed: Py<PyAny>,
    raise: Py<PyAny>,
    value: Py<PyAny>,
    /// `_run_retrying(call, permit, awaitable, budget, has_fallback, fallback)`: the
    /// awaits and asyncio sleeps of a retried call, whose decisions are its `_Retrying`'s.
    pub(super) run_retrying: Py<PyAny>,
}

static COROUTINES: PyOnceLock<Coroutines> = PyOnceLock::new();

/// Takes the coroutine functions of `call_async` (`_run`, `_run_fallback`, `_run_timed`,
/// `_raise`, `_value`, `_run_retrying`); the first ones given stay.
#[pyfunction]
pub(crate) fn _install_coroutines(
    py: Python<'_>,
    run: Py<PyAny>,
    run_fallback: Py<PyAny>,
    run_timed: Py<PyAny>,
    raise: Py<PyAny>,
    value: Py<PyAny>,
    run_retrying: Py<PyAny>,
) {
    let _ = COROUTINES.set(
        py,
        Coroutines {
            run,
            run_fallback,
            run_timed,
            raise,
            value,
            run_retrying,
        },
    );
}

pub(super) fn coroutines(py: Python<'_>) -> PyResult<&Coroutines> {
    COROUTINES.get(py).ok_or_else(|| {
        pyo3::exceptions::PyRuntimeError::new_err(
            "call_async needs the tripgate package imported (import tripgate), not only its \
             native module",
        )
    })
}
static COROUTINE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

impl Breaker {
    /// The native breaker (fleet mode drives it through the `Member` operations).
    pub(crate) fn native(&self) -> PyResult<&Arc<tripgate::Breaker<AnyClock>>> {
        Ok(&self.built()?.inner)
    }

    /// Reads a callable clock (no-op for the others); call with no lock held.
    #[inline(always)]
    pub(crate) fn refresh(&self, py: Python<'_>) {
        if let Some(built) = self.built.get() {
            built.refresh(py);
        }
    }

    /// Admits an await's (first) attempt: its permit, or the call's answer decided now
    /// (the rejection's error, or the fallback's answer), as a coroutine.
    pub(super) fn admit_async<'py>(
        slf: &Bound<'py, Self>,
        helpers: &Coroutines,
        fallback: Option<&Py<PyAny>>,
    ) -> PyResult<Result<Bound<'py, Permit>, Bound<'py, PyAny>>> {
        let py = slf.py();
        let this = slf.get().built()?;
        this.refresh(py);
        match this.inner.acquire_owned() {
            Ok(permit) => Self::new_permit(slf, permit).map(Ok),
            Err(rejection) => {
                let answer = match fallback {
                    Some(fallback) if !fallback.bind(py).is_callable() => {
                        Ok(fallback.bind(py).clone())
                    }
                    Some(fallback) => open_error(py, &rejection, &this.shared.name)
                        .and_then(|error| fallback.bind(py).call1((error,))),
                    None => open_error(py, &rejection, &this.shared.name)
                        .and_then(|error| Err(PyErr::from_value(error))),
                };
                helpers.decided(py, answer).map(Err)
            }
        }
    }

    /// Starts a guarded await: the permit is taken now and `fn` called; the coroutine
    /// returned (of `_run`, `_run_fallback`, or `_run_timed` with a budget: see
    /// [`Coroutines`]) awaits its awaitable and records the outcome.
    pub(super) fn start_async<'py>(
        slf: &Bound<'py, Self>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        timeout: Option<f64>,
        fallback: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get().built()?;
        let helpers = coroutines(py)?;
        let permit = match Self::admit_async(slf, helpers, fallback.as_ref())? {
            Ok(permit) => permit,
            Err(decided) => return Ok(decided),
        };
        let awaitable = match f.call(args, kwargs) {
            Ok(awaitable) => awaitable,
            Err(error) => return this.failed_to_start(py, helpers, &permit, error, fallback),
        };
        awaitable_or_cancel(py, &permit, &awaitable)?;
        helpers.frame(py, permit, awaitable, timeout, fallback)
    }

    pub(super) fn new_permit<'py>(
        slf: &Bound<'py, Self>,
        permit: OwnedPermit<AnyClock>,
    ) -> PyResult<Bound<'py, Permit>> {
        let (probe, shadow) = (permit.is_probe(), permit.is_shadow());
        Bound::new(
            slf.py(),
            Permit {
                breaker: slf.clone().unbind(),
                permit: Some(permit),
                verdict: None,
                probe,
                shadow,
                entered: false,
                asked: 0,
            },
        )
    }
}

/// How the breaker classed an admitted attempt, for the retries: a fault or not, and the
/// stay-away its answer asked for (0: none).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Noted {
    pub(super) fault: bool,
    pub(super) asked: Nanos,
}

/// What one admitted attempt of a guarded call left, its outcome recorded.
pub(super) enum Ran<'py> {
    /// `fn` returned this value.
    Returned(Bound<'py, PyAny>),
    /// `fn` raised this error: the call's answer, or a fallback's when it is no interrupt.
    Raised(PyErr),
    /// No answer of the call's: work it returned that never ran, or an interrupt inside
    /// the classifier. Raised as it is, never replaced.
    Refused(PyErr),
}

/// Records a guarded call's outcome, with the stay-away it asked for if any; how the
/// breaker classed it.
#[inline(always)]
fn settle(permit: tripgate::Permit<'_, AnyClock>, judged: Judged) -> Noted {
    let verdict = match judged.retry_after {
        None => permit.record(judged.outcome),
        Some(ns) => permit.record_with_retry_after(judged.outcome, Duration::from_nanos(ns)),
    };
    Noted {
        fault: verdict.class == Class::Fault,
        asked: judged.retry_after.unwrap_or(0),
    }
}

/// Checks that `fn` returned an awaitable; if not, the call never happened: its permit
/// is released as `cancelled` and the error says what came back.
pub(super) fn awaitable_or_cancel(
    py: Python<'_>,
    permit: &Bound<'_, Permit>,
    awaitable: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let coroutine = COROUTINE.import(py, "types", "CoroutineType")?;
    if awaitable.is_instance(coroutine)? || awaitable.hasattr(pyo3::intern!(py, "__await__"))? {
        return Ok(());
    }
    permit.borrow_mut().finish(py, Outcome::Cancelled);
    Err(PyTypeError::new_err(format!(
        "call_async needs a function that returns an awaitable, got {}",
        awaitable.get_type().name()?
    )))
}

impl Coroutines {
    /// A coroutine that raises `error` when awaited (its traceback kept).
    pub(super) fn raising<'py>(
        &self,
        py: Python<'py>,
        error: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.raise.bind(py).call1((error,))
    }

    /// A value or an error decided before any await, as a coroutine.
    fn decided<'py>(
        &self,
        py: Python<'py>,
        result: PyResult<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match result {
            Ok(value) => self.value.bind(py).call1((value,)),
            Err(error) => self.raise.bind(py).call1((report::exception(py, &error),)),
        }
    }

    /// The coroutine that awaits `awaitable` under `permit`, within `timeout` if given,
    /// falling back to `fallback` if given.
    fn frame<'py>(
        &self,
        py: Python<'py>,
        permit: Bound<'py, Permit>,
        awaitable: Bound<'py, PyAny>,
        timeout: Option<f64>,
        fallback: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match (timeout, fallback) {
            (None, None) => self.run.bind(py).call1((permit, awaitable)),
            (None, Some(fallback)) => self
                .run_fallback
                .bind(py)
                .call1((permit, awaitable, fallback)),
            (Some(budget), fallback) => {
                let has_fallback = fallback.is_some();
                let fallback = fallback.unwrap_or_else(|| py.None());
                self.run_timed
                    .bind(py)
                    .call1((permit, awaitable, budget, has_fallback, fallback))
            }
        }
    }
}

impl Built {
    /// `fn` raised instead of returning an awaitable: the outcome is recorded now (an
    /// interrupt is raised now, rather than when awaited: it must not wait on a coroutine
    /// somebody may never await), and the answer, or the fallback's, is a coroutine.
    fn failed_to_start<'py>(
        &self,
        py: Python<'py>,
        helpers: &Coroutines,
        permit: &Bound<'py, Permit>,
        error: PyErr,
        fallback: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let value = report::exception(py, &error);
        if outcome::is_interrupt(&value) {
            permit.borrow_mut().finish(py, Outcome::Cancelled);
            return Err(error);
        }
        match self.judge_error(py, &value) {
            Ok(judged) => {
                permit.borrow_mut().finish_judged(py, judged);
            }
            Err(interrupt) => {
                permit.borrow_mut().finish(py, Outcome::Cancelled);
                return Err(interrupt);
            }
        }
        helpers.decided(
            py,
            match &fallback {
                Some(fallback) => fall_back(fallback.bind(py), &value),
                None => Err(error),
            },
        )
    }

    /// The `Rejection` for `rejection`.
    pub(super) fn rejection<'py>(
        &self,
        py: Python<'py>,
        rejection: &CoreRejection,
    ) -> PyResult<Bound<'py, Rejection>> {
        Bound::new(py, Rejection::new(rejection, Arc::clone(&self.shared.name)))
    }

    /// Reads a callable clock (no-op for the others); call with no lock held.
    #[inline(always)]
    pub(crate) fn refresh(&self, py: Python<'_>) {
        self.shared.clock.refresh(py);
    }

    /// A returned value's outcome by the breaker's rules (its `classify`, if given), with
    /// the stay-away it asked for; `Err` only for an interrupt, which the caller records
    /// as `cancelled` and raises.
    #[inline(always)]
    pub(crate) fn judge_value(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Judged> {
        match &self.shared.classify {
            None => outcome::judge_value(value),
            Some(classify) => self.classified(py, classify, value, outcome::judge_value),
        }
    }

    /// A raised exception's outcome by the breaker's rules, with the stay-away the
    /// answer it carries asked for: an interrupt is `cancelled` and never reaches
    /// `classify`. `Err` as for `judge_value`.
    pub(crate) fn judge_error(&self, py: Python<'_>, error: &Bound<'_, PyAny>) -> PyResult<Judged> {
        if outcome::is_interrupt(error) {
            return Ok(Outcome::Cancelled.into());
        }
        match &self.shared.classify {
            None => outcome::judge_error(error),
            Some(classify) => self.classified(py, classify, error, outcome::judge_error),
        }
    }

    /// `classify`'s answer; where it returns `None` the package's rules decide, and where
    /// it fails (raises, or returns what is not an outcome) too, the failure counted
    /// (`metrics()["classify_errors"]`) and logged: a broken classifier never trips the
    /// breaker by itself. An interrupt raised inside it goes on. The stay-away is read
    /// from `value` by the rules, whoever decides the outcome: it matters only when that
    /// outcome trips the breaker.
    fn classified<'py>(
        &self,
        py: Python<'py>,
        classify: &Py<PyAny>,
        value: &Bound<'py, PyAny>,
        rules: impl Fn(&Bound<'py, PyAny>) -> PyResult<Judged>,
    ) -> PyResult<Judged> {
        match outcome::of_custom(py, classify, value) {
            Ok(Some(outcome)) => Ok(Judged {
                outcome,
                retry_after: rules(value)?.retry_after,
            }),
            Ok(None) => rules(value),
            Err(error) if outcome::is_interrupt(error.value(py)) => Err(error),
            Err(error) => {
                self.classify_failed(py, &error);
                rules(value)
            }
        }
    }

    #[cold]
    fn classify_failed(&self, py: Python<'_>, error: &PyErr) {
        self.shared.classify_errors.fetch_add(1, Ordering::Relaxed);
        report::error(
            py,
            &format!(
                "tripgate: breaker {:?}: classify failed; the package's rules decided instead",
                &*self.shared.name
            ),
            error,
        );
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
        self.shared.clock.refresh(py);
        let permit = match self.inner.acquire() {
            Ok(permit) => permit,
            Err(rejection) => return self.turned_away(py, &rejection, fallback),
        };
        let mut noted = Noted::default();
        let ran = self.run_once(py, f, args, kwargs, timeout, permit, &mut noted);
        self.answer(py, ran, fallback)
    }

    /// Runs one admitted attempt of `fn` under `permit` and records its outcome (how the
    /// breaker classed it in `noted`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn run_once<'py>(
        &self,
        py: Python<'py>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        timeout: Option<u64>,
        permit: tripgate::Permit<'_, AnyClock>,
        noted: &mut Noted,
    ) -> Ran<'py> {
        let started = timeout.map(|_| self.inner.clock().now());
        let result = f.call(args, kwargs);
        self.shared.clock.refresh(py);
        // A synchronous call cannot be interrupted: one that returns after its budget, by
        // the breaker's clock, counts as a timeout (as the native breaker's `call`).
        let late = match (timeout, started) {
            (Some(limit), Some(start)) => self.inner.clock().now().saturating_sub(start) > limit,
            _ => false,
        };
        match result {
            Ok(value) => self.returned(py, f, permit, value, late, noted),
            Err(error) => self.raised(py, permit, error, late, noted),
        }
    }

    /// The call's answer from what its (last) attempt left: the value, the error, or the
    /// fallback's answer for an error the call raised (never for a caller giving up).
    #[inline(always)]
    pub(super) fn answer<'py>(
        &self,
        py: Python<'py>,
        ran: Ran<'py>,
        fallback: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match ran {
            Ran::Returned(value) => Ok(value),
            Ran::Refused(error) => Err(error),
            Ran::Raised(error) => match fallback {
                Some(fallback) if !outcome::is_interrupt(error.value(py)) => {
                    fall_back(fallback, &report::exception(py, &error))
                }
                _ => Err(error),
            },
        }
    }

    /// A call turned away: the fallback's answer (a value needs no exception made), or
    /// `CircuitOpenError`.
    pub(super) fn turned_away<'py>(
        &self,
        py: Python<'py>,
        rejection: &CoreRejection,
        fallback: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match fallback {
            Some(fallback) if !fallback.is_callable() => Ok(fallback.clone()),
            Some(fallback) => fallback.call1((open_error(py, rejection, &self.shared.name)?,)),
            None => Err(PyErr::from_value(open_error(
                py,
                rejection,
                &self.shared.name,
            )?)),
        }
    }

    /// The call returned `value`: recorded by its outcome (a timeout when `late`); work
    /// that has not run (a generator, a coroutine) is refused and the call cancelled.
    fn returned<'py>(
        &self,
        py: Python<'py>,
        f: &Bound<'py, PyAny>,
        permit: tripgate::Permit<'_, AnyClock>,
        value: Bound<'py, PyAny>,
        late: bool,
        noted: &mut Noted,
    ) -> Ran<'py> {
        if !outcome::plain(&value) {
            match outcome::lazy(&value) {
                Ok(Some(what)) => {
                    permit.record(Outcome::Cancelled);
                    return Ran::Refused(not_run(py, f, &value, what));
                }
                Ok(None) => {}
                Err(error) => {
                    permit.record(Outcome::Cancelled);
                    return Ran::Refused(error);
                }
            }
        }
        let judged = if late {
            Ok(Outcome::Timeout.into())
        } else {
            self.judge_value(py, &value)
        };
        match judged {
            Ok(judged) => {
                *noted = settle(permit, judged);
                Ran::Returned(value)
            }
            Err(interrupt) => {
                permit.record(Outcome::Cancelled);
                Ran::Refused(interrupt)
            }
        }
    }

    /// The call raised `error`: recorded by its outcome (a timeout when `late`). An
    /// interrupt (KeyboardInterrupt, SystemExit, a cancelled task) is the caller giving
    /// up, late or not: cancelled.
    fn raised<'py>(
        &self,
        py: Python<'py>,
        permit: tripgate::Permit<'_, AnyClock>,
        error: PyErr,
        late: bool,
        noted: &mut Noted,
    ) -> Ran<'py> {
        let value = report::exception(py, &error);
        let judged = match (outcome::is_interrupt(&value), late) {
            (true, _) => Ok(Outcome::Cancelled.into()),
            (false, true) => Ok(Outcome::Timeout.into()),
            (false, false) => self.judge_error(py, &value),
        };
        match judged {
            Ok(judged) => {
                *noted = settle(permit, judged);
                Ran::Raised(error)
            }
            Err(interrupt) => {
                permit.record(Outcome::Cancelled);
                Ran::Refused(interrupt)
            }
        }
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
