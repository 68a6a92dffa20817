//! The Python breaker: `tripgate._native.Breaker` (which `tripgate.CircuitBreaker`
//! subclasses), its `Permit`, `Rejection` and `Transition` values.
//!
//! Each method translates: Python values in, the native breaker's (`tripgate::Breaker`)
//! call, Python values out. Every decision is the core's. Nothing here holds the breaker's
//! lock while Python code runs: the native breaker tells listeners after releasing it,
//! and a callable clock is read before any call into the breaker.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple, PyType};
use pyo3::PyTraverseError;

use tripgate::{
    Clock, Outcome, OwnedPermit, Rejection as CoreRejection, Transition as CoreTransition,
};
use tripgate_core::exposition::{self, Value};
use tripgate_core::{Class, RejectReason, State, Verdict, ROUTES};

use crate::clock::AnyClock;
use crate::options;
use crate::outcome;
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
                if let Err(again) = hook.bind(py).call1((error.value(py), transition)) {
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

static OPEN_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static STATE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn seconds(ns: u64) -> f64 {
    AnyClock::seconds(ns)
}

/// The `CircuitOpenError` for a rejection.
fn open_error<'py>(
    py: Python<'py>,
    rejection: &CoreRejection,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    OPEN_ERROR
        .import(py, "tripgate._errors", "CircuitOpenError")?
        .call1((
            rejection.reason.name(),
            rejection.state.name(),
            seconds(rejection.retry_after),
            name,
        ))
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

fn transitions_list<'py>(py: Python<'py>, ts: &[CoreTransition]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for t in ts {
        list.append(Bound::new(py, Transition::from(*t))?)?;
    }
    Ok(list)
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
    fn rejection<'py>(
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
    fn start_async<'py>(
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
    fn guarded<'py>(
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

    fn new_permit<'py>(
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

    fn manual(
        &self,
        py: Python<'_>,
        op: fn(&tripgate::Breaker<AnyClock>) -> tripgate::Transitions,
    ) -> PyResult<Py<PyList>> {
        self.shared.clock.refresh(py);
        let transitions = op(&self.inner);
        Ok(transitions_list(py, transitions.as_slice())?.unbind())
    }
}

#[pymethods]
impl Breaker {
    #[new]
    #[pyo3(signature = (**options))]
    fn new(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
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
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let timeout = timeout.map(|s| (s * 1e9).round().max(1.0) as u64);
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
        let outcome = if exc.is_none() {
            Outcome::Success
        } else {
            self.outcome_of_error(py, exc)
        };
        let mut permit = permit.borrow_mut();
        permit.entered = false;
        if permit.permit.is_some() {
            permit.finish(py, outcome);
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
    /// listener and clock errors.
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
        Ok(d)
    }

    /// Fleet mode: the breaker's fleet state (`enabled`, `generation`, `degraded`,
    /// `lease_held`, `wants_lease`, `stale_events`). `tripgate.fleet` drives the rest.
    fn fleet_status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.shared.clock.refresh(py);
        crate::fleet::ops::status(py, &self.inner)
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
            crate::fleet::ops::apply(py, &self.inner, generation, &kind, remaining_ns)?;
        Ok((applied, transitions_list(py, transitions.as_slice())?))
    }

    /// Fleet mode, the adapter's: the store's votes, `[(member id, age_ns)]`; whether they
    /// reach the quorum.
    fn _fleet_votes(&self, py: Python<'_>, votes: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.shared.clock.refresh(py);
        crate::fleet::ops::votes(&self.inner, votes)
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
        crate::fleet::ops::take_announcement(&self.inner)
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

/// An admitted call. Record it once with `record(outcome)`; a permit dropped unrecorded
/// (garbage-collected, or `cancel()`) records `cancelled`, which counts as nothing.
#[pyclass(module = "tripgate._native", name = "Permit")]
pub struct Permit {
    breaker: Py<Breaker>,
    permit: Option<OwnedPermit<AnyClock>>,
    verdict: Option<Verdict>,
    probe: bool,
    /// Admitted by `with breaker:` whose block has not exited.
    entered: bool,
}

impl Permit {
    pub(crate) fn finish(&mut self, py: Python<'_>, outcome: Outcome) -> Option<&'static str> {
        let permit = self.permit.take()?;
        self.breaker.get().shared.clock.refresh(py);
        let verdict = permit.record(outcome);
        self.verdict = Some(verdict);
        Some(verdict.class.name())
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
            Some(value) => outcome::of_any(py, value)?,
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
        let outcome = self.breaker.get().outcome_of_value(py, value);
        self.finish(py, outcome).ok_or_else(Self::spent)
    }

    /// Records a raised exception by the breaker's rules.
    fn record_error(&mut self, py: Python<'_>, error: &Bound<'_, PyAny>) -> PyResult<&'static str> {
        if self.permit.is_none() {
            return Err(Self::spent());
        }
        let outcome = self.breaker.get().outcome_of_error(py, error);
        self.finish(py, outcome).ok_or_else(Self::spent)
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

/// A call the breaker turned away (falsy). `reason`: `open`, `probing`, `isolated`,
/// `saturated` or `probing-elsewhere`; `retry_after` in seconds (0: no estimate).
#[pyclass(frozen, module = "tripgate._native", name = "Rejection")]
pub struct Rejection {
    /// The core's rejection as codes, so that a spare object can be filled anew (see
    /// `Breaker::rejection`).
    state: AtomicU8,
    reason: AtomicU8,
    retry_after: AtomicU64,
    breaker: Arc<str>,
}

impl Rejection {
    fn new(rejection: &CoreRejection, breaker: Arc<str>) -> Self {
        Self {
            state: AtomicU8::new(rejection.state.code()),
            reason: AtomicU8::new(rejection.reason.code()),
            retry_after: AtomicU64::new(rejection.retry_after),
            breaker,
        }
    }

    fn fill(&self, rejection: &CoreRejection) {
        self.state.store(rejection.state.code(), Ordering::Relaxed);
        self.reason
            .store(rejection.reason.code(), Ordering::Relaxed);
        self.retry_after
            .store(rejection.retry_after, Ordering::Relaxed);
    }

    fn inner(&self) -> CoreRejection {
        CoreRejection {
            state: State::ALL
                .get(usize::from(self.state.load(Ordering::Relaxed)))
                .copied()
                .unwrap_or(State::Open),
            reason: RejectReason::ALL
                .get(usize::from(self.reason.load(Ordering::Relaxed)))
                .copied()
                .unwrap_or(RejectReason::Open),
            retry_after: self.retry_after.load(Ordering::Relaxed),
        }
    }
}

#[pymethods]
impl Rejection {
    #[getter]
    fn admitted(&self) -> bool {
        false
    }

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
        seconds(self.retry_after.load(Ordering::Relaxed))
    }

    #[getter]
    fn retry_after_ns(&self) -> u64 {
        self.retry_after.load(Ordering::Relaxed)
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
    #[getter(from_state)]
    fn state_left(&self) -> &'static str {
        self.inner.from.name()
    }
    #[getter(to_state)]
    fn state_entered(&self) -> &'static str {
        self.inner.to.name()
    }
    #[getter]
    fn reason(&self) -> &'static str {
        self.inner.reason.name()
    }
    #[getter]
    fn at(&self) -> f64 {
        seconds(self.inner.at)
    }
    #[getter]
    fn at_ns(&self) -> u64 {
        self.inner.at
    }
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

/// A function whose calls go through a breaker (`@breaker`, `@breaker.guard(...)` on a
/// plain function): `breaker.call` with the guard's timeout and fallback, without a Python
/// frame of its own. `functools.update_wrapper` gives it the function's name and docs; as
/// a class attribute it binds like a function (a method).
#[pyclass(frozen, dict, module = "tripgate._native", name = "GuardedFunction")]
pub struct GuardedFunction {
    breaker: Py<Breaker>,
    func: Py<PyAny>,
    timeout: Option<u64>,
    fallback: Option<Py<PyAny>>,
}

static METHOD_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

#[pymethods]
impl GuardedFunction {
    #[new]
    #[pyo3(signature = (breaker, func, timeout, has_fallback, fallback))]
    fn new(
        breaker: Py<Breaker>,
        func: Bound<'_, PyAny>,
        timeout: Option<f64>,
        has_fallback: bool,
        fallback: Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        if !func.is_callable() {
            return Err(PyTypeError::new_err("a breaker guards a callable"));
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let timeout = timeout.map(|s| (s * 1e9).round().max(1.0) as u64);
        Ok(Self {
            breaker,
            func: func.unbind(),
            timeout,
            fallback: has_fallback.then(|| fallback.unbind()),
        })
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let fallback = self.fallback.as_ref().map(|f| f.bind(py));
        self.breaker
            .get()
            .guarded(py, self.func.bind(py), args, kwargs, self.timeout, fallback)
    }

    fn __get__<'py>(
        slf: &Bound<'py, Self>,
        instance: Option<&Bound<'py, PyAny>>,
        _owner: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match instance {
            Some(instance) if !instance.is_none() => METHOD_TYPE
                .import(slf.py(), "types", "MethodType")?
                .call1((slf, instance)),
            _ => Ok(slf.clone().into_any()),
        }
    }

    /// The breaker the calls go through.
    #[getter]
    fn breaker(&self, py: Python<'_>) -> Py<Breaker> {
        self.breaker.clone_ref(py)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.breaker)?;
        visit.call(&self.func)?;
        if let Some(f) = &self.fallback {
            visit.call(f)?;
        }
        Ok(())
    }
}
