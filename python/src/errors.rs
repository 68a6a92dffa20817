//! The exceptions the package raises, made here: the native module raises them with no
//! import back into the package's Python modules, which import them from here.
//!
//! Each keeps what it carries in `args` (so it pickles and compares as any exception
//! does) and reads it back through properties. They are made at import as Python makes a
//! class, with `type(name, bases, namespace)`: the abi3 build cannot subclass a built-in
//! exception with a `#[pyclass]` before Python 3.12.

use pyo3::exceptions::{PyException, PyTimeoutError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCFunction, PyDict, PyString, PyTuple, PyType};

use tripgate::{RetryError, RetryField};
use tripgate_core::Words;

static CIRCUIT_OPEN: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static STATE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `CircuitOpenError`, made on first use.
pub fn circuit_open(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    CIRCUIT_OPEN
        .get_or_try_init(py, || make_circuit_open(py).map(Bound::unbind))
        .map(|t| t.bind(py))
}

/// `StateError`, made on first use.
pub fn state(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    STATE
        .get_or_try_init(py, || make_state(py).map(Bound::unbind))
        .map(|t| t.bind(py))
}

/// A retry policy the core refused (`breaker.retries(...)`), as the breaker's options
/// are refused: a `ValueError` naming the Python option (`error.option`), in the core's
/// words with the Python names (`max_delay must be >= base_delay`).
pub fn retry_policy(py: Python<'_>, error: RetryError) -> PyErr {
    struct PythonWords(String);

    impl Words for PythonWords {
        fn word(&mut self, text: &str) -> std::fmt::Result {
            match RetryField::from_name(text) {
                Some(field) => self.0.push_str(crate::options::retry_option(field)),
                None => self.0.push_str(text),
            }
            Ok(())
        }
    }

    let mut message = PythonWords(String::new());
    let _ = error.describe(&mut message);
    crate::options::option_error(
        py,
        false,
        crate::options::retry_option(error.field),
        message.0,
    )
}

/// Adds the exception classes to the module.
pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CircuitOpenError", circuit_open(py)?)?;
    m.add("StateError", state(py)?)?;
    m.add("CallTimeoutError", make_call_timeout(py)?)?;
    Ok(())
}

const CIRCUIT_OPEN_DOC: &str = "The breaker turned the call away; the call did not run.

``reason`` is ``open``, ``probing``, ``isolated``, ``saturated`` or ``probing-elsewhere``;
``state`` the breaker's state; ``retry_after`` the seconds until a call could be admitted (0
when there is no estimate); ``breaker`` the breaker's name.";

fn make_circuit_open(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    let ns = namespace(py, CIRCUIT_OPEN_DOC)?;
    for (index, name) in ["reason", "state", "retry_after", "breaker"]
        .iter()
        .enumerate()
    {
        ns.set_item(*name, property(py, index)?)?;
    }
    ns.set_item("__str__", method(py, circuit_open_str)?)?;
    ns.set_item("__slots__", PyTuple::empty(py))?;
    class(py, "CircuitOpenError", (py.get_type::<PyException>(),), &ns)
}

/// `circuit breaker 'payments' rejected the call (open, open); retry after 15s`, or
/// the plain text of one made with other arguments.
fn circuit_open_str(error: &Bound<'_, PyAny>) -> PyResult<String> {
    if error.getattr("args")?.len()? != 4 {
        let base = error.py().get_type::<PyException>();
        return base.getattr("__str__")?.call1((error,))?.extract();
    }
    // args: (reason, state, retry_after, breaker)
    formatted(
        error,
        "circuit breaker {3!r} rejected the call ({1}, {0}); retry after {2:g}s",
    )
}

const STATE_DOC: &str = "``import_state`` refused the bytes and changed nothing. ``kind`` is the
core's reason: ``truncated``, ``trailing-bytes``, ``not-a-state``, ``unsupported-version``,
``checksum``, ``window-shape`` or ``corrupt``.";

fn make_state(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    let ns = namespace(py, STATE_DOC)?;
    ns.set_item("kind", property(py, 1)?)?;
    ns.set_item("__str__", method(py, |e| arg(e, 0)?.str()?.extract())?)?;
    class(py, "StateError", (py.get_type::<PyValueError>(),), &ns)
}

const CALL_TIMEOUT_DOC: &str = "A guarded async call did not finish within its timeout: it was
cancelled and recorded as a ``timeout`` fault. ``timeout`` is the budget in seconds.";

/// Before Python 3.11 `asyncio.TimeoutError` is a class of its own: `CallTimeoutError`
/// is then a subclass of it too, so `except asyncio.TimeoutError` catches it everywhere.
fn make_call_timeout(py: Python<'_>) -> PyResult<Bound<'_, PyType>> {
    let ns = namespace(py, CALL_TIMEOUT_DOC)?;
    ns.set_item("timeout", property(py, 0)?)?;
    ns.set_item(
        "__str__",
        method(py, |e| formatted(e, "the call timed out after {0:g}s"))?,
    )?;
    let timeout = py.get_type::<PyTimeoutError>();
    let asyncio_timeout = py.import("asyncio")?.getattr("TimeoutError")?;
    if asyncio_timeout.is(&timeout) {
        class(py, "CallTimeoutError", (timeout,), &ns)
    } else {
        class(
            py,
            "CallTimeoutError",
            (timeout.into_any(), asyncio_timeout),
            &ns,
        )
    }
}

fn namespace<'py>(py: Python<'py>, doc: &str) -> PyResult<Bound<'py, PyDict>> {
    let ns = PyDict::new(py);
    ns.set_item("__module__", "tripgate")?;
    ns.set_item("__doc__", doc)?;
    Ok(ns)
}

fn class<'py>(
    py: Python<'py>,
    name: &str,
    bases: impl IntoPyObject<'py, Target = PyTuple>,
    ns: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyType>> {
    let made = py.get_type::<PyType>().call1((name, bases, ns))?;
    Ok(made.cast_into::<PyType>()?)
}

/// A read-only property giving `args[index]`.
fn property(py: Python<'_>, index: usize) -> PyResult<Bound<'_, PyAny>> {
    let get = PyCFunction::new_closure(py, None, None, move |args, _| {
        arg(&args.get_item(0)?, index).map(Bound::unbind)
    })?;
    py.import("builtins")?.getattr("property")?.call1((get,))
}

/// A method of the class from `f(self)`: a built-in function is no descriptor, so it is
/// bound through `functools.partialmethod`.
fn method(
    py: Python<'_>,
    f: fn(&Bound<'_, PyAny>) -> PyResult<String>,
) -> PyResult<Bound<'_, PyAny>> {
    let call = PyCFunction::new_closure(py, None, None, move |args, _| f(&args.get_item(0)?))?;
    py.import("functools")?
        .getattr("partialmethod")?
        .call1((call,))
}

/// The argument at `index` of an exception's `args`.
fn arg<'py>(error: &Bound<'py, PyAny>, index: usize) -> PyResult<Bound<'py, PyAny>> {
    error.getattr("args")?.get_item(index)
}

/// `template.format(*args)`: the text made by Python's own formatting (`:g`, `!r`).
fn formatted(error: &Bound<'_, PyAny>, template: &str) -> PyResult<String> {
    let args = error.getattr("args")?.cast_into::<PyTuple>()?;
    PyString::new(error.py(), template)
        .call_method1("format", args)?
        .extract()
}
