//! What each command asks of Redis: the script (or `INCR`), its KEYS and its ARGV, in the
//! order the script reads them. Every adapter sends exactly this (`EVALSHA` with the
//! script's hash, `EVAL` when the store lacks it), so the call is written once; the
//! protocol vectors pin it.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::Command;
use crate::fleet::scripts::Script;
use crate::fleet::wire::{Keys, MAX_LINE, MAX_VOTES};

/// One call on the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The script to run; `None`: `INCR` of the one key.
    pub script: Option<Script>,
    /// Its KEYS, in order (a Cluster routes the call by the first: they share one slot).
    pub keys: Vec<String>,
    /// Its ARGV, in order.
    pub args: Vec<String>,
}

impl Command {
    /// The call that runs this command on the store of `keys`; `sharded`: a Redis
    /// Cluster, where the scripts publish with `SPUBLISH` (the channels share the keys'
    /// slot).
    pub fn call(&self, keys: &Keys, sharded: bool) -> Call {
        let publish = if sharded { "SPUBLISH" } else { "PUBLISH" };
        let call = |script, keys: &[&String], args: Vec<String>| Call {
            script: Some(script),
            keys: keys.iter().map(|k| (*k).clone()).collect(),
            args,
        };
        let number = |n: u64| format!("{n}");
        match self {
            Self::Read => call(
                Script::Read,
                &[&keys.event, &keys.gen],
                vec![number(MAX_LINE as u64)],
            ),
            Self::Vote { entry, window_ms } => call(
                Script::Vote,
                &[&keys.votes],
                vec![
                    entry.clone(),
                    number((*window_ms).max(1)),
                    number(MAX_VOTES as u64),
                    number(MAX_LINE as u64),
                ],
            ),
            Self::NextGeneration => Call {
                script: None,
                keys: vec![keys.gen.clone()],
                args: Vec::new(),
            },
            Self::Publish { line, expire_ms } => call(
                Script::Publish,
                &[&keys.event, &keys.votes, &keys.waiters],
                vec![
                    keys.channel.clone(),
                    line.clone(),
                    number(expire_ms.unwrap_or(0)),
                    publish.to_string(),
                ],
            ),
            Self::TakeLease { holder, ms } => call(
                Script::Take,
                &[&keys.lease, &keys.waiters],
                vec![holder.clone(), number((*ms).max(1))],
            ),
            Self::RenewLease { holder, ms } => call(
                Script::Renew,
                &[&keys.lease],
                vec![holder.clone(), number((*ms).max(1))],
            ),
            Self::ReleaseLease { holder, notice } => call(
                Script::Release,
                &[&keys.lease, &keys.waiters],
                vec![
                    holder.clone(),
                    keys.channel.clone(),
                    notice.clone(),
                    publish.to_string(),
                    keys.wake.clone(),
                ],
            ),
            Self::Repair { floor } => call(Script::Repair, &[&keys.gen], vec![number(*floor)]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_a_cluster_the_scripts_publish_sharded_and_nothing_else_changes() {
        let keys = Keys::new("payments");
        let commands = [
            Command::Publish {
                line: "l".into(),
                expire_ms: Some(5),
            },
            Command::ReleaseLease {
                holder: "h".into(),
                notice: "n".into(),
            },
        ];
        for command in commands {
            let (plain, sharded) = (command.call(&keys, false), command.call(&keys, true));
            let swapped: Vec<String> = plain
                .args
                .iter()
                .map(|a| {
                    if a == "PUBLISH" {
                        "SPUBLISH".into()
                    } else {
                        a.clone()
                    }
                })
                .collect();
            assert_eq!(sharded.args, swapped, "{command:?}");
            assert_eq!((sharded.script, &sharded.keys), (plain.script, &plain.keys));
        }
    }
}
