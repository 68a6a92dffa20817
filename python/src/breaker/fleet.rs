//! The breaker's fleet operations, for `tripgate.CircuitBreaker`'s methods of the same
//! names: the core's rules, as every host exposes them (the shared vectors 45-54). The
//! member protocol (`crate::fleet`) drives a breaker through these and the native
//! breaker's `Member` operations; nothing here knows of the store.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tripgate_core::{FleetEvent, FleetEventKind};

use crate::clock::AnyClock;
use crate::options::option_error;

type Native = tripgate::Breaker<AnyClock>;

/// A fleet event's kind from its name; the error names the argument.
pub(crate) fn kind_of(py: Python<'_>, kind: &str) -> PyResult<FleetEventKind> {
    FleetEventKind::from_name(kind).ok_or_else(|| {
        option_error(
            py,
            false,
            "kind",
            format!("kind must be open or close, not {kind:?}"),
        )
    })
}

/// `fleet_status()`.
pub fn status<'py>(py: Python<'py>, native: &Native) -> PyResult<Bound<'py, PyDict>> {
    let s = native.fleet_status();
    let out = PyDict::new(py);
    for (name, flag) in [
        ("enabled", s.enabled),
        ("degraded", s.degraded),
        ("lease_held", s.lease_held),
        ("wants_lease", s.wants_lease),
    ] {
        out.set_item(name, flag)?;
    }
    out.set_item("generation", s.generation)?;
    out.set_item("stale_events", s.stale_events)?;
    Ok(out)
}

/// `_fleet_apply(generation, kind, remaining_ns=0)`: what applying the event did and
/// the transitions it caused.
pub fn apply(
    py: Python<'_>,
    native: &Native,
    generation: u64,
    kind: &str,
    remaining_ns: u64,
) -> PyResult<(&'static str, tripgate::Transitions)> {
    let event = FleetEvent {
        generation,
        kind: kind_of(py, kind)?,
        remaining: remaining_ns,
    };
    let (applied, transitions) = native.fleet_apply(event);
    Ok((applied.name(), transitions))
}

/// `_fleet_votes([(member, age_ns), ...])`: whether the votes reach the quorum.
pub fn votes(native: &Native, votes: &Bound<'_, PyAny>) -> PyResult<bool> {
    let mut out = Vec::new();
    for vote in votes.try_iter()? {
        let (member, age): (u64, u64) = vote?.extract().map_err(|_| {
            PyTypeError::new_err("votes must be (member id: int, age in ns: int) pairs")
        })?;
        out.push((member, age));
    }
    Ok(native.fleet_votes(&out))
}

/// `_fleet_take_announcement()`: `(kind, remaining_ns)` or None.
pub fn take_announcement(native: &Native) -> Option<(&'static str, u64)> {
    native
        .fleet_take_announcement()
        .map(|a| (a.kind.name(), a.remaining))
}
