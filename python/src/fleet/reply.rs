//! Commands out and replies in: the protocol's commands as the Redis calls the adapter
//! makes, and Redis's raw replies read back into the protocol's answers.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyTuple};

use tripgate_core::fleet::protocol::{Command, Reply};
use tripgate_core::fleet::wire::Keys;
use tripgate_core::fleet::wire::{MAX_LINE, MAX_VOTES};

use super::wire::bytes_of;

/// A command as the adapter runs it: `(kind, fields, (script, keys, args))`, with `kind`
/// and `fields` as the protocol vectors spell them, and the Redis call: a script of
/// `fleet_scripts()` by name (run with `EVALSHA`), or `INCR`. `sharded`: the store is a
/// Redis Cluster, where the scripts publish with `SPUBLISH` (the channels share the keys'
/// slot).
// long: one arm per fleet command, with its fields and its Redis call
pub(super) fn command_tuple<'py>(
    py: Python<'py>,
    keys: &Keys,
    sharded: bool,
    command: &Command,
) -> PyResult<Bound<'py, PyTuple>> {
    let publish = if sharded { "SPUBLISH" } else { "PUBLISH" };
    let fields = PyDict::new(py);
    let args = PyList::empty(py);
    let (kind, script, script_keys): (&str, &str, Vec<&str>) = match command {
        Command::Read => {
            args.append(MAX_LINE)?;
            ("read", "read", vec![keys.event.as_str(), keys.gen.as_str()])
        }
        Command::Vote { entry, window_ms } => {
            fields.set_item("entry", entry)?;
            fields.set_item("window-ms", window_ms)?;
            args.append(entry)?;
            args.append((*window_ms).max(1))?;
            args.append(MAX_VOTES)?;
            args.append(MAX_LINE)?;
            ("vote", "vote", vec![keys.votes.as_str()])
        }
        Command::NextGeneration => ("next-generation", "INCR", vec![keys.gen.as_str()]),
        Command::Publish { line, expire_ms } => {
            fields.set_item("line", line)?;
            fields.set_item("expire-ms", expire_ms)?;
            args.append(&keys.channel)?;
            args.append(line)?;
            args.append(expire_ms.unwrap_or(0))?;
            args.append(publish)?;
            (
                "publish",
                "publish",
                vec![
                    keys.event.as_str(),
                    keys.votes.as_str(),
                    keys.waiters.as_str(),
                ],
            )
        }
        Command::TakeLease { holder, ms } | Command::RenewLease { holder, ms } => {
            fields.set_item("holder", holder)?;
            fields.set_item("ms", ms)?;
            args.append(holder)?;
            args.append((*ms).max(1))?;
            // A member the store turns down joins the waiters, to be woken alone.
            match command {
                Command::TakeLease { .. } => (
                    "take-lease",
                    "take",
                    vec![keys.lease.as_str(), keys.waiters.as_str()],
                ),
                _ => ("renew-lease", "renew", vec![keys.lease.as_str()]),
            }
        }
        Command::ReleaseLease { holder, notice } => {
            fields.set_item("holder", holder)?;
            fields.set_item("notice", notice)?;
            args.append(holder)?;
            args.append(&keys.channel)?;
            args.append(notice)?;
            args.append(publish)?;
            args.append(&keys.wake)?;
            (
                "release-lease",
                "release",
                vec![keys.lease.as_str(), keys.waiters.as_str()],
            )
        }
        Command::Repair { floor } => {
            fields.set_item("floor", floor)?;
            args.append(floor)?;
            ("repair", "repair", vec![keys.gen.as_str()])
        }
    };
    let call = (script, PyTuple::new(py, script_keys)?, args.to_tuple());
    PyTuple::new(
        py,
        [
            kind.into_pyobject(py)?.into_any(),
            fields.into_any(),
            call.into_pyobject(py)?.into_any(),
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
