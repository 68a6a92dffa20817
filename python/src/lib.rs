//! # tripgate-python: the native breaker as a CPython extension module
//!
//! `tripgate._native`, which the `tripgate` package (`python/tripgate/`) wraps: the
//! thread-safe `tripgate::Breaker` behind Python types. The module only translates —
//! options to the core's `Config`, Python values to outcomes, the core's values to
//! Python ones — and supplies the clock; every decision is `tripgate-core`'s. Fleet mode
//! (`fleet.rs`) is the core's member protocol, which the redis-py adapter only feeds.
//!
//! Built by maturin as one abi3 wheel for CPython >= 3.9 (`python/README.md`).

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::unreachable,
    clippy::todo
)]

mod breaker;
mod classify;
mod clock;
mod deadline;
mod errors;
mod fleet;
mod options;
mod outcome;
mod report;
mod stay_away;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use tripgate_core::exposition::{Family, MetricType};
use tripgate_core::{Field, OutcomeKind, Reason, RejectReason, State, MAX_CAUSES, MAX_EXPORT_LEN};

fn names<T: Copy>(all: &[T], name: impl Fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|&x| name(x)).collect()
}

/// The core's exposition table: per family its name, stem, type, help, unit, label
/// names and the label values of each of its series, in exposition order.
#[pyfunction]
fn exposition_families(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let out = PyList::empty(py);
    for &family in Family::ALL {
        let d = PyDict::new(py);
        d.set_item("name", family.name())?;
        d.set_item("stem", family.stem())?;
        d.set_item(
            "type",
            match family.kind() {
                MetricType::Counter => "counter",
                MetricType::Gauge => "gauge",
            },
        )?;
        d.set_item("help", family.help())?;
        d.set_item("unit", family.unit())?;
        d.set_item("labels", PyTuple::new(py, family.labels())?)?;
        let series = PyList::empty(py);
        for s in family.series() {
            let values: Vec<&str> = s.labels().map(|(_, v)| v).collect();
            series.append(PyTuple::new(py, values)?)?;
        }
        d.set_item("series", series)?;
        out.append(d)?;
    }
    Ok(out)
}

/// How `call` reads a returned value, as an outcome name: a response by its status
/// (`status_code`, else `status`), anything else `success`.
#[pyfunction]
fn classify_result(value: &Bound<'_, PyAny>) -> PyResult<String> {
    outcome::of_value(value).map(outcome::name_of)
}

/// How `call` reads a raised exception, as an outcome name (`crate::classify`): what its
/// status, gRPC code or names say by the core's error table, through its chain of causes.
#[pyfunction]
fn classify_error(error: &Bound<'_, pyo3::exceptions::PyBaseException>) -> PyResult<String> {
    outcome::of_error(error.as_any()).map(outcome::name_of)
}

/// How long an answer asks its callers to stay away, in seconds, as `call` reads it
/// (`crate::stay_away`): a response's `Retry-After` (on a 429 or a 503; an HTTP date
/// against `time.time()`) or `grpc-retry-pushback-ms` header, the response a raised
/// exception carries, a gRPC error's trailing `grpc-retry-pushback-ms`. `None` when it
/// asks nothing.
#[pyfunction]
fn retry_after_of(value: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    let judged = if value.is_instance_of::<pyo3::exceptions::PyBaseException>() {
        outcome::judge_error(value)?
    } else {
        outcome::judge_value(value)?
    };
    Ok(judged.retry_after.map(clock::AnyClock::seconds))
}

// Nothing here relies on the GIL for its safety: shared state sits behind the native
// breaker's lock, atomics or mutexes, and values handed to Python are immutable.
#[pymodule(gil_used = false)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    errors::add(m)?;
    m.add_class::<breaker::Breaker>()?;
    m.add_class::<breaker::Permit>()?;
    m.add_class::<breaker::Rejection>()?;
    m.add_class::<breaker::Transition>()?;
    m.add_class::<breaker::Reconfigured>()?;
    m.add_class::<breaker::GuardedFunction>()?;
    m.add_class::<breaker::Guard>()?;
    m.add_class::<breaker::Retries>()?;
    m.add_class::<breaker::Retrying>()?;
    m.add_class::<clock::FakeClock>()?;
    m.add_class::<deadline::Deadline>()?;
    m.add_class::<deadline::DeadlineQueue>()?;
    m.add_function(wrap_pyfunction!(deadline::start_deadline, m)?)?;
    m.add_function(wrap_pyfunction!(exposition_families, m)?)?;
    m.add_function(wrap_pyfunction!(classify_result, m)?)?;
    m.add_function(wrap_pyfunction!(classify_error, m)?)?;
    m.add_function(wrap_pyfunction!(retry_after_of, m)?)?;
    m.add_function(wrap_pyfunction!(breaker::_install_coroutines, m)?)?;
    m.add_class::<fleet::FleetMember>()?;
    m.add_class::<fleet::FleetWaker>()?;
    m.add_class::<fleet::FleetBackoff>()?;
    m.add_function(wrap_pyfunction!(fleet::fleet_options, m)?)?;
    m.add_function(wrap_pyfunction!(fleet::fleet_scripts, m)?)?;
    m.add_function(wrap_pyfunction!(fleet::fleet_eviction, m)?)?;
    m.add_function(wrap_pyfunction!(fleet::fleet_member_id, m)?)?;
    m.add_function(wrap_pyfunction!(fleet::fleet_valid_name, m)?)?;
    m.add_function(wrap_pyfunction!(fleet::fleet_encode, m)?)?;
    m.add_function(wrap_pyfunction!(fleet::fleet_decode, m)?)?;
    m.add_function(wrap_pyfunction!(fleet::fleet_vote_entry, m)?)?;
    fleet::add_tables(m)?;
    m.add("MAX_CAUSES", MAX_CAUSES)?;
    m.add("MAX_EXPORT_LEN", MAX_EXPORT_LEN)?;
    m.add("STATES", PyTuple::new(py, names(State::ALL, State::name))?)?;
    m.add(
        "TRANSITION_REASONS",
        PyTuple::new(py, names(Reason::ALL, Reason::name))?,
    )?;
    m.add(
        "REJECT_REASONS",
        PyTuple::new(py, names(RejectReason::ALL, RejectReason::name))?,
    )?;
    m.add(
        "OUTCOMES",
        PyTuple::new(py, names(OutcomeKind::ALL, OutcomeKind::name))?,
    )?;
    let fields = PyList::empty(py);
    for &field in Field::ALL {
        fields.append((
            field.name(),
            options::option_name(field),
            field.kind().name(),
        ))?;
    }
    m.add("CONFIG_FIELDS", fields.to_tuple())?;
    Ok(())
}
