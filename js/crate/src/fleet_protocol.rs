//! Fleet mode's member protocol for JS: the core's
//! [`Protocol`](tripgate_core::fleet::protocol::Protocol), whose [`Link`] is a JS breaker's
//! own core breaker in this same instance, so a fleet member's calls into its breaker never
//! cross back into JS. The Node adapter (`js/src/fleet/`) only moves bytes: it feeds in what
//! happened (the store up or down, the breaker woken, a message, a reply, a deadline come),
//! reads the one command the protocol asks for, runs it on Redis, and feeds back the reply.
//!
//! The MAC is the one thing computed in JS: the core asks its [`Signer`] for the
//! HMAC-SHA256 of a body, and [`FleetMac`] hands that to node:crypto (a SHA-256 here would
//! grow the module by a crypto library for what Node has built in). It is called only in
//! the background, once per message read, vote read back or line written.
//!
//! Numbers cross as numbers: times in milliseconds (the core's nanoseconds, as
//! [`time`](crate::time) converts them), commands as a code (the order of
//! [`fleet_tables`]' `commands`) whose text and number JS reads with [`FleetProtocol::command`]
//! and [`FleetProtocol::state`].

use core::fmt::Write;

use tripgate_core::fleet::options::{Backoff, FleetOption, MIN_KEY_BYTES};
use tripgate_core::fleet::protocol::{Command, Input, Link, Protocol, Reply, Settings, View};
use tripgate_core::fleet::store;
use tripgate_core::fleet::wire::{self, Ignored, Signer, MAX_LINE, MAX_VOTES};
use tripgate_core::{Announcement, FleetApplied, FleetEvent, Nanos, MILLISECOND};
use wasm_bindgen::prelude::*;

use crate::breaker::Breaker;
use crate::time::{duration, ms, reading};

#[wasm_bindgen]
extern "C" {
    /// The fleet's MAC, computed by JS: an object whose `sign(body, out)` writes the
    /// HMAC-SHA256 of `body` under the shared key (32 bytes) into `out`.
    pub type FleetMac;

    #[wasm_bindgen(method, structural)]
    fn sign(this: &FleetMac, body: &[u8], out: &mut [u8]);
}

/// [`FleetMac`] as the core's [`Signer`].
struct JsSigner<'a>(&'a FleetMac);

impl Signer for JsSigner<'_> {
    fn sign(&self, body: &[u8]) -> [u8; 32] {
        let mut out = [0u8; 32];
        self.0.sign(body, &mut out);
        out
    }
}

/// A core breaker at its host's `now`: the protocol's link to it. Whether a fleet event
/// moved it is kept, so that JS tells its listeners.
struct BreakerLink<'a> {
    breaker: &'a mut Breaker,
    now: Nanos,
    moved: bool,
}

impl Link for BreakerLink<'_> {
    fn view(&mut self) -> View {
        let core = &self.breaker.core;
        let metrics = core.metrics(self.now);
        View {
            state: metrics.state,
            status: core.fleet_status(self.now),
            probes_out: metrics.probes_out,
            cooldown_remaining: metrics.cooldown_remaining,
            admitted: metrics.admitted_total,
        }
    }
    fn take_announcement(&mut self) -> Option<Announcement> {
        self.breaker.core.fleet_take_announcement()
    }
    fn apply(&mut self, event: FleetEvent) -> FleetApplied {
        let (applied, transitions) = self.breaker.core.fleet_apply(event, self.now);
        // One event at most per input, so the breaker's one list of transitions holds all.
        self.moved |= self.breaker.note(transitions);
        applied
    }
    fn votes(&mut self, votes: &[(u64, Nanos)]) -> bool {
        self.breaker.core.fleet_votes(votes, self.now)
    }
    fn store(&mut self, reachable: bool, lease: Option<Nanos>) {
        self.breaker.core.fleet_degraded(!reachable, self.now);
        self.breaker.core.fleet_lease(lease, self.now);
    }
}

/// Added to [`FleetProtocol`]'s command code when the input moved the breaker: JS then
/// tells its listeners the transitions (`Breaker::transitions`).
pub const MOVED: i32 = 16;

/// How many numbers [`FleetProtocol::state`] writes.
pub const STATE_LEN: usize = 5 + 7 + Ignored::ALL.len();

/// The command codes, in [`fleet_tables`]' order.
fn code(command: &Command) -> i32 {
    match command {
        Command::Read => 0,
        Command::Vote { .. } => 1,
        Command::NextGeneration => 2,
        Command::Publish { .. } => 3,
        Command::TakeLease { .. } => 4,
        Command::RenewLease { .. } => 5,
        Command::ReleaseLease { .. } => 6,
        Command::Repair { .. } => 7,
    }
}

/// Command names, index = code: the vectors' spelling.
const COMMANDS: [&str; 8] = [
    "read",
    "vote",
    "next-generation",
    "publish",
    "take-lease",
    "renew-lease",
    "release-lease",
    "repair",
];

/// One member of one fleet: the core's protocol, the command it last asked for, and the
/// JS MAC.
#[wasm_bindgen]
pub struct FleetProtocol {
    protocol: Protocol,
    mac: Option<FleetMac>,
    command: Option<Command>,
    /// The last valid reading of the adapter's clock, for one that is not.
    now: Nanos,
}

#[wasm_bindgen]
impl FleetProtocol {
    /// A member of fleet `name` (the wire's rule) with id `member` and session `session`
    /// (each 16 lowercase hex digits, not 0; the session random per member), reading its fleet back every `reconcile_interval_ms`, for `breaker`
    /// (its cooldown is the votes' window, its probe timeout the lease's length); `mac`
    /// signs and checks, or none for an unsigned fleet.
    #[wasm_bindgen(constructor)]
    pub fn new(
        name: &str,
        member: &str,
        session: &str,
        reconcile_interval_ms: f64,
        breaker: &Breaker,
        mac: Option<FleetMac>,
    ) -> Result<FleetProtocol, JsError> {
        if !wire::valid_name(name) {
            return Err(JsError::new(
                "name must be 1-128 characters of A-Z a-z 0-9 . _ - :",
            ));
        }
        let member = wire::parse_member(member.as_bytes())
            .ok_or_else(|| JsError::new("member must be 16 lowercase hex digits, not all 0"))?;
        let session = wire::parse_member(session.as_bytes())
            .ok_or_else(|| JsError::new("session must be 16 lowercase hex digits, not all 0"))?;
        let config = breaker.core.config();
        Ok(Self {
            protocol: Protocol::new(Settings {
                name: name.into(),
                member,
                session,
                reconcile_interval: duration(reconcile_interval_ms),
                cooldown: config.cooldown,
                probe_timeout: config.probe_timeout,
            }),
            mac,
            command: None,
            now: 0,
        })
    }

    /// Who holds the lease when this member does: its id and session, 32 hex digits.
    pub fn holder(&self) -> String {
        self.protocol.holder().into()
    }

    /// The store's error reply to the command in flight, read by the core
    /// (`fleet::store::fault`): `<kind> <explanation>`, kind `bad-data` (answer
    /// `refused`), `denied` or `unavailable` (the store is down, for that reason).
    pub fn fault(&self, message: &str) -> String {
        let fault = self.protocol.fault(message);
        format!("{} {}", fault.kind.name(), fault.explanation)
    }

    /// `gen event votes lease channel waiters wake own-channel`: the fleet's keys, its
    /// channel, the lease's waiters, the prefix of members' own channels and this
    /// member's own, space-separated (a fleet's name holds no space).
    pub fn keys(&self) -> String {
        let k = self.protocol.keys();
        let mut out = String::new();
        let _ = write!(
            out,
            "{} {} {} {} {} {} {} {}",
            k.gen,
            k.event,
            k.votes,
            k.lease,
            k.channel,
            k.waiters,
            k.wake,
            self.protocol.wake_channel()
        );
        out
    }

    /// Feeds what happened, and decides what comes next. `kind` says what, and where its
    /// data is:
    ///
    /// | kind | input | data |
    /// |---|---|---|
    /// | 0, 1, 2, 3 | the store up, down; the breaker changed; the deadline came | — |
    /// | 4 | a line from the fleet's channel | `bytes` (JS passes at most [`MAX_LINE`] + 1 of them: anything longer is garbage all the same) |
    /// | 5 | the answer to `read` | `bytes`: the stored event then the counter, `lengths[0]`, `lengths[1]` bytes (`u32::MAX`: absent); `numbers[0]`: the event's PTTL |
    /// | 6 | the answer to `vote` | `numbers[0]`: the store's time; the votes' entries end to end in `bytes`, `lengths[i]` bytes each, cast at `numbers[1 + i]` |
    /// | 7 | a generation (`INCR`) | `numbers[0]` |
    /// | 8 | published | — |
    /// | 9 | the lease | `numbers[0]`: 1 taken, else 0; `numbers[1]`: the holder's time left |
    /// | 10 | renewed | `numbers[0]`: 1 if it was still this member's |
    /// | 11, 12 | released, repaired | — |
    /// | 13 | refused: an error of the store's data, or a reply of the wrong shape | — |
    /// | 14 | the member leaves its fleet: the lease goes back if held (nobody waits for it) | — |
    ///
    /// Times are ms: `breaker_now_ms` on the breaker's clock, `now_ms` on the adapter's.
    /// Returns the code of the command to run + 1 (0: none; read it with [`Self::command`]),
    /// plus [`MOVED`] when the breaker changed state.
    #[allow(clippy::too_many_arguments)]
    pub fn handle(
        &mut self,
        kind: u8,
        bytes: &[u8],
        lengths: &[u32],
        numbers: &[f64],
        breaker: &mut Breaker,
        breaker_now_ms: f64,
        now_ms: f64,
    ) -> i32 {
        if let Some(now) = reading(now_ms) {
            self.now = self.now.max(now);
        }
        let number = |i: usize| numbers.get(i).copied().unwrap_or(f64::NAN);
        // Whole numbers from Redis; `as` saturates anything else.
        let integer = |i: usize| number(i) as i64;
        let mut rest = bytes;
        let mut take = |length: Option<&u32>| match length {
            Some(&n) if n != u32::MAX => {
                let (taken, after) = rest.split_at(rest.len().min(n as usize));
                rest = after;
                Some(taken)
            }
            _ => None,
        };
        let input = match kind {
            0 => Input::Up,
            1 => Input::Down,
            2 => Input::Changed,
            3 => Input::Tick,
            4 => Input::Message(bytes),
            5 => Input::Reply(Reply::Read {
                event: take(lengths.first()),
                event_ttl_ms: integer(0),
                generation: take(lengths.get(1)),
            }),
            6 => {
                let mut votes = Vec::with_capacity(lengths.len().min(MAX_VOTES));
                for (i, length) in lengths.iter().enumerate() {
                    let entry = take(Some(length)).unwrap_or_default();
                    votes.push((entry, number(i.saturating_add(1)) as u64));
                }
                Input::Reply(Reply::Voted {
                    now_ms: number(0) as u64,
                    votes,
                })
            }
            7 => Input::Reply(Reply::Generation(integer(0))),
            8 => Input::Reply(Reply::Published),
            9 => Input::Reply(Reply::Lease {
                held: number(0) == 1.0,
                ttl_ms: integer(1),
            }),
            10 => Input::Reply(Reply::Renewed(number(0) == 1.0)),
            11 => Input::Reply(Reply::Released),
            12 => Input::Reply(Reply::Repaired),
            13 => Input::Reply(Reply::Refused),
            _ => Input::Tick,
        };
        // A reconfigured breaker's cooldown and probe timeout hold from this step on.
        let config = *breaker.core.config();
        self.protocol.retune(config.cooldown, config.probe_timeout);
        let now = breaker.now(breaker_now_ms);
        let mut link = BreakerLink {
            breaker,
            now,
            moved: false,
        };
        let signer = self.mac.as_ref().map(JsSigner);
        let signer = signer.as_ref().map(|s| s as &dyn Signer);
        self.command = if kind == 14 {
            self.protocol.leave(&mut link, signer)
        } else {
            self.protocol.handle(input, &mut link, signer, self.now);
            self.protocol.poll()
        };
        let command = self.command.as_ref().map_or(-1, code);
        command + 1 + if link.moved { MOVED } else { 0 }
    }

    /// The Redis call of the command asked for, as the core makes it
    /// (`Command::call`): the script's name (`INCR`: no script), the number of keys, the
    /// keys, then the arguments, one per line (none holds a newline); empty with no
    /// command. `sharded`: a Redis Cluster (scripts publish with `SPUBLISH`).
    pub fn call(&self, sharded: bool) -> String {
        let Some(command) = &self.command else {
            return String::new();
        };
        let call = command.call(self.protocol.keys(), sharded);
        let script = call.script.map_or("INCR", |s| s.name());
        let mut out = String::new();
        let _ = write!(out, "{script}\n{}", call.keys.len());
        for part in call.keys.iter().chain(&call.args) {
            out.push('\n');
            out.push_str(part);
        }
        out
    }

    /// The command's text: a vote's entry, a line, or a lease holder; for `release-lease`
    /// the holder, a newline and the lease-free notice. Empty for the others.
    pub fn command(&self) -> String {
        match &self.command {
            Some(Command::Vote { entry, .. }) => entry.clone(),
            Some(Command::Publish { line, .. }) => line.clone(),
            Some(Command::TakeLease { holder, .. } | Command::RenewLease { holder, .. }) => {
                holder.clone()
            }
            Some(Command::ReleaseLease { holder, notice }) => {
                let mut out = holder.clone();
                out.push('\n');
                out.push_str(notice);
                out
            }
            _ => String::new(),
        }
    }

    /// Fills `out` ([`STATE_LEN`] numbers) with the member's state: when to feed the
    /// deadline input (the adapter's ms; `NaN`: it waits on no time, the store being down
    /// or a command in flight), synced (1: the store answers and the member has read its
    /// fleet back since, so its breaker follows the fleet), lease held, wants the lease
    /// (the breaker asked for it when last looked at: an adapter woken by its asks need not
    /// be woken by another until this turns 0), the command's number (a vote's window, a
    /// publish's TTL, a lease's length in ms, a repair's floor; `NaN`: none), then what it
    /// counted: received, applied, published, reconciles, leases, repairs, refused, and
    /// the ignored by [`Ignored`] code.
    pub fn state(&self, out: &mut [f64]) {
        let p = &self.protocol;
        let number = match &self.command {
            Some(Command::Vote { window_ms, .. }) => *window_ms as f64,
            Some(Command::Publish {
                expire_ms: Some(ms),
                ..
            }) => *ms as f64,
            Some(Command::TakeLease { ms, .. } | Command::RenewLease { ms, .. }) => *ms as f64,
            Some(Command::Repair { floor }) => *floor as f64,
            _ => f64::NAN,
        };
        let flag = |b: bool| f64::from(u8::from(b));
        let c = p.counts();
        let head = [
            p.deadline().map_or(f64::NAN, ms),
            flag(p.synced()),
            flag(p.lease_held()),
            flag(p.wants_lease()),
            number,
        ];
        let counts = [
            c.received,
            c.applied,
            c.published,
            c.reconciles,
            c.leases,
            c.repairs,
            c.refused,
        ];
        let all = head
            .into_iter()
            .chain(counts.into_iter().chain(c.ignored).map(|v| v as f64));
        for (o, v) in out.iter_mut().zip(all) {
            *o = v;
        }
    }
}

/// The reconnect backoff every adapter uses (the core's [`Backoff`]): from 10 ms, doubling
/// to `max`, jittered, and started over only after a session stayed up for `max`.
#[wasm_bindgen]
pub struct FleetBackoff(Backoff);

#[wasm_bindgen]
impl FleetBackoff {
    /// Up to `max_ms`, its jitter seeded by the member id `member` (16 hex digits).
    #[wasm_bindgen(constructor)]
    pub fn new(max_ms: f64, member: &str) -> FleetBackoff {
        let seed = wire::parse_member(member.as_bytes()).unwrap_or(1);
        Self(Backoff::new(duration(max_ms), seed))
    }

    /// The store answered at `now_ms`.
    pub fn up(&mut self, now_ms: f64) {
        self.0.up(reading(now_ms).unwrap_or(0));
    }

    /// The store failed at `now_ms`: how many ms to wait before trying again.
    pub fn down(&mut self, now_ms: f64) -> f64 {
        ms(self.0.down(reading(now_ms).unwrap_or(0)))
    }
}

/// Fleet mode's tables as JSON, for JS to validate and name things as the core does:
/// `commands` and `ignored` (names, index = code), `options` (the duration options, each
/// `{ name, defaultMs, minMs, maxMs }`, by [`FleetOption`] code), `minKeyBytes`,
/// `maxLine`, `maxVotes`, `stateLen`, `moved`.
#[wasm_bindgen]
pub fn fleet_tables() -> String {
    let mut out = String::from("{\"commands\":[");
    for (i, name) in COMMANDS.iter().enumerate() {
        let _ = write!(out, "{}\"{name}\"", if i > 0 { "," } else { "" });
    }
    out.push_str("],\"ignored\":[");
    for (i, why) in Ignored::ALL.iter().enumerate() {
        let _ = write!(out, "{}\"{}\"", if i > 0 { "," } else { "" }, why.name());
    }
    out.push_str("],\"options\":[");
    let mut first = true;
    for option in FleetOption::ALL {
        if let Some((default, least, most)) = option.bounds() {
            let _ = write!(
                out,
                "{}{{\"name\":\"{}\",\"code\":{},\"defaultMs\":{},\"minMs\":{},\"maxMs\":{}}}",
                if first { "" } else { "," },
                option.name(),
                option.code(),
                default / MILLISECOND,
                least / MILLISECOND,
                most / MILLISECOND
            );
            first = false;
        }
    }
    let _ = write!(
        out,
        "],\"minKeyBytes\":{MIN_KEY_BYTES},\"maxLine\":{MAX_LINE},\"maxVotes\":{MAX_VOTES},\
         \"stateLen\":{STATE_LEN},\"moved\":{MOVED},\"acl\":\"{}\"}}",
        store::ACL
    );
    out
}

/// Whether `value_ms` is a valid value of the duration option `option` (its code): `None`
/// if so, else the core's rule in words (`reconcile-interval must be between 10 ms and
/// 3600000 ms`).
#[wasm_bindgen]
pub fn fleet_check_duration(option: u8, value_ms: f64) -> Option<String> {
    let option = FleetOption::from_code(option)?;
    let value = if value_ms.is_nan() {
        u64::MAX
    } else {
        duration(value_ms)
    };
    option.duration(Some(value)).err().map(|e| {
        let mut out = String::new();
        let _ = write!(out, "{e}");
        out
    })
}

/// The core's verdict on a store's eviction policy (`maxmemory-policy`, `maxmemory` in
/// bytes): none if it keeps the probe lease, else the warning to report.
#[wasm_bindgen]
pub fn fleet_eviction(policy: &str, maxmemory: f64) -> Option<String> {
    // `as` saturates: a negative or NaN limit reads as none.
    store::eviction(policy, maxmemory as u64)
}

/// A member's stable id from its name (the wire's `member_id`), as 16 hex digits.
#[wasm_bindgen]
pub fn fleet_member_id(name: &str) -> String {
    wire::member_hex(wire::member_id(name))
}

/// Whether `name` is a fleet name (1–128 of `A–Z a–z 0–9 . _ - :`).
#[wasm_bindgen]
pub fn fleet_valid_name(name: &str) -> bool {
    wire::valid_name(name)
}

/// The Redis Cluster slot of fleet `name`'s keys and channels: every one is
/// `tripgate:{name}:…`, and a name holds no brace, so the hash tag is the name itself.
#[wasm_bindgen]
pub fn fleet_slot(name: &str) -> u16 {
    crc16::State::<crc16::XMODEM>::calculate(name.as_bytes()) % 16_384
}

#[cfg(test)]
mod tests;
