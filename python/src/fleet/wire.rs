//! Fleet options, the wire format and the store's scripts as Python functions: the
//! core's rules and formats, with errors that name the Python option.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyString, PyTuple};

use tripgate_core::fleet::options::{FleetOption, MIN_KEY_BYTES};
use tripgate_core::fleet::scripts::Script;
use tripgate_core::fleet::store;
use tripgate_core::fleet::wire::{self, Ignored, Line, Message, Signer};
use tripgate_core::fleet::wire::{MAX_LINE, MAX_VOTES};
use tripgate_core::fleet::SharedKey;
use tripgate_core::Nanos;

use crate::breaker::kind_of;
use crate::options::{option_error, type_name};

/// Bytes of a `bytes`, `bytearray` or `str` (UTF-8), or `None` for anything else.
pub(super) fn bytes_of(value: &Bound<'_, PyAny>) -> Option<Vec<u8>> {
    if let Ok(b) = value.cast::<PyBytes>() {
        return Some(b.as_bytes().to_vec());
    }
    if let Ok(s) = value.cast::<PyString>() {
        return s.to_cow().ok().map(|s| s.as_bytes().to_vec());
    }
    value
        .cast::<pyo3::types::PyByteArray>()
        .ok()
        .map(|b| b.to_vec())
}

/// A shared key from `key` (bytes or str, at least `MIN_KEY_BYTES`), or none.
pub(super) fn key_of(
    py: Python<'_>,
    key: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<SharedKey>> {
    let Some(key) = key.filter(|k| !k.is_none()) else {
        return Ok(None);
    };
    let Some(bytes) = bytes_of(key) else {
        return Err(option_error(
            py,
            true,
            "key",
            format!("key must be bytes or str, not {}", type_name(key)),
        ));
    };
    if bytes.len() < MIN_KEY_BYTES {
        return Err(option_error(
            py,
            false,
            "key",
            format!("key must be at least {MIN_KEY_BYTES} bytes (omit it to run unsigned)"),
        ));
    }
    Ok(Some(SharedKey::new(bytes)))
}

/// A member id as the wire writes it (16 lowercase hex digits, not 0).
pub(super) fn member_of(py: Python<'_>, member: &Bound<'_, PyAny>) -> PyResult<u64> {
    bytes_of(member)
        .and_then(|text| wire::parse_member(&text))
        .ok_or_else(|| {
            option_error(
                py,
                false,
                "member_id",
                "member_id must be 16 lowercase hex digits, not all zero".into(),
            )
        })
}

/// A member's session, given (16 lowercase hex digits, not all zero).
pub(super) fn session_of(py: Python<'_>, session: &Bound<'_, PyAny>) -> PyResult<u64> {
    bytes_of(session)
        .and_then(|text| wire::parse_member(&text))
        .ok_or_else(|| {
            option_error(
                py,
                false,
                "session",
                "session must be 16 lowercase hex digits, not all zero".into(),
            )
        })
}

/// A fresh session from the system's randomness (in a forked child too, unlike a seeded
/// generator copied from its parent).
pub(super) fn random_session() -> PyResult<u64> {
    getrandom::u64().map(|session| session.max(1)).map_err(|e| {
        pyo3::exceptions::PyOSError::new_err(format!("no randomness for a fleet session: {e}"))
    })
}

/// The Python spelling of a fleet option (`reconcile_interval`).
fn python_name(option: FleetOption) -> String {
    option.name().replace('-', "_")
}

/// A duration option in ns, checked against the core's bounds; the error names the option.
pub(super) fn duration(py: Python<'_>, option: FleetOption, ns: Option<u64>) -> PyResult<Nanos> {
    option.duration(ns).map_err(|e| {
        let name = python_name(option);
        let rule = e.to_string().replacen(option.name(), &name, 1);
        option_error(py, false, &name, rule)
    })
}

/// Seconds (int or float, not bool) as ns; `None` for `None`.
fn seconds(
    py: Python<'_>,
    option: FleetOption,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<u64>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    let name = python_name(option);
    if value.is_instance_of::<PyBool>()
        || !(value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>())
    {
        return Err(option_error(
            py,
            true,
            &name,
            format!(
                "{name} must be a number of seconds, not {}",
                type_name(value)
            ),
        ));
    }
    let seconds: f64 = value.extract().unwrap_or(f64::INFINITY);
    if !seconds.is_finite() || seconds < 0.0 {
        // Out of every bound: the core's rule says which.
        return duration(py, option, Some(u64::MAX)).map(Some);
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ns = (seconds * 1e9).round().min(u64::MAX as f64) as u64;
    Ok(Some(ns))
}

/// `fleet_options(reconcile_interval=None, store_timeout=None, max_backoff=None, key=None,
/// member=None)`: a store's options checked by the core's rules, durations in seconds. A
/// dict of the ns values, the key as bytes (or None) and `member_id` (from `member`, a
/// stable name; None without one: the adapter draws a random id). Errors name the option
/// (`error.option`).
#[pyfunction]
#[pyo3(signature = (*, reconcile_interval = None, store_timeout = None, max_backoff = None, key = None, member = None))]
pub fn fleet_options<'py>(
    py: Python<'py>,
    reconcile_interval: Option<&Bound<'py, PyAny>>,
    store_timeout: Option<&Bound<'py, PyAny>>,
    max_backoff: Option<&Bound<'py, PyAny>>,
    key: Option<&Bound<'py, PyAny>>,
    member: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (option, value) in [
        (FleetOption::ReconcileInterval, reconcile_interval),
        (FleetOption::StoreTimeout, store_timeout),
        (FleetOption::MaxBackoff, max_backoff),
    ] {
        let ns = duration(py, option, seconds(py, option, value)?)?;
        out.set_item(format!("{}_ns", python_name(option)), ns)?;
    }
    key_of(py, key)?;
    let key = key.filter(|k| !k.is_none()).and_then(bytes_of);
    out.set_item("key", key.map(|k| PyBytes::new(py, &k)))?;
    let id = match member.filter(|m| !m.is_none()) {
        None => None,
        Some(m) => {
            let Ok(name) = m.cast::<PyString>() else {
                return Err(option_error(
                    py,
                    true,
                    "member",
                    format!(
                        "member must be a str (a pod or host name), not {}",
                        type_name(m)
                    ),
                ));
            };
            let name = name.to_cow()?;
            if name.is_empty() || name.len() > 256 {
                return Err(option_error(
                    py,
                    false,
                    "member",
                    "member must be 1-256 bytes".into(),
                ));
            }
            Some(wire::member_id(&name))
        }
    };
    out.set_item("member_id", id.map(wire::member_hex))?;
    Ok(out)
}

/// The store's Lua scripts, by name (`read`, `vote`, `take`, `renew`, `release`, `repair`,
/// `publish`): the core's files, run as they are by every adapter.
#[pyfunction]
pub fn fleet_scripts(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for script in Script::ALL {
        out.set_item(script.file().trim_end_matches(".lua"), script.source())?;
    }
    Ok(out)
}

/// `fleet_member_id(name)`: the stable member id of a member name (16 hex digits), the
/// same in every adapter.
#[pyfunction]
pub fn fleet_member_id(name: String) -> String {
    wire::member_hex(wire::member_id(&name))
}

/// `fleet_valid_name(name)`: whether `name` is a fleet name (1-128 of `A-Z a-z 0-9 . _ - :`).
#[pyfunction]
pub fn fleet_valid_name(name: &Bound<'_, PyAny>) -> bool {
    name.cast::<PyString>()
        .ok()
        .and_then(|s| s.to_cow().ok().map(|name| wire::valid_name(&name)))
        .unwrap_or(false)
}

pub(super) fn fleet_name(py: Python<'_>, name: &str) -> PyResult<()> {
    if wire::valid_name(name) {
        Ok(())
    } else {
        Err(option_error(
            py,
            false,
            "name",
            "name must be 1-128 characters of A-Z a-z 0-9 . _ - :".into(),
        ))
    }
}

/// `fleet_encode(name, generation, kind, remaining_ms, origin, key=None)`: an event's line
/// as the wire writes it, signed with `key` (or `-`).
#[pyfunction]
#[pyo3(signature = (name, generation, kind, remaining_ms, origin, key = None))]
pub fn fleet_encode(
    py: Python<'_>,
    name: String,
    generation: u64,
    kind: String,
    remaining_ms: u64,
    origin: &Bound<'_, PyAny>,
    key: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    fleet_name(py, &name)?;
    let message = Message {
        generation,
        kind: kind_of(py, &kind)?,
        remaining_ms,
        origin: member_of(py, origin)?,
    };
    let key = key_of(py, key)?;
    Ok(wire::encode(
        &name,
        &message,
        key.as_ref().map(|k| k as &dyn Signer),
    ))
}

/// `fleet_decode(line, name, key=None)`: what a member reads in a line: a dict (`kind`
/// `open`, `close` or `free`, `generation`, `remaining_ms`, `origin`), or `ValueError`
/// whose `reason` is why it is ignored (`garbage`, `wrong-fleet`, `unsigned`, `forged`).
#[pyfunction]
#[pyo3(signature = (line, name, key = None))]
pub fn fleet_decode<'py>(
    py: Python<'py>,
    line: &Bound<'py, PyAny>,
    name: String,
    key: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let bytes = bytes_of(line).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "line must be bytes or str, not {}",
            type_name(line)
        ))
    })?;
    let key = key_of(py, key)?;
    let out = PyDict::new(py);
    match wire::decode_line(&bytes, &name, key.as_ref().map(|k| k as &dyn Signer)) {
        Ok(Line::Event(m)) => {
            out.set_item("kind", m.kind.name())?;
            out.set_item("generation", m.generation)?;
            out.set_item("remaining_ms", m.remaining_ms)?;
            out.set_item("origin", wire::member_hex(m.origin))?;
        }
        Ok(Line::LeaseFree { origin }) => {
            out.set_item("kind", "free")?;
            out.set_item("origin", wire::member_hex(origin))?;
        }
        Err(why) => {
            let err = PyValueError::new_err(format!("the line is ignored: {}", why.name()));
            let _ = err.value(py).setattr("reason", why.name());
            return Err(err);
        }
    }
    Ok(out)
}

/// `fleet_vote_entry(name, member, generation, key=None)`: a trip vote as the votes set
/// holds it.
#[pyfunction]
#[pyo3(signature = (name, member, generation, key = None))]
pub fn fleet_vote_entry(
    py: Python<'_>,
    name: String,
    member: &Bound<'_, PyAny>,
    generation: u64,
    key: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    fleet_name(py, &name)?;
    let member = member_of(py, member)?;
    let key = key_of(py, key)?;
    Ok(wire::vote_entry(
        &name,
        member,
        generation,
        key.as_ref().map(|k| k as &dyn Signer),
    ))
}

/// The fleet-wide constants and names the adapter reads.
pub fn add_tables(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("FLEET_MAX_LINE", MAX_LINE)?;
    m.add("FLEET_MAX_VOTES", MAX_VOTES)?;
    m.add("FLEET_MIN_KEY_BYTES", MIN_KEY_BYTES)?;
    m.add("FLEET_ACL", store::ACL)?;
    let ignored: Vec<&str> = Ignored::ALL.iter().map(|i| i.name()).collect();
    m.add("FLEET_IGNORED", PyTuple::new(py, ignored)?)?;
    let bounds = PyDict::new(py);
    for option in [
        FleetOption::ReconcileInterval,
        FleetOption::StoreTimeout,
        FleetOption::MaxBackoff,
    ] {
        if let Some((default, least, most)) = option.bounds() {
            bounds.set_item(python_name(option), (default, least, most))?;
        }
    }
    m.add("FLEET_DURATION_BOUNDS", bounds)?;
    Ok(())
}

/// `fleet_eviction(policy, maxmemory)`: the core's verdict on a store's eviction policy
/// (`maxmemory-policy`, `maxmemory` in bytes): None if it keeps the probe lease, else the
/// warning to report.
#[pyfunction]
pub fn fleet_eviction(policy: &str, maxmemory: u64) -> Option<String> {
    store::eviction(policy, maxmemory)
}
