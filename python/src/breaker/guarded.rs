//! `Guard`: a breaker with its own timeout and fallback (`breaker.guard(...)`, which
//! `tripgate.Guard` subclasses), and `GuardedFunction`: what `@breaker` and
//! `@breaker.guard(...)` return for a plain function, a function whose every call goes
//! through the breaker.

use pyo3::exceptions::PyTypeError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::PyTraverseError;

use super::call::budget_ns;
use super::retries::{self, Retries};
use super::Breaker;

/// A breaker with its own `timeout` (seconds, or None), `fallback` and `retries` for the
/// calls made through it; `tripgate.Guard` is the class to use (`breaker.guard(...)`).
#[pyclass(subclass, frozen, module = "tripgate._native", name = "Guard")]
pub struct Guard {
    breaker: Py<Breaker>,
    timeout: Option<f64>,
    fallback: Option<Py<PyAny>>,
    retries: Option<Py<Retries>>,
}

#[pymethods]
impl Guard {
    #[new]
    #[pyo3(signature = (breaker, timeout, has_fallback, fallback, retries = None))]
    fn new(
        breaker: Bound<'_, Breaker>,
        timeout: Option<f64>,
        has_fallback: bool,
        fallback: Bound<'_, PyAny>,
        retries: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let retries = retries::of_breaker(&breaker, retries)?;
        Ok(Self {
            breaker: breaker.unbind(),
            timeout,
            fallback: has_fallback.then(|| fallback.unbind()),
            retries: retries.map(Bound::unbind),
        })
    }

    /// `fn(*args, **kwargs)` guarded by the breaker with this guard's timeout, fallback
    /// and retries (see `CircuitBreaker.call`).
    #[pyo3(signature = (f, /, *args, **kwargs))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let fallback = self.fallback.as_ref().map(|f| f.bind(py));
        let timeout = self.timeout.map(budget_ns);
        let built = self.breaker.get().built()?;
        match &self.retries {
            Some(retries) => {
                built.retrying(py, f, args, kwargs, timeout, fallback, &retries.get().inner)
            }
            None => built.guarded(py, f, args, kwargs, timeout, fallback),
        }
    }

    /// An awaitable of `fn(*args, **kwargs)` guarded by the breaker with this guard's
    /// timeout, fallback and retries (see `CircuitBreaker.call_async`).
    #[pyo3(signature = (f, /, *args, **kwargs))]
    fn call_async<'py>(
        &self,
        py: Python<'py>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let fallback = self.fallback.as_ref().map(|f| f.clone_ref(py));
        let breaker = self.breaker.bind(py);
        match &self.retries {
            Some(retries) => Breaker::start_retrying(
                breaker,
                f,
                args,
                kwargs,
                self.timeout,
                fallback,
                retries.bind(py),
            ),
            None => Breaker::start_async(breaker, f, args, kwargs, self.timeout, fallback),
        }
    }

    /// The breaker's retries the calls are retried by (`breaker.retries(...)`), or None:
    /// one attempt each.
    #[getter]
    fn retries(&self, py: Python<'_>) -> Option<Py<Retries>> {
        self.retries.as_ref().map(|r| r.clone_ref(py))
    }

    /// The breaker the calls go through.
    #[getter]
    fn breaker(&self, py: Python<'_>) -> Py<Breaker> {
        self.breaker.clone_ref(py)
    }

    /// The budget of each call in seconds (None: no budget).
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.timeout
    }

    /// Whether a fallback was given.
    #[getter]
    fn _has_fallback(&self) -> bool {
        self.fallback.is_some()
    }

    #[getter]
    fn _fallback(&self, py: Python<'_>) -> Py<PyAny> {
        self.fallback
            .as_ref()
            .map(|f| f.clone_ref(py))
            .unwrap_or_else(|| py.None())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.breaker)?;
        if let Some(f) = &self.fallback {
            visit.call(f)?;
        }
        if let Some(r) = &self.retries {
            visit.call(r)?;
        }
        Ok(())
    }

    fn __repr__(&self) -> String {
        let timeout = match self.timeout {
            Some(s) => format!("timeout {s}s"),
            None => "no timeout".into(),
        };
        let fallback = if self.fallback.is_some() {
            "a fallback"
        } else {
            "no fallback"
        };
        let retries = match &self.retries {
            Some(r) => format!(", up to {} attempts", r.get().inner.policy().max_attempts),
            None => String::new(),
        };
        format!(
            "<Guard of {:?}: {timeout}, {fallback}{retries}>",
            self.breaker.get().name().unwrap_or("?")
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
    retries: Option<Py<Retries>>,
}

static METHOD_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

#[pymethods]
impl GuardedFunction {
    #[new]
    #[pyo3(signature = (breaker, func, timeout, has_fallback, fallback, retries = None))]
    fn new(
        breaker: Bound<'_, Breaker>,
        func: Bound<'_, PyAny>,
        timeout: Option<f64>,
        has_fallback: bool,
        fallback: Bound<'_, PyAny>,
        retries: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        if !func.is_callable() {
            return Err(PyTypeError::new_err("a breaker guards a callable"));
        }
        let retries = retries::of_breaker(&breaker, retries)?;
        Ok(Self {
            breaker: breaker.unbind(),
            func: func.unbind(),
            timeout: timeout.map(budget_ns),
            fallback: has_fallback.then(|| fallback.unbind()),
            retries: retries.map(Bound::unbind),
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
        let built = self.breaker.get().built()?;
        match &self.retries {
            Some(retries) => built.retrying(
                py,
                self.func.bind(py),
                args,
                kwargs,
                self.timeout,
                fallback,
                &retries.get().inner,
            ),
            None => built.guarded(py, self.func.bind(py), args, kwargs, self.timeout, fallback),
        }
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
        if let Some(r) = &self.retries {
            visit.call(r)?;
        }
        Ok(())
    }
}
