//! What a breaker is made of: the native breaker, its listeners and the rest of its
//! options, made from `CircuitBreaker(**options)`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use pyo3::exceptions::PyValueError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::PyTraverseError;

use tripgate::Transition as CoreTransition;
use tripgate_core::{MetricValue, RejectReason, ROUTES};

use super::values::{seconds, Transition};
use crate::clock::AnyClock;
use crate::options;
use crate::report;

/// The transition listeners, shared with the closure the native breaker calls.
pub(super) struct Hooks {
    pub(super) listeners: Py<PyList>,
    pub(super) errors: AtomicU64,
    pub(super) on_error: Option<Py<PyAny>>,
}

impl Hooks {
    pub(super) fn tell(&self, py: Python<'_>, transition: &CoreTransition) {
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
pub(super) struct Shared {
    pub(super) name: Arc<str>,
    pub(super) clock: AnyClock,
    pub(super) hooks: Arc<Hooks>,
    pub(super) timeout: Option<u64>,
    pub(super) fallback: Option<Py<PyAny>>,
    pub(super) classify: Option<Py<PyAny>>,
    /// Calls of `classify` that raised or returned what is not an outcome.
    pub(super) classify_errors: AtomicU64,
    /// `contextvars.ContextVar` holding this breaker's `with` permits as a linked stack of
    /// `(permit, rest)` tuples: each thread and each asyncio task sees its own.
    pub(super) stack: Py<PyAny>,
    /// Its bound `get` and `set`.
    pub(super) stack_get: Py<PyAny>,
    pub(super) stack_set: Py<PyAny>,
}

/// A made breaker: the native breaker and the rest.
pub(crate) struct Built {
    pub(super) inner: Arc<tripgate::Breaker<AnyClock>>,
    pub(super) shared: Shared,
    /// Its retries (`breaker.retries(...)`): one policy and one budget for all its
    /// callers, made on the first call.
    pub(super) retries: OnceLock<Arc<tripgate::Retries>>,
}

impl Built {
    /// A breaker with `options` (checked: an error names the option).
    pub(super) fn make(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
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
            retries: OnceLock::new(),
        })
    }

    /// `reconfigure(**options)`: the core's config, whole (an option not given is its
    /// default), read as `make` reads it and put in force by the core, which keeps the
    /// state. The package's own options may be given again as the breaker was made with
    /// them (a reload that passes every option), never changed: `call`, its guards and
    /// its decorated functions read them without a lock, and a guard or a decorated
    /// function keeps the breaker's timeout and fallback from when it was made.
    /// Transitions reach the listeners, as any call's.
    pub(super) fn reconfigure(
        &self,
        py: Python<'_>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<tripgate::Reconfigured> {
        let (o, given) = options::parse_given(py, options)?;
        for option in given {
            if !self.keeps(py, option, &o)? {
                return Err(options::option_error(
                    py,
                    false,
                    option,
                    format!("{option} cannot change on a live breaker"),
                ));
            }
        }
        self.shared.clock.refresh(py);
        self.inner
            .reconfigure(o.config)
            .map_err(|e| options::config_error(py, e))
    }

    /// Whether the package's own `option`, as read into `o`, is the breaker's: the same
    /// name, clock and budget; the same object (or an equal one) for the functions and
    /// the fallback.
    fn keeps(&self, py: Python<'_>, option: &str, o: &options::Options) -> PyResult<bool> {
        let same = |mine: Option<&Py<PyAny>>, theirs: Option<&Py<PyAny>>| match (mine, theirs) {
            (None, None) => Ok(true),
            (Some(a), Some(b)) => Ok(a.as_ptr() == b.as_ptr() || a.bind(py).eq(b.bind(py))?),
            _ => Ok(false),
        };
        let s = &self.shared;
        match option {
            "name" => Ok(*s.name == *o.name),
            "clock" => Ok(s.clock.same(&o.clock)),
            "timeout" => Ok(s.timeout == o.timeout),
            "fallback" => same(s.fallback.as_ref(), o.fallback.as_ref()),
            "classify" => same(s.classify.as_ref(), o.classify.as_ref()),
            "on_listener_error" => same(s.hooks.on_error.as_ref(), o.on_listener_error.as_ref()),
            _ => Ok(true),
        }
    }

    pub(super) fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.shared.clock.refresh(py);
        let m = self.inner.metrics();
        let d = PyDict::new(py);
        for (field, value) in m.fields() {
            // The core's names in Python's case; a duration in seconds, and in ns beside it.
            let key = field.name().replace('-', "_");
            match value {
                MetricValue::State(state) => d.set_item(key, state.name())?,
                MetricValue::Count(n) => d.set_item(key, n)?,
                MetricValue::Duration(ns) => {
                    d.set_item(&key, seconds(ns))?;
                    d.set_item(format!("{key}_ns"), ns)?;
                }
            }
        }
        // By reason: the rejections, and those shadow mode made and let through.
        let rejected = PyDict::new(py);
        let shadow_rejected = PyDict::new(py);
        for &reason in RejectReason::ALL {
            rejected.set_item(reason.name(), m.rejected(reason))?;
            shadow_rejected.set_item(reason.name(), m.shadow_rejected(reason))?;
        }
        d.set_item("rejected", rejected)?;
        d.set_item("shadow_rejected", shadow_rejected)?;
        let routes = PyDict::new(py);
        for (route, n) in ROUTES.iter().zip(m.transitions_by_route.iter()) {
            routes.set_item(
                (route.from.name(), route.to().name(), route.reason.name()),
                *n,
            )?;
        }
        d.set_item("transitions_by_route", routes)?;
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

    pub(super) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
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
}
