//! What the store's answers mean beyond each command's reply, so that every adapter reads
//! them alike: an error reply ([`fault`]: bad data, a denial by the store's ACL, or a
//! store that cannot serve now), and whether the store's eviction policy keeps the fleet's
//! probe lease ([`eviction`]).
//!
//! Only what the fleet's own data can cause is bad data (the protocol's
//! [`Reply::Refused`](super::protocol::Reply::Refused): counted, repaired by the next read).
//! A denied command or key is an outage with an error that names the command: the member
//! decides alone until an operator fixes the ACL (`wit/fleet.md` lists what a member
//! needs), and its adapter reports why.

use alloc::format;
use alloc::string::String;

use super::scripts::Script;
use crate::table::table;

table! {
    /// What an error reply from the store means for a member.
    pub enum FaultKind {
        /// What a key holds made the command fail (a counter that is no integer, a key of
        /// another type, a script's error over a value): the store is up.
        BadData = 0 => "bad-data",
        /// The store's ACL denies this member's user a command, a key or a channel (or
        /// its credentials): an outage until an operator fixes it.
        Denied = 1 => "denied",
        /// The store cannot serve the command now (out of memory, loading, a read-only
        /// replica, a cluster without its slot, a busy script): an outage.
        Unavailable = 2 => "unavailable",
    }
}

/// An error reply, read: its kind and an explanation for the adapter's `last_error`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What it means.
    pub kind: FaultKind,
    /// The store's message with what it was asked (the script and, for a denial inside
    /// one, the Redis command on the line that failed).
    pub explanation: String,
}

/// The ACL rules of a fleet member's Redis user (after `ACL SETUSER <user> on >password`):
/// the fleet's keys and channels, and the commands members and their clients send (their
/// scripts' commands included). `config|get` is optional: it lets an adapter check the
/// store's eviction policy ([`eviction`]).
pub const ACL: &str = "resetkeys ~tripgate:* resetchannels &tripgate:* nocommands \
    +ping +hello +auth +evalsha +eval +script|load +incr \
    +subscribe +unsubscribe +ssubscribe +sunsubscribe +publish +spublish \
    +type +get +set +del +pttl +strlen +pexpire +time \
    +zadd +zcard +zrem +zrange +zremrangebyscore +zremrangebyrank +zpopmin \
    +cluster|slots +cluster|shards +cluster|nodes +command +config|get";

/// Reads `message`, the store's error reply to `script` (`None`: `INCR`, the one command
/// the protocol sends without a script). The message may come with or without its `ERR`
/// prefix (clients differ).
pub fn fault(script: Option<Script>, message: &str) -> Fault {
    let message = message.trim();
    let kind = kind_of(message);
    let asked = match script {
        Some(script) => match failed_command(script, message) {
            Some(command) => format!("{command} in {}", script.file()),
            None => String::from(script.file()),
        },
        None => String::from("INCR"),
    };
    let explanation = match kind {
        FaultKind::BadData => format!("the store refused {asked} for what a key holds: {message}"),
        FaultKind::Denied => format!(
            "the store denies this member's user {asked}: {message} (wit/fleet.md lists the \
             ACL a fleet member needs)"
        ),
        FaultKind::Unavailable => format!("the store cannot run {asked} now: {message}"),
    };
    Fault { kind, explanation }
}

fn kind_of(message: &str) -> FaultKind {
    const DENIALS: [&str; 4] = [
        "can't run this command",
        "can't access at least one of the keys",
        "can't publish to the channel",
        "no permissions",
    ];
    let code = message.split(' ').next().unwrap_or_default();
    match code {
        "NOPERM" | "NOAUTH" | "WRONGPASS" => FaultKind::Denied,
        "WRONGTYPE" => FaultKind::BadData,
        _ if DENIALS.iter().any(|denial| message.contains(denial)) => FaultKind::Denied,
        "ERR" => FaultKind::BadData,
        // An upper-case code (OOM, READONLY, LOADING, BUSY, CLUSTERDOWN, MASTERDOWN, …).
        _ if !code.is_empty() && code.bytes().all(|c| c.is_ascii_uppercase()) => {
            FaultKind::Unavailable
        }
        // A client that dropped the `ERR` prefix.
        _ => FaultKind::BadData,
    }
}

/// The Redis command on the line of `script` that an error raised inside it names
/// (`… @user_script:<line>.`).
fn failed_command(script: Script, message: &str) -> Option<&'static str> {
    let (_, after) = message.rsplit_once("@user_script:")?;
    let digits = after.trim_end_matches(|c: char| !c.is_ascii_digit());
    let line: usize = digits.parse().ok()?;
    let text = script.source().lines().nth(line.checked_sub(1)?)?;
    let (_, call) = text.split_once("redis.call(")?;
    match call.strip_prefix('\'') {
        Some(name) => name.split('\'').next(),
        // `redis.call(ARGV[n], …)`: the scripts name only the channel's publish so.
        None => Some("PUBLISH/SPUBLISH"),
    }
}

/// Whether a store with this `maxmemory-policy` and `maxmemory` (bytes; 0: no limit) keeps
/// the probe lease: `None` if so, else a warning for the adapter to report. The lease has
/// no TTL, so `noeviction` and the `volatile-*` policies never evict it (they may evict the
/// stored event, votes and waiters, which carry one: that slows how the fleet learns, never
/// lets more than K probes out); an `allkeys-*` policy with a limit may evict it while a
/// probe is out, and another member then takes it.
pub fn eviction(policy: &str, maxmemory: u64) -> Option<String> {
    let evicts_any = policy.starts_with("allkeys-");
    (evicts_any && maxmemory > 0).then(|| {
        format!(
            "the store evicts any key when full (maxmemory-policy {policy}, maxmemory \
             {maxmemory}): it may evict the probe lease while a probe is out, and the fleet \
             then has more than K probes at once; give fleet mode a store with noeviction or \
             a volatile-* policy"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_denials_are_outages_that_name_the_command() {
        let zadd = Script::Take
            .source()
            .lines()
            .position(|line| line.contains("redis.call('ZADD'"))
            .map(|index| index + 1);
        let message = format!(
            "ERR The user executing the script can't run this command or subcommand script: \
             9915268684b641d897c0143629af59d00d8fc825, on @user_script:{}.",
            zadd.unwrap_or_default()
        );
        let denied = fault(Some(Script::Take), &message);
        assert_eq!(denied.kind, FaultKind::Denied);
        assert!(
            denied.explanation.contains("ZADD in take.lua"),
            "{denied:?}"
        );
        let publish = fault(
            Some(Script::Publish),
            "The user executing the script can't run this command or subcommand script: \
             f34a, on @user_script:9.",
        );
        assert!(Script::Publish
            .source()
            .lines()
            .nth(8)
            .unwrap_or_default()
            .contains("ARGV[4]"));
        assert_eq!(publish.kind, FaultKind::Denied);
        assert!(publish
            .explanation
            .contains("PUBLISH/SPUBLISH in publish.lua"));
        for direct in [
            "NOPERM this user has no permissions to run the 'evalsha' command",
            "NOPERM User f has no permissions to access one of the keys used as arguments",
            "WRONGPASS invalid username-password pair or user is disabled.",
        ] {
            assert_eq!(fault(None, direct).kind, FaultKind::Denied, "{direct}");
        }
    }

    #[test]
    fn data_errors_and_busy_stores_are_told_apart() {
        for data in [
            "ERR value is not an integer or out of range",
            "value is not an integer or out of range",
            "WRONGTYPE Operation against a key holding the wrong kind of value",
            "ERR user_script:1: attempt to perform arithmetic on a nil value script: 49a0",
        ] {
            assert_eq!(fault(None, data).kind, FaultKind::BadData, "{data}");
        }
        for busy in [
            "OOM command not allowed when used memory > 'maxmemory'. script: 2617, on @user_script:26.",
            "READONLY You can't write against a read only replica.",
            "LOADING Redis is loading the dataset in memory",
            "CLUSTERDOWN The cluster is down",
        ] {
            assert_eq!(fault(Some(Script::Take), busy).kind, FaultKind::Unavailable);
        }
    }

    #[test]
    fn only_a_limit_with_an_allkeys_policy_endangers_the_lease() {
        assert!(eviction("allkeys-lru", 1 << 20).is_some());
        assert!(eviction("allkeys-random", 1).is_some());
        assert!(eviction("allkeys-lru", 0).is_none());
        for keeps in ["noeviction", "volatile-ttl", "volatile-lru", "volatile-lfu"] {
            assert!(eviction(keeps, 1 << 20).is_none(), "{keeps}");
        }
    }
}
