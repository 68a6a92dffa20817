//! `GuardedFunction`: what `@breaker` and `@breaker.guard(...)` return, a function whose
//! every call goes through the breaker.

use pyo3::exceptions::PyTypeError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::PyTraverseError;

use super::Breaker;

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
