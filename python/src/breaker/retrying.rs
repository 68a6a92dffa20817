//! Guarded calls retried by the breaker's `Retries` (`SPEC.md` § Retries), as the Rust
//! hosts' loop (`tripgate_host::retry::retrying`) runs them:
//!
//! - every attempt is admitted by the breaker: a rejection ends the retries, and the
//!   breaker's answer (`CircuitOpenError`, or the fallback's) is the call's;
//! - a call whose first attempt is admitted pays into the budget once;
//! - only an attempt the breaker classed a fault is retried, as the core's `retry::next`
//!   decides on the shared budget: its wait is the core's full-jitter draw, or the
//!   answer's longer stay-away (read as `call` reads `Retry-After`), and a stay-away
//!   longer than `max_delay` ends the retries;
//! - plain calls wait on the breaker's clock (`AnyClock::wait`: a `FakeClock` moves
//!   forward, the others sleep in `time.sleep`); awaited ones in `asyncio.sleep`, in the
//!   package's `_run_retrying` frame, whose decisions are its `_Retrying`'s here. A task
//!   cancelled there ends its wait, and an attempt in flight is released as `cancelled`.

use std::sync::Arc;

use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use pyo3::PyTraverseError;

use tripgate::{Clock, Outcome};
use tripgate_core::retry::Next;
use tripgate_core::Class;

use super::call::{awaitable_or_cancel, coroutines, Coroutines, Noted};
use super::permit::Permit;
use super::retries::Retries;
use super::values::{open_error, seconds};
use super::{Breaker, Built};
use crate::outcome;
use crate::report;

impl Built {
    /// The guarded call retried by `retries`: acquire, run, classify, record, and while
    /// the core says so, wait and go again; then the last answer, or the fallback's.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn retrying<'py>(
        &self,
        py: Python<'py>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        timeout: Option<u64>,
        fallback: Option<&Bound<'py, PyAny>>,
        retries: &tripgate::Retries,
    ) -> PyResult<Bound<'py, PyAny>> {
        let clock = &self.shared.clock;
        let mut attempt = 1u8;
        loop {
            clock.refresh(py);
            let permit = match self.inner.acquire() {
                Ok(permit) => permit,
                Err(rejection) => return self.turned_away(py, &rejection, fallback),
            };
            if attempt == 1 {
                retries.deposit();
            }
            let mut noted = Noted::default();
            let ran = self.run_once(py, f, args, kwargs, timeout, permit, &mut noted);
            if noted.fault {
                let now = self.inner.clock().now();
                if let Next::Retry(wait) = retries.next(attempt, Class::Fault, noted.asked, now) {
                    // This attempt's answer is given up for the next one's.
                    drop(ran);
                    clock.wait(py, wait)?;
                    attempt = attempt.saturating_add(1);
                    continue;
                }
            }
            return self.answer(py, ran, fallback);
        }
    }
}

impl Breaker {
    /// Starts a retried await: its first attempt is admitted now (a rejection is the
    /// call's answer, as `start_async`'s), pays into the budget, and `fn` is called; the
    /// coroutine returned is `_run_retrying`'s.
    pub(super) fn start_retrying<'py>(
        slf: &Bound<'py, Self>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        timeout: Option<f64>,
        fallback: Option<Py<PyAny>>,
        retries: &Bound<'py, Retries>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let helpers = coroutines(py)?;
        let permit = match Self::admit_async(slf, helpers, fallback.as_ref())? {
            Ok(permit) => permit,
            Err(decided) => return Ok(decided),
        };
        let retries = Arc::clone(&retries.get().inner);
        retries.deposit();
        let call = Retrying {
            breaker: slf.clone().unbind(),
            f: f.clone().unbind(),
            args: args.clone().unbind(),
            kwargs: kwargs.map(|k| k.clone().unbind()),
            retries,
            attempt: 1,
        };
        let awaitable = call.begin(py, helpers, &permit)?;
        let has_fallback = fallback.is_some();
        let fallback = fallback.unwrap_or_else(|| py.None());
        helpers.run_retrying.bind(py).call1((
            Bound::new(py, call)?,
            permit,
            awaitable,
            timeout,
            has_fallback,
            fallback,
        ))
    }
}

/// One retried await's attempts: `_run_retrying` awaits each and asks `after(permit)`
/// what to do next (the core's decision), and `again()` for the next attempt.
#[pyclass(module = "tripgate._native", name = "_Retrying")]
pub struct Retrying {
    breaker: Py<Breaker>,
    f: Py<PyAny>,
    args: Py<PyTuple>,
    kwargs: Option<Py<PyDict>>,
    retries: Arc<tripgate::Retries>,
    /// The attempt under way (1 for the first).
    attempt: u8,
}

impl Retrying {
    /// Calls `fn` for the attempt admitted by `permit`: its awaitable, or, when `fn` raised
    /// before returning one, a coroutine that raises it (its outcome is recorded as any
    /// attempt's when awaited). An interrupt is raised now, its permit cancelled.
    fn begin<'py>(
        &self,
        py: Python<'py>,
        helpers: &Coroutines,
        permit: &Bound<'py, Permit>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let kwargs = self.kwargs.as_ref().map(|k| k.bind(py));
        match self.f.bind(py).call(self.args.bind(py), kwargs) {
            Ok(awaitable) => {
                awaitable_or_cancel(py, permit, &awaitable)?;
                Ok(awaitable)
            }
            Err(error) => {
                let value = report::exception(py, &error);
                if outcome::is_interrupt(&value) {
                    permit.borrow_mut().finish(py, Outcome::Cancelled);
                    return Err(error);
                }
                helpers.raising(py, &value)
            }
        }
    }
}

#[pymethods]
impl Retrying {
    /// After the attempt under `permit` was recorded: the seconds to wait before the next
    /// attempt (a retry taken from the budget), or None: the retries end with this
    /// attempt's answer (not a fault, or the core said stop).
    fn after(&self, py: Python<'_>, permit: &Bound<'_, Permit>) -> PyResult<Option<f64>> {
        let (verdict, asked) = {
            let permit = permit.borrow();
            (permit.verdict, permit.asked)
        };
        if !verdict.is_some_and(|v| v.class == Class::Fault) {
            return Ok(None);
        }
        let breaker = self.breaker.get();
        breaker.refresh(py);
        let now = breaker.native()?.clock().now();
        Ok(
            match self.retries.next(self.attempt, Class::Fault, asked, now) {
                Next::Retry(wait) => Some(seconds(wait)),
                Next::Stop(_) => None,
            },
        )
    }

    /// The next attempt, admitted by the breaker and started: `(permit, awaitable)`.
    /// Raises the breaker's `CircuitOpenError` when it turns the attempt away.
    fn again<'py>(&mut self, py: Python<'py>) -> PyResult<(Bound<'py, Permit>, Bound<'py, PyAny>)> {
        self.attempt = self.attempt.saturating_add(1);
        let breaker = self.breaker.bind(py);
        let this = breaker.get().built()?;
        this.refresh(py);
        let helpers = coroutines(py)?;
        match this.inner.acquire_owned() {
            Ok(permit) => {
                let permit = Breaker::new_permit(breaker, permit)?;
                let awaitable = self.begin(py, helpers, &permit)?;
                Ok((permit, awaitable))
            }
            Err(rejection) => Err(PyErr::from_value(open_error(
                py,
                &rejection,
                &this.shared.name,
            )?)),
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.breaker)?;
        visit.call(&self.f)?;
        visit.call(&self.args)?;
        if let Some(kwargs) = &self.kwargs {
            visit.call(kwargs)?;
        }
        Ok(())
    }
}
