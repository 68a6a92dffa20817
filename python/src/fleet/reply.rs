//! Commands out and replies in: the protocol's commands as the Redis calls the adapter
//! makes, and Redis's raw replies read back into the protocol's answers.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyTuple};

use tripgate_core::fleet::protocol::{Command, Reply};
use tripgate_core::fleet::scripts::Script;
use tripgate_core::fleet::wire::Keys;

use super::wire::bytes_of;

/// A command as the adapter runs it: `(kind, fields, (script, keys, args))`, with `kind`
/// and `fields` as the protocol vectors spell them, and the Redis call as the core makes
/// it ([`Command::call`]): a script of `fleet_scripts()` by name (run with `EVALSHA`), or
/// `INCR`. `sharded`: the store is a Redis Cluster.
pub(super) fn command_tuple<'py>(
    py: Python<'py>,
    keys: &Keys,
    sharded: bool,
    command: &Command,
) -> PyResult<Bound<'py, PyTuple>> {
    let fields = PyDict::new(py);
    let kind = match command {
        Command::Read => "read",
        Command::Vote { entry, window_ms } => {
            fields.set_item("entry", entry)?;
            fields.set_item("window-ms", window_ms)?;
            "vote"
        }
        Command::NextGeneration => "next-generation",
        Command::Publish { line, expire_ms } => {
            fields.set_item("line", line)?;
            fields.set_item("expire-ms", expire_ms)?;
            "publish"
        }
        Command::TakeLease { holder, ms } | Command::RenewLease { holder, ms } => {
            fields.set_item("holder", holder)?;
            fields.set_item("ms", ms)?;
            if matches!(command, Command::TakeLease { .. }) {
                "take-lease"
            } else {
                "renew-lease"
            }
        }
        Command::ReleaseLease { holder, notice } => {
            fields.set_item("holder", holder)?;
            fields.set_item("notice", notice)?;
            "release-lease"
        }
        Command::Repair { floor } => {
            fields.set_item("floor", floor)?;
            "repair"
        }
    };
    let call = command.call(keys, sharded);
    let script = call.script.map_or("INCR", Script::name);
    let redis_call = (
        script,
        PyTuple::new(py, &call.keys)?,
        PyTuple::new(py, &call.args)?,
    );
    PyTuple::new(
        py,
        [
            kind.into_pyobject(py)?.into_any(),
            fields.into_any(),
            redis_call.into_pyobject(py)?.into_any(),
        ],
    )
}

/// The bytes a [`Reply`] borrows, copied out of Redis's reply.
#[derive(Default)]
pub(super) struct Owned {
    event: Option<Vec<u8>>,
    generation: Option<Vec<u8>>,
    votes: Vec<(Vec<u8>, u64)>,
}

/// An integer reply (not a bool).
fn integer(value: &Bound<'_, PyAny>) -> Option<i64> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return None;
    }
    value.extract().ok()
}

/// A bulk string or nil.
fn bulk(value: &Bound<'_, PyAny>) -> Result<Option<Vec<u8>>, ()> {
    if value.is_none() {
        return Ok(None);
    }
    bytes_of(value).map(Some).ok_or(())
}

/// A time in ms from the vote script: an integer, or a decimal (a score may come as a
/// float's text).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn store_time(value: &Bound<'_, PyAny>) -> Option<u64> {
    if let Some(n) = integer(value) {
        return u64::try_from(n).ok();
    }
    let float = |f: f64| (f.is_finite() && f >= 0.0).then_some(f as u64);
    if let Ok(f) = value.cast::<PyFloat>() {
        return float(f.value());
    }
    let text = bytes_of(value)?;
    let text = std::str::from_utf8(&text).ok()?;
    text.parse::<u64>()
        .ok()
        .or_else(|| text.parse::<f64>().ok().and_then(float))
}

fn items<'py>(value: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(list) = value.cast::<PyList>() {
        return Some(list.iter().collect());
    }
    value.cast::<PyTuple>().ok().map(|t| t.iter().collect())
}

/// Redis's reply to `command`, read as the protocol's answer. A reply of a shape no
/// script returns is a refusal: the store is up, but its data is not the fleet's.
pub(super) fn reply_of<'a>(
    command: &Command,
    value: &Bound<'_, PyAny>,
    owned: &'a mut Owned,
) -> Reply<'a> {
    shaped(command, value, owned).unwrap_or(Reply::Refused)
}

fn shaped<'a>(
    command: &Command,
    value: &Bound<'_, PyAny>,
    owned: &'a mut Owned,
) -> Option<Reply<'a>> {
    Some(match command {
        Command::Read => {
            let parts = items(value)?;
            let [event, ttl, generation] = parts.as_slice() else {
                return None;
            };
            let event_ttl_ms = integer(ttl)?;
            owned.event = bulk(event).ok()?;
            owned.generation = bulk(generation).ok()?;
            Reply::Read {
                event: owned.event.as_deref(),
                event_ttl_ms,
                generation: owned.generation.as_deref(),
            }
        }
        Command::Vote { .. } => {
            let parts = items(value)?;
            let now_ms = store_time(parts.first()?)?;
            owned.votes = parts
                .get(1..)
                .unwrap_or_default()
                .chunks_exact(2)
                .filter_map(|pair| match pair {
                    // Anything else in the reply is not a vote.
                    [entry, at] => Some((bulk(entry).ok()??, store_time(at)?)),
                    _ => None,
                })
                .collect();
            Reply::Voted {
                now_ms,
                votes: owned
                    .votes
                    .iter()
                    .map(|(e, at)| (e.as_slice(), *at))
                    .collect(),
            }
        }
        Command::NextGeneration => Reply::Generation(integer(value)?),
        Command::Publish { .. } => Reply::Published,
        Command::TakeLease { .. } => {
            let parts = items(value)?;
            let [held, ttl] = parts.as_slice() else {
                return None;
            };
            Reply::Lease {
                held: integer(held)? == 1,
                ttl_ms: integer(ttl)?,
            }
        }
        Command::RenewLease { .. } => Reply::Renewed(integer(value)? == 1),
        Command::ReleaseLease { .. } => Reply::Released,
        Command::Repair { .. } => Reply::Repaired,
    })
}
