//! The Python breaker: `tripgate._native.Breaker` (which `tripgate.CircuitBreaker`
//! subclasses), its `Permit`, `Rejection` and `Transition` values.
//!
//! Each method translates: Python values in, the native breaker's (`tripgate::Breaker`)
//! call, Python values out. Every decision is the core's. Nothing here holds the breaker's
//! lock while Python code runs: the native breaker tells listeners after releasing it,
//! and a callable clock is read before any call into the breaker.

mod built;
mod call;
mod fleet;
mod guarded;
mod permit;
mod retries;
mod retrying;
mod values;

pub(crate) use built::Built;
pub(crate) use call::_install_coroutines;

pub(crate) use fleet::kind_of;
pub use guarded::{Guard, GuardedFunction};
pub use permit::Permit;
pub use retries::Retries;
pub use retrying::Retrying;
use values::{open_error, seconds, transitions_list};
pub use values::{Reconfigured, Rejection, Transition};

use std::sync::{Arc, OnceLock};

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::gc::PyVisit;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple, PyType};
use pyo3::PyTraverseError;

use tripgate::{Clock, Outcome};
use tripgate_core::exposition::{self, Value};

use crate::options;

/// The breaker. `tripgate.CircuitBreaker` is the class to use; see its docs.
#[pyclass(
    subclass,
    frozen,
    weakref,
    module = "tripgate._native",
    name = "Breaker"
)]
pub struct Breaker {
    /// Made by `__new__`; for a subclass with an `__init__` of its own, by
    /// `CircuitBreaker.__init__` (its options come from there).
    built: OnceLock<Built>,
    /// The class made, for the error when its `__init__` never made the breaker.
    class: Box<str>,
}

impl Breaker {
    /// The made breaker, or the error saying the subclass's `__init__` never made it.
    #[inline(always)]
    pub(crate) fn built(&self) -> PyResult<&Built> {
        match self.built.get() {
            Some(built) => Ok(built),
            None => Err(self.unmade()),
        }
    }

    #[cold]
    fn unmade(&self) -> PyErr {
        PyRuntimeError::new_err(format!(
            "{0}.__init__ did not call CircuitBreaker.__init__: call super().__init__(**options) \
             in it to make the breaker",
            self.class
        ))
    }
}

#[pymethods]
impl Breaker {
    #[new]
    #[classmethod]
    #[pyo3(signature = (*args, **options))]
    fn new(
        cls: &Bound<'_, PyType>,
        args: &Bound<'_, PyTuple>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let py = cls.py();
        let class = cls
            .qualname()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "CircuitBreaker".into())
            .into_boxed_str();
        let built = OnceLock::new();
        // A subclass's own `__init__` takes its own arguments, and gives the breaker's
        // options to `CircuitBreaker.__init__`, which makes it.
        let own_init = !cls
            .getattr(intern!(py, "__init__"))?
            .is(py.get_type::<Self>().getattr(intern!(py, "__init__"))?);
        if !own_init {
            if !args.is_empty() {
                return Err(options::positional(cls, args));
            }
            let _ = built.set(Built::make(py, options)?);
        }
        Ok(Self { built, class })
    }

    /// Makes the breaker, for a subclass with an `__init__` of its own (`super().__init__(
    /// **options)`); a breaker made by `__new__` has its options already.
    #[pyo3(signature = (*args, **options))]
    fn __init__(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let this = slf.get();
        if this.built.get().is_some() {
            return Ok(());
        }
        if !args.is_empty() {
            return Err(options::positional(&slf.get_type(), args));
        }
        let _ = this.built.set(Built::make(slf.py(), options)?);
        Ok(())
    }

    /// The name given as `name=` (the `breaker` label of its metrics), `"default"` else.
    #[getter]
    pub(crate) fn name(&self) -> PyResult<&str> {
        Ok(&self.built()?.shared.name)
    }

    /// The effective state: `closed`, `open`, `half-open`, `isolated` or `disabled` (an
    /// open breaker past its cooldown reads `half-open`).
    #[getter]
    fn state(&self, py: Python<'_>) -> PyResult<&'static str> {
        let this = self.built()?;
        this.shared.clock.refresh(py);
        Ok(this.inner.state().name())
    }

    /// The default budget of `call` and `call_async`, in seconds (`None`: no budget).
    #[getter]
    fn timeout(&self) -> PyResult<Option<f64>> {
        Ok(self.built()?.shared.timeout.map(seconds))
    }

    /// Whether a default fallback was given.
    #[getter]
    fn _has_fallback(&self) -> PyResult<bool> {
        Ok(self.built()?.shared.fallback.is_some())
    }

    #[getter]
    fn _fallback(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self
            .built()?
            .shared
            .fallback
            .as_ref()
            .map(|f| f.clone_ref(py))
            .unwrap_or_else(|| py.None()))
    }

    /// Admits a call (a `Permit`, truthy) or turns it away (a `Rejection`, falsy, with
    /// `reason` and `retry_after`). Never raises.
    fn acquire<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let this = slf.get().built()?;
        this.shared.clock.refresh(slf.py());
        match this.inner.acquire_owned() {
            Ok(permit) => Ok(Self::new_permit(slf, permit)?.into_any()),
            Err(rejection) => Ok(this.rejection(slf.py(), &rejection)?.into_any()),
        }
    }

    /// `breaker.call(fn, *args, **kwargs)`: runs `fn` if the breaker admits it, records
    /// its outcome (a returned response by its status, a raised exception by its kind)
    /// and returns its result, or raises `CircuitOpenError` (or returns the breaker's
    /// fallback).
    #[pyo3(signature = (f, /, *args, **kwargs))]
    fn call<'py>(
        slf: &Bound<'py, Self>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let this = slf.get().built()?;
        let py = slf.py();
        let fallback = this.shared.fallback.as_ref().map(|f| f.bind(py));
        this.guarded(py, f, args, kwargs, this.shared.timeout, fallback)
    }

    /// `call` with its own budget (seconds or None), fallback (`has_fallback`) and
    /// retries (this breaker's `Retries`, or None).
    #[pyo3(signature = (f, args, kwargs, timeout, has_fallback, fallback, retries = None))]
    #[allow(clippy::too_many_arguments)]
    fn _call_with<'py>(
        slf: &Bound<'py, Self>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        timeout: Option<f64>,
        has_fallback: bool,
        fallback: &Bound<'py, PyAny>,
        retries: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let this = slf.get().built()?;
        let timeout = timeout.map(call::budget_ns);
        let fallback = has_fallback.then_some(fallback);
        match retries::of_breaker(slf, retries)? {
            Some(retries) => this.retrying(
                slf.py(),
                f,
                args,
                kwargs,
                timeout,
                fallback,
                &retries.get().inner,
            ),
            None => this.guarded(slf.py(), f, args, kwargs, timeout, fallback),
        }
    }

    /// `await breaker.call_async(fn, *args, **kwargs)`: awaits `fn(*args, **kwargs)` if
    /// the breaker admits it, within the breaker's `timeout` (past it the call is
    /// cancelled, recorded as a `timeout` fault and `CallTimeoutError` raised), records
    /// the outcome and returns the result. A rejection raises `CircuitOpenError`; with a
    /// `fallback`, a rejection, a failure or a timeout gives the fallback instead (a
    /// cancelled task never does).
    #[pyo3(signature = (f, /, *args, **kwargs))]
    fn call_async<'py>(
        slf: &Bound<'py, Self>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let this = slf.get().built()?;
        let py = slf.py();
        let fallback = this.shared.fallback.as_ref().map(|f| f.clone_ref(py));
        Self::start_async(
            slf,
            f,
            args,
            kwargs,
            this.shared.timeout.map(seconds),
            fallback,
        )
    }

    /// `call_async` with its own budget (seconds or None), fallback (`has_fallback`) and
    /// retries (this breaker's `Retries`, or None).
    #[pyo3(signature = (f, args, kwargs, timeout, has_fallback, fallback, retries = None))]
    #[allow(clippy::too_many_arguments)]
    fn _call_async_with<'py>(
        slf: &Bound<'py, Self>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        timeout: Option<f64>,
        has_fallback: bool,
        fallback: &Bound<'py, PyAny>,
        retries: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let fallback = has_fallback.then(|| fallback.clone().unbind());
        match retries::of_breaker(slf, retries)? {
            Some(retries) => {
                Self::start_retrying(slf, f, args, kwargs, timeout, fallback, &retries)
            }
            None => Self::start_async(slf, f, args, kwargs, timeout, fallback),
        }
    }

    /// The breaker's retries (`SPEC.md` § Retries): the policy — `max_attempts` (1-10,
    /// the first included; 3), `base_delay` (0.05 s), `max_delay` (2 s),
    /// `budget_percent` (0-1000; 20), `min_retries_per_second` (10), `seed` (0) — and
    /// the budget every caller of this breaker shares, threads and tasks alike. The first
    /// call makes them (an option not given is its default; a bad one raises naming it,
    /// as the breaker's options do); later calls give the same retries, and refuse options
    /// that would make another policy. Use them with `breaker.guard(retries=...)`.
    #[pyo3(signature = (**policy))]
    fn retries<'py>(
        slf: &Bound<'py, Self>,
        policy: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, Retries>> {
        let py = slf.py();
        let this = slf.get().built()?;
        let given = policy.is_some_and(|p| !p.is_empty());
        let wanted = if given || this.retries.get().is_none() {
            Some(retries::policy(py, policy)?)
        } else {
            None
        };
        if this.retries.get().is_none() {
            if let Some(wanted) = wanted {
                this.refresh(py);
                let made = tripgate::Retries::new(wanted, this.inner.clock().now())
                    // Unreachable: `policy` validated it.
                    .map_err(|e| crate::errors::retry_policy(py, e))?;
                // Another thread may have made them first: theirs stand.
                let _ = this.retries.set(Arc::new(made));
            }
        }
        let Some(inner) = this.retries.get() else {
            return Err(PyRuntimeError::new_err(
                "the breaker's retries were not made",
            ));
        };
        if let (true, Some(wanted)) = (given, wanted) {
            retries::confirm(py, inner.policy(), &wanted)?;
        }
        Bound::new(
            py,
            Retries {
                breaker: slf.clone().unbind(),
                inner: Arc::clone(inner),
            },
        )
    }

    /// `with breaker as permit:` admits the block or raises `CircuitOpenError`; its
    /// exception is classified when it leaves, and a block that ends normally records
    /// success, unless it recorded its own outcome (`permit.record(response)`).
    fn __enter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Permit>> {
        let this = slf.get().built()?;
        let py = slf.py();
        this.shared.clock.refresh(py);
        let permit = match this.inner.acquire_owned() {
            Ok(permit) => Self::new_permit(slf, permit)?,
            Err(rejection) => {
                return Err(PyErr::from_value(open_error(
                    py,
                    &rejection,
                    &this.shared.name,
                )?))
            }
        };
        permit.borrow_mut().entered = true;
        // Under the new permit, the blocks of this context still open: the exited ones
        // are dropped from the top on the way (`__exit__` leaves them, saving a
        // `ContextVar.set`).
        let mut rest = this.shared.stack_get.bind(py).call0()?;
        while !rest.is_none() {
            let (top, next): (Bound<'py, Permit>, Bound<'py, PyAny>) = rest.extract()?;
            if top.borrow().entered {
                break;
            }
            rest = next;
        }
        this.shared
            .stack_set
            .bind(py)
            .call1(((permit.clone(), rest),))?;
        Ok(permit)
    }

    #[pyo3(signature = (_exc_type, exc, _traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: &Bound<'_, PyAny>,
        exc: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let this = self.built()?;
        // This context's innermost open block: the first entered permit from the top.
        let mut node = this.shared.stack_get.bind(py).call0()?;
        let permit = loop {
            if node.is_none() {
                return Err(PyRuntimeError::new_err(
                    "__exit__ without __enter__ in this context",
                ));
            }
            let (top, next): (Bound<'_, Permit>, Bound<'_, PyAny>) = node.extract()?;
            if top.borrow().entered {
                break top;
            }
            node = next;
        };
        permit.borrow_mut().entered = false;
        if permit.borrow().permit.is_none() {
            // The block recorded its own outcome.
            return Ok(false);
        }
        // Classified with no borrow held: `classify` may read the permit.
        let judged = if exc.is_none() {
            Ok(Outcome::Success.into())
        } else {
            this.judge_error(py, exc)
        };
        let mut permit = permit.borrow_mut();
        match judged {
            Ok(judged) => {
                permit.finish_judged(py, judged);
            }
            Err(interrupt) => {
                permit.finish(py, Outcome::Cancelled);
                return Err(interrupt);
            }
        }
        Ok(false)
    }

    /// Adds a transition listener, called with a `Transition` by whichever call caused
    /// it, after the breaker is released. Returns `listener` (usable as a decorator). A
    /// listener that raises is counted (`metrics()["listener_errors"]`) and logged on the
    /// `tripgate` logger (or handed to `on_listener_error`); the call goes on.
    fn on_transition<'py>(&self, listener: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let this = self.built()?;
        if !listener.is_callable() {
            return Err(PyTypeError::new_err("listener must be callable"));
        }
        this.shared
            .hooks
            .listeners
            .bind(listener.py())
            .append(&listener)?;
        Ok(listener)
    }

    /// Removes a listener added with `on_transition` (a no-op for one never added).
    fn remove_listener(&self, listener: &Bound<'_, PyAny>) -> PyResult<()> {
        let this = self.built()?;
        let list = this.shared.hooks.listeners.bind(listener.py());
        for (i, l) in list.iter().enumerate() {
            if l.eq(listener)? {
                list.del_item(i)?;
                break;
            }
        }
        Ok(())
    }

    /// Forces the breaker open until `release()`; returns the transitions caused.
    fn isolate(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        self.built()?.manual(py, tripgate::Breaker::isolate)
    }

    /// Closes an isolated or disabled breaker (no-op otherwise).
    fn release(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        self.built()?.manual(py, tripgate::Breaker::release)
    }

    /// Admits everything and never trips, still measuring, until `release()`.
    fn disable(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        self.built()?.manual(py, tripgate::Breaker::disable)
    }

    /// Back to closed with an empty window, from any state; permits out become stale.
    fn reset(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        self.built()?.manual(py, tripgate::Breaker::reset)
    }

    /// Puts a new configuration in force, keeping the state, the permits out, an opening
    /// in progress and, while its shape is the same, the window (`SPEC.md` §
    /// Reconfiguration). Takes the options `CircuitBreaker(...)` takes, the core's whole
    /// (an option not given is its default); `fleet_quorum`, `slow_call_duration` and the
    /// package's own options (`name`, `clock`, `timeout`, `fallback`, `classify`,
    /// `on_listener_error`) cannot change. A bad option raises as at creation, naming it,
    /// and changes nothing. Returns a `Reconfigured`; its transitions reach the listeners.
    #[pyo3(signature = (**options))]
    fn reconfigure(
        &self,
        py: Python<'_>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Reconfigured> {
        self.built()?
            .reconfigure(py, options)
            .map(Reconfigured::from)
    }

    /// The whole state as bytes (the core's versioned format, instants relative to now).
    fn export_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let this = self.built()?;
        this.shared.clock.refresh(py);
        Ok(PyBytes::new(py, &this.inner.export_state()))
    }

    /// Replaces the state with exported bytes; `elapsed` seconds passed since the export.
    /// Bad bytes raise `tripgate.StateError` (with `kind`) and change nothing.
    #[pyo3(signature = (state, elapsed = 0.0))]
    fn import_state(&self, py: Python<'_>, state: &[u8], elapsed: f64) -> PyResult<()> {
        let this = self.built()?;
        if !elapsed.is_finite() || elapsed < 0.0 {
            return Err(options::option_error(
                py,
                false,
                "elapsed",
                "elapsed must be a finite number of seconds >= 0".into(),
            ));
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let elapsed = (elapsed * 1e9).round().min(u64::MAX as f64) as u64;
        this.shared.clock.refresh(py);
        this.inner.import_state(state, elapsed).map_err(|e| {
            match crate::errors::state(py)
                .and_then(|cls| cls.call1((e.to_string(), e.kind().name())))
            {
                Ok(error) => PyErr::from_value(error),
                Err(other) => other,
            }
        })
    }

    /// The core's snapshot as a dict (durations in seconds), with the host's counts of
    /// listener, clock and classifier errors.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.built()?.metrics(py)
    }

    /// Fleet mode: the breaker's fleet state (`enabled`, `generation`, `degraded`,
    /// `lease_held`, `wants_lease`, `stale_events`). `tripgate.fleet` drives the rest.
    fn fleet_status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let this = self.built()?;
        this.shared.clock.refresh(py);
        fleet::status(py, &this.inner)
    }

    /// Fleet mode, the adapter's: applies a fleet event (`open` with `remaining_ns`, or
    /// `close`); `(what it did, [transitions])`.
    #[pyo3(signature = (generation, kind, remaining_ns = 0))]
    fn _fleet_apply<'py>(
        &self,
        py: Python<'py>,
        generation: u64,
        kind: String,
        remaining_ns: u64,
    ) -> PyResult<(&'static str, Bound<'py, PyList>)> {
        let this = self.built()?;
        this.shared.clock.refresh(py);
        let (applied, transitions) =
            fleet::apply(py, &this.inner, generation, &kind, remaining_ns)?;
        Ok((applied, transitions_list(py, transitions.as_slice())?))
    }

    /// Fleet mode, the adapter's: the store's votes, `[(member id, age_ns)]`; whether they
    /// reach the quorum.
    fn _fleet_votes(&self, py: Python<'_>, votes: &Bound<'_, PyAny>) -> PyResult<bool> {
        let this = self.built()?;
        this.shared.clock.refresh(py);
        fleet::votes(&this.inner, votes)
    }

    /// Fleet mode, the adapter's: whether the store answers, and the probe lease held for
    /// `lease_ns` from now (None: not held).
    #[pyo3(signature = (reachable, lease_ns = None))]
    fn _fleet_store(&self, py: Python<'_>, reachable: bool, lease_ns: Option<u64>) -> PyResult<()> {
        let this = self.built()?;
        this.shared.clock.refresh(py);
        this.inner.fleet_store(reachable, lease_ns);
        Ok(())
    }

    /// Fleet mode, the adapter's: the announcement the last transition left, taken once:
    /// `(kind, remaining_ns)` or None.
    fn _fleet_take_announcement(&self) -> PyResult<Option<(&'static str, u64)>> {
        Ok(fleet::take_announcement(&self.built()?.inner))
    }

    /// Every exposition series' value now, in the order of `exposition_families()`'s
    /// series (one hold of the breaker's lock): what the Prometheus collector reads.
    fn _samples<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let this = self.built()?;
        this.shared.clock.refresh(py);
        let reading = this.inner.reading();
        let list = PyList::empty(py);
        for (_, value) in exposition::samples(&reading) {
            match value {
                Value::Count(n) => list.append(n)?,
                Value::Seconds(_) => list.append(value.as_f64())?,
            }
        }
        Ok(list)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self.built.get() {
            Some(built) => built.traverse(&visit),
            None => Ok(()),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        match self.built.get() {
            Some(this) => {
                this.shared.clock.refresh(py);
                format!(
                    "<CircuitBreaker {:?} {}>",
                    this.shared.name,
                    this.inner.state().name()
                )
            }
            None => format!(
                "<{} not made: its __init__ did not call CircuitBreaker.__init__>",
                self.class
            ),
        }
    }
}
