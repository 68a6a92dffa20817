//! The Python breaker: `tripgate._native.Breaker` (which `tripgate.CircuitBreaker`
//! subclasses), its `Permit`, `Rejection` and `Transition` values.
//!
//! Each method translates: Python values in, the native breaker's (`tripgate::Breaker`)
//! call, Python values out. Every decision is the core's. Nothing here holds the breaker's
//! lock while Python code runs: the native breaker tells listeners after releasing it,
//! and a callable clock is read before any call into the breaker.

mod call;
mod fleet;
mod guarded;
mod permit;
mod values;

use call::STATE_ERROR;
pub(crate) use fleet::kind_of;
pub use guarded::{Guard, GuardedFunction};
pub use permit::Permit;
use values::{open_error, seconds, transitions_list};
pub use values::{Rejection, Transition};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple, PyType};
use pyo3::PyTraverseError;

use tripgate::{Outcome, Transition as CoreTransition};
use tripgate_core::exposition::{self, Value};
use tripgate_core::{RejectReason, ROUTES};

use crate::clock::AnyClock;
use crate::options;
use crate::report;

/// The transition listeners, shared with the closure the native breaker calls.
struct Hooks {
    listeners: Py<PyList>,
    errors: AtomicU64,
    on_error: Option<Py<PyAny>>,
}

impl Hooks {
    fn tell(&self, py: Python<'_>, transition: &CoreTransition) {
        let list = self.listeners.bind(py);
        if list.is_empty() {
            return;
        }
        // A copy: a listener may add or remove listeners.
        let snapshot = list.to_tuple();
        let Ok(object) = Bound::new(py, Transition::from(*transition)) else {
            return;
        };
        for listener in snapshot.iter() {
            if let Err(error) = listener.call1((object.clone(),)) {
                self.failed(py, &error, &object);
            }
        }
    }

    /// A listener raised: counted, handed to `on_listener_error` or logged; never
    /// raised into the call that caused the transition.
    #[cold]
    fn failed(&self, py: Python<'_>, error: &PyErr, transition: &Bound<'_, Transition>) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        match &self.on_error {
            Some(hook) => {
                let exception = report::exception(py, error);
                if let Err(again) = hook.bind(py).call1((exception, transition)) {
                    self.errors.fetch_add(1, Ordering::Relaxed);
                    report::error(py, "tripgate: on_listener_error raised", &again);
                }
            }
            None => report::error(
                py,
                "tripgate: a transition listener raised; the breaker carries on",
                error,
            ),
        }
    }
}

/// A breaker's parts besides the native breaker.
struct Shared {
    name: Arc<str>,
    /// The last `Rejection` handed out, filled anew when nobody holds it any more: a
    /// rejection allocates no object in the common case of one that was dropped.
    spare: Mutex<Option<Py<Rejection>>>,
    clock: AnyClock,
    hooks: Arc<Hooks>,
    timeout: Option<u64>,
    fallback: Option<Py<PyAny>>,
    classify: Option<Py<PyAny>>,
    /// Calls of `classify` that raised or returned what is not an outcome.
    classify_errors: AtomicU64,
    /// `contextvars.ContextVar` holding this breaker's `with` permits as a linked stack of
    /// `(permit, rest)` tuples: each thread and each asyncio task sees its own.
    stack: Py<PyAny>,
    /// Its bound `get` and `set`.
    stack_get: Py<PyAny>,
    stack_set: Py<PyAny>,
}

/// The breaker. `tripgate.CircuitBreaker` is the class to use; see its docs.
#[pyclass(
    subclass,
    frozen,
    weakref,
    module = "tripgate._native",
    name = "Breaker"
)]
pub struct Breaker {
    inner: Arc<tripgate::Breaker<AnyClock>>,
    shared: Shared,
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
        if !args.is_empty() {
            return Err(options::positional(cls, args));
        }
        let o = options::parse(py, options)?;
        let inner = tripgate::Breaker::with_clock(o.config, o.clock.clone())
            // Unreachable: `parse` validated the config.
            .map_err(|e| PyValueError::new_err(options::python_message(&e.to_string())))?;
        let hooks = Arc::new(Hooks {
            listeners: PyList::empty(py).unbind(),
            errors: AtomicU64::new(0),
            on_error: o.on_listener_error,
        });
        let told = Arc::clone(&hooks);
        inner.on_transition(move |t| Python::attach(|py| told.tell(py, t)));
        let kwargs = PyDict::new(py);
        kwargs.set_item("default", py.None())?;
        let stack = py
            .import("contextvars")?
            .getattr("ContextVar")?
            .call((format!("tripgate.permits.{}", o.name),), Some(&kwargs))?;
        let stack_get = stack.getattr("get")?.unbind();
        let stack_set = stack.getattr("set")?.unbind();
        let stack = stack.unbind();
        Ok(Self {
            inner: Arc::new(inner),
            shared: Shared {
                name: Arc::from(o.name.as_str()),
                spare: Mutex::new(None),
                clock: o.clock,
                hooks,
                timeout: o.timeout,
                fallback: o.fallback,
                classify: o.classify,
                classify_errors: AtomicU64::new(0),
                stack,
                stack_get,
                stack_set,
            },
        })
    }

    /// The name given as `name=` (the `breaker` label of its metrics), `"default"` else.
    #[getter]
    fn name(&self) -> &str {
        &self.shared.name
    }

    /// The effective state: `closed`, `open`, `half-open`, `isolated` or `disabled` (an
    /// open breaker past its cooldown reads `half-open`).
    #[getter]
    fn state(&self, py: Python<'_>) -> &'static str {
        self.shared.clock.refresh(py);
        self.inner.state().name()
    }

    /// The default budget of `call` and `call_async`, in seconds (`None`: no budget).
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.shared.timeout.map(seconds)
    }

    /// Whether a default fallback was given.
    #[getter]
    fn _has_fallback(&self) -> bool {
        self.shared.fallback.is_some()
    }

    #[getter]
    fn _fallback(&self, py: Python<'_>) -> Py<PyAny> {
        self.shared
            .fallback
            .as_ref()
            .map(|f| f.clone_ref(py))
            .unwrap_or_else(|| py.None())
    }

    /// Admits a call (a `Permit`, truthy) or turns it away (a `Rejection`, falsy, with
    /// `reason` and `retry_after`). Never raises.
    fn acquire<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let this = slf.get();
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
        let this = slf.get();
        let py = slf.py();
        let fallback = this.shared.fallback.as_ref().map(|f| f.bind(py));
        this.guarded(py, f, args, kwargs, this.shared.timeout, fallback)
    }

    /// `call` with its own budget (seconds or None) and fallback (`has_fallback`).
    #[pyo3(signature = (f, args, kwargs, timeout, has_fallback, fallback))]
    fn _call_with<'py>(
        slf: &Bound<'py, Self>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        timeout: Option<f64>,
        has_fallback: bool,
        fallback: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let this = slf.get();
        let timeout = timeout.map(call::budget_ns);
        let fallback = has_fallback.then_some(fallback);
        this.guarded(slf.py(), f, args, kwargs, timeout, fallback)
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
        let this = slf.get();
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

    /// `call_async` with its own budget (seconds or None) and fallback (`has_fallback`).
    #[pyo3(signature = (f, args, kwargs, timeout, has_fallback, fallback))]
    fn _call_async_with<'py>(
        slf: &Bound<'py, Self>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
        timeout: Option<f64>,
        has_fallback: bool,
        fallback: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let fallback = has_fallback.then(|| fallback.clone().unbind());
        Self::start_async(slf, f, args, kwargs, timeout, fallback)
    }

    /// `with breaker as permit:` admits the block or raises `CircuitOpenError`; its
    /// exception is classified when it leaves, and a block that ends normally records
    /// success, unless it recorded its own outcome (`permit.record(response)`).
    fn __enter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, Permit>> {
        let this = slf.get();
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
        // This context's innermost open block: the first entered permit from the top.
        let mut node = self.shared.stack_get.bind(py).call0()?;
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
        let outcome = if exc.is_none() {
            Ok(Outcome::Success)
        } else {
            self.outcome_of_error(py, exc)
        };
        let mut permit = permit.borrow_mut();
        match outcome {
            Ok(outcome) => {
                permit.finish(py, outcome);
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
        if !listener.is_callable() {
            return Err(PyTypeError::new_err("listener must be callable"));
        }
        self.shared
            .hooks
            .listeners
            .bind(listener.py())
            .append(&listener)?;
        Ok(listener)
    }

    /// Removes a listener added with `on_transition` (a no-op for one never added).
    fn remove_listener(&self, listener: &Bound<'_, PyAny>) -> PyResult<()> {
        let list = self.shared.hooks.listeners.bind(listener.py());
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
        self.manual(py, tripgate::Breaker::isolate)
    }

    /// Closes an isolated or disabled breaker (no-op otherwise).
    fn release(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        self.manual(py, tripgate::Breaker::release)
    }

    /// Admits everything and never trips, still measuring, until `release()`.
    fn disable(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        self.manual(py, tripgate::Breaker::disable)
    }

    /// Back to closed with an empty window, from any state; permits out become stale.
    fn reset(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        self.manual(py, tripgate::Breaker::reset)
    }

    /// The whole state as bytes (the core's versioned format, instants relative to now).
    fn export_state<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        self.shared.clock.refresh(py);
        PyBytes::new(py, &self.inner.export_state())
    }

    /// Replaces the state with exported bytes; `elapsed` seconds passed since the export.
    /// Bad bytes raise `tripgate.StateError` (with `kind`) and change nothing.
    #[pyo3(signature = (state, elapsed = 0.0))]
    fn import_state(&self, py: Python<'_>, state: &[u8], elapsed: f64) -> PyResult<()> {
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
        self.shared.clock.refresh(py);
        self.inner.import_state(state, elapsed).map_err(|e| {
            match STATE_ERROR
                .import(py, "tripgate._errors", "StateError")
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
        self.shared.clock.refresh(py);
        let m = self.inner.metrics();
        let d = PyDict::new(py);
        d.set_item("state", m.state.name())?;
        d.set_item("epoch", m.epoch)?;
        d.set_item("calls", m.window.calls)?;
        d.set_item("faults", m.window.faults)?;
        d.set_item("slow", m.window.slow)?;
        d.set_item("in_flight", m.in_flight)?;
        d.set_item("hung", m.hung)?;
        d.set_item("probes_out", m.probes_out)?;
        d.set_item("admitted_total", m.admitted_total)?;
        let rejected = PyDict::new(py);
        for reason in RejectReason::ALL {
            let n = m
                .rejected_total
                .get(usize::from(reason.code()))
                .copied()
                .unwrap_or(0);
            rejected.set_item(reason.name(), n)?;
        }
        d.set_item("rejected", rejected)?;
        d.set_item("successes_total", m.successes_total)?;
        d.set_item("faults_total", m.faults_total)?;
        d.set_item("stale_total", m.stale_total)?;
        d.set_item("transitions_total", m.transitions_total)?;
        let routes = PyDict::new(py);
        for (route, n) in ROUTES.iter().zip(m.transitions_by_route.iter()) {
            routes.set_item(
                (route.from.name(), route.to().name(), route.reason.name()),
                *n,
            )?;
        }
        d.set_item("transitions_by_route", routes)?;
        d.set_item("time_in_state", seconds(m.time_in_state))?;
        d.set_item("time_in_state_ns", m.time_in_state)?;
        d.set_item("cooldown_remaining", seconds(m.cooldown_remaining))?;
        d.set_item("cooldown_remaining_ns", m.cooldown_remaining)?;
        d.set_item(
            "last_transition",
            match m.last_transition {
                Some(t) => Bound::new(py, Transition::from(t))?.into_any(),
                None => py.None().into_bound(py),
            },
        )?;
        d.set_item(
            "listener_errors",
            self.shared.hooks.errors.load(Ordering::Relaxed),
        )?;
        d.set_item("clock_errors", self.shared.clock.errors())?;
        d.set_item(
            "classify_errors",
            self.shared.classify_errors.load(Ordering::Relaxed),
        )?;
        Ok(d)
    }

    /// Fleet mode: the breaker's fleet state (`enabled`, `generation`, `degraded`,
    /// `lease_held`, `wants_lease`, `stale_events`). `tripgate.fleet` drives the rest.
    fn fleet_status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.shared.clock.refresh(py);
        fleet::status(py, &self.inner)
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
        self.shared.clock.refresh(py);
        let (applied, transitions) =
            fleet::apply(py, &self.inner, generation, &kind, remaining_ns)?;
        Ok((applied, transitions_list(py, transitions.as_slice())?))
    }

    /// Fleet mode, the adapter's: the store's votes, `[(member id, age_ns)]`; whether they
    /// reach the quorum.
    fn _fleet_votes(&self, py: Python<'_>, votes: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.shared.clock.refresh(py);
        fleet::votes(&self.inner, votes)
    }

    /// Fleet mode, the adapter's: whether the store answers, and the probe lease held for
    /// `lease_ns` from now (None: not held).
    #[pyo3(signature = (reachable, lease_ns = None))]
    fn _fleet_store(&self, py: Python<'_>, reachable: bool, lease_ns: Option<u64>) {
        self.shared.clock.refresh(py);
        self.inner.fleet_store(reachable, lease_ns);
    }

    /// Fleet mode, the adapter's: the announcement the last transition left, taken once:
    /// `(kind, remaining_ns)` or None.
    fn _fleet_take_announcement(&self) -> Option<(&'static str, u64)> {
        fleet::take_announcement(&self.inner)
    }

    /// Every exposition series' value now, in the order of `exposition_families()`'s
    /// series (one hold of the breaker's lock): what the Prometheus collector reads.
    fn _samples<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.shared.clock.refresh(py);
        let reading = self.inner.reading();
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
        visit.call(&self.shared.hooks.listeners)?;
        visit.call(&self.shared.stack)?;
        visit.call(&self.shared.stack_get)?;
        visit.call(&self.shared.stack_set)?;
        if let Some(f) = &self.shared.fallback {
            visit.call(f)?;
        }
        if let Some(f) = &self.shared.classify {
            visit.call(f)?;
        }
        if let Some(f) = &self.shared.hooks.on_error {
            visit.call(f)?;
        }
        if let Some(f) = self.shared.clock.python_object() {
            visit.call(f)?;
        }
        Ok(())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("<CircuitBreaker {:?} {}>", self.shared.name, self.state(py))
    }
}
