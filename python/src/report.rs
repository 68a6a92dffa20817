//! Reporting what the breaker carries on past (a listener that raised, a classifier that
//! failed, a clock that gave no reading) through the `logging` module's `tripgate`
//! logger. Reporting never raises.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

static LOGGER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn logger(py: Python<'_>) -> Option<&Bound<'_, PyAny>> {
    LOGGER
        .get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py
                .import("logging")?
                .call_method1("getLogger", ("tripgate",))?
                .unbind())
        })
        .ok()
        .map(|l| l.bind(py))
}

/// The exception object of `error` with its traceback as `__traceback__`: what a
/// fallback, a classifier, `on_listener_error` and the log are handed (PyO3 keeps the
/// traceback beside the value, so the value alone would have none on CPython < 3.12).
pub fn exception<'py>(py: Python<'py>, error: &PyErr) -> Bound<'py, PyAny> {
    let value = error.value(py).clone().into_any();
    if let Some(traceback) = error.traceback(py) {
        let _ = value.setattr(intern!(py, "__traceback__"), traceback);
    }
    value
}

/// A warning on the `tripgate` logger.
pub fn warn(py: Python<'_>, message: &str) {
    if let Some(logger) = logger(py) {
        let _ = logger.call_method1("warning", (message,));
    }
}

/// An error with its exception and traceback (`exc_info`) on the `tripgate` logger.
pub fn error(py: Python<'_>, message: &str, error: &PyErr) {
    if let Some(logger) = logger(py) {
        let kwargs = pyo3::types::PyDict::new(py);
        let _ = kwargs.set_item("exc_info", exception(py, error));
        let _ = logger.call_method("error", (message,), Some(&kwargs));
    }
}
