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
use super::Breaker;

/// A breaker with its own `timeout` (seconds, or None) and `fallback` for the calls made
/// through it; `tripgate.Guard` is the class to use (`breaker.guard(...)`).
#[pyclass(subclass, frozen, module = "tripgate._native", name = "Guard")]
pub struct Guard {
    breaker: Py<Breaker>,
    timeout: Option<f64>,
    fallback: Option<Py<PyAny>>,
}

#[pymethods]
impl Guard {
    #[new]
    #[pyo3(signature = (breaker, timeout, has_fallback, fallback))]
    fn new(
        breaker: Py<Breaker>,
        timeout: Option<f64>,
        has_fallback: bool,
        fallback: Bound<'_, PyAny>,
    ) -> Self {
        Self {
            breaker,
            timeout,
            fallback: has_fallback.then(|| fallback.unbind()),
        }
    }

    /// `fn(*args, **kwargs)` guarded by the breaker with this guard's timeout and
    /// fallback (see `CircuitBreaker.call`).
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
        self.breaker
            .get()
            .built()?
            .guarded(py, f, args, kwargs, timeout, fallback)
    }

    /// An awaitable of `fn(*args, **kwargs)` guarded by the breaker with this guard's
    /// timeout and fallback (see `CircuitBreaker.call_async`).
    #[pyo3(signature = (f, /, *args, **kwargs))]
    fn call_async<'py>(
        &self,
        py: Python<'py>,
        f: &Bound<'py, PyAny>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let fallback = self.fallback.as_ref().map(|f| f.clone_ref(py));
        Breaker::start_async(
            self.breaker.bind(py),
            f,
            args,
            kwargs,
            self.timeout,
            fallback,
        )
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
        format!(
            "<Guard of {:?}: {timeout}, {fallback}>",
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
        Ok(Self {
            breaker,
            func: func.unbind(),
            timeout: timeout.map(budget_ns),
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
        self.breaker.get().built()?.guarded(
            py,
            self.func.bind(py),
            args,
            kwargs,
            self.timeout,
            fallback,
        )
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
