//! The member protocol of fleet mode (`FLEET.md` § 11): what a member asks of the store,
//! and what it does with the answers, as a state machine with no I/O. Every adapter (Rust,
//! Node, Python) runs this one machine and only moves bytes: it reports what happened
//! ([`Input`]), executes the one [`Command`] the machine asks for at a time, feeds back its
//! [`Reply`], and calls again at the machine's [`Protocol::deadline`].
//!
//! The breaker is reached through [`Link`]: its fleet functions, local calls that never
//! wait on the store. So the whole of a member's behaviour (when it votes, publishes, takes,
//! renews and gives back the probe lease, what it believes of the store, which generation
//! it publishes) is decided here once, and checked by the shared protocol vectors.
//!
//! The rules that keep a member safe against an idle peer and a hostile or broken store:
//! - the lease is asked for only when the breaker has a call to probe with (a caller was
//!   turned away for the want of it); its holder runs the whole probe round, and gives it
//!   back when the round is over or no probe came for a third of the lease (`lease`);
//! - a stored or received open lasts at most the least of the store's TTL, the signed
//!   remaining time and the member's longest opening; a stored event without a TTL is absent;
//! - a generation counter that holds no generation is counted and repaired, never
//!   published past; an answer the store refuses (a key of the wrong type) is not an outage;
//! - votes are signed and belong to a generation, so nobody without the key can vote, and a
//!   captured vote counts only in its own generation;
//! - nothing longer than [`MAX_LINE`](super::wire::MAX_LINE) is split or parsed.

use alloc::string::String;
use alloc::vec::Vec;

use super::scripts::Script;
use super::wire::Ignored;
use super::{Announcement, FleetApplied, FleetEvent, FleetStatus};
use crate::state::State;
use crate::time::Nanos;

/// What the protocol reads of its breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    /// The effective state.
    pub state: State,
    /// The fleet part of the breaker.
    pub status: FleetStatus,
    /// Probes out.
    pub probes_out: u8,
    /// Remaining cooldown when open, in ns.
    pub cooldown_remaining: Nanos,
    /// Calls admitted since the breaker's creation (in half-open, probes): a lease under
    /// which this grew was used.
    pub admitted: u64,
}

/// What the protocol needs of its breaker: the core's fleet functions, at the host's
/// `now`. Every method is a local call on the breaker.
pub trait Link {
    /// The breaker now.
    fn view(&mut self) -> View;
    /// The announcement the last transition left, taken once.
    fn take_announcement(&mut self) -> Option<Announcement>;
    /// Applies an event from the fleet.
    fn apply(&mut self, event: FleetEvent) -> FleetApplied;
    /// The store's trip votes (member, age); whether they reach the quorum.
    fn votes(&mut self, votes: &[(u64, Nanos)]) -> bool;
    /// Whether the store is reachable, and the lease held for so long from now, if any.
    fn store(&mut self, reachable: bool, lease: Option<Nanos>);
}

/// What a member runs with: its fleet, its identity and the durations that pace it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The fleet's name (valid: see [`wire::valid_name`](super::wire::valid_name)).
    pub name: String,
    /// This member's id (not 0): its vote. Stable across restarts when it comes from a
    /// member name, so a restarted process keeps its vote.
    pub member: u64,
    /// This member's session (random, not 0, made anew for every member an adapter makes,
    /// in a forked child too): with the member id, the lease's holder, so two processes
    /// that share a member name never both hold the probe lease.
    pub session: u64,
    /// How often the member reads the fleet's state back from the keys.
    pub reconcile_interval: Nanos,
    /// The breaker's configured cooldown: the window votes count in.
    pub cooldown: Nanos,
    /// The breaker's probe timeout: the lease's length.
    pub probe_timeout: Nanos,
}

/// What the adapter must do next on the store. Each is answered by one [`Reply`] (or by
/// [`Input::Down`] if the store failed or did not answer in time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Run `read.lua`: the stored event, its TTL and the generation counter.
    Read,
    /// Run `vote.lua` with this entry and the vote window.
    Vote {
        /// The signed vote entry.
        entry: String,
        /// The window votes count in (the cooldown), in ms.
        window_ms: u64,
    },
    /// `INCR gen`.
    NextGeneration,
    /// Run `publish`: store the line (expiring after `expire_ms` for an open), clear the
    /// votes, and publish the line on the channel, at once.
    Publish {
        /// The message.
        line: String,
        /// For an open: the stored event's TTL.
        expire_ms: Option<u64>,
    },
    /// Run `take.lua`: take the probe lease for `ms` if it is free (or holds garbage);
    /// turned down, the member is queued as a waiter.
    TakeLease {
        /// The holder's id, as the wire writes it.
        holder: String,
        /// The lease's length.
        ms: u64,
    },
    /// Run `renew.lua`: extend this member's lease to `ms` from now.
    RenewLease {
        /// The holder's id.
        holder: String,
        /// The lease's length.
        ms: u64,
    },
    /// Run `release.lua`: give this member's lease back, and if it was still this
    /// member's, publish `notice` on the channel of the member that has waited longest for
    /// it (it asks at once), or on the fleet's channel when no waiter hears it.
    ReleaseLease {
        /// The holder's id.
        holder: String,
        /// The lease-free notice ([`wire::encode_free`](super::wire::encode_free)).
        notice: String,
    },
    /// Run `repair.lua`: set the generation counter to at least `floor`, replacing what
    /// holds no generation.
    Repair {
        /// The least generation the counter must hold.
        floor: u64,
    },
}

impl Command {
    /// The script the store runs for it; `None` for [`Command::NextGeneration`] (`INCR`).
    pub fn script(&self) -> Option<Script> {
        match self {
            Self::Read => Some(Script::Read),
            Self::Vote { .. } => Some(Script::Vote),
            Self::NextGeneration => None,
            Self::Publish { .. } => Some(Script::Publish),
            Self::TakeLease { .. } => Some(Script::Take),
            Self::RenewLease { .. } => Some(Script::Renew),
            Self::ReleaseLease { .. } => Some(Script::Release),
            Self::Repair { .. } => Some(Script::Repair),
        }
    }
}

/// The store's answer to the command last asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply<'a> {
    /// To [`Command::Read`].
    Read {
        /// The stored event, if any.
        event: Option<&'a [u8]>,
        /// Its TTL in ms (`PTTL`: -1 without one, -2 gone).
        event_ttl_ms: i64,
        /// The generation counter, as stored.
        generation: Option<&'a [u8]>,
    },
    /// To [`Command::Vote`]: the store's time and every vote (entry, the store's time of
    /// it), both in ms.
    Voted {
        /// The store's time.
        now_ms: u64,
        /// The votes.
        votes: Vec<(&'a [u8], u64)>,
    },
    /// To [`Command::NextGeneration`].
    Generation(i64),
    /// To [`Command::Publish`].
    Published,
    /// To [`Command::TakeLease`]: whether this member holds it now, else how long the
    /// holder keeps it.
    Lease {
        /// Taken.
        held: bool,
        /// When not taken: the holder's remaining time in ms.
        ttl_ms: i64,
    },
    /// To [`Command::RenewLease`]: whether it was still this member's.
    Renewed(bool),
    /// To [`Command::ReleaseLease`].
    Released,
    /// To [`Command::Repair`].
    Repaired,
    /// The store answered the command with an error of its data (a key of the wrong type,
    /// a counter that is not an integer): up, but holding something bad.
    Refused,
}

/// What happened, as the adapter saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input<'a> {
    /// The store answers again (connected and subscribed).
    Up,
    /// The store failed, or did not answer within the store timeout: the member decides
    /// locally until it is back.
    Down,
    /// The breaker changed (a transition, a caller turned away for the want of a lease,
    /// a probe's outcome).
    Changed,
    /// A line from the fleet's channel.
    Message(&'a [u8]),
    /// The answer to the command in flight.
    Reply(Reply<'a>),
    /// The deadline came.
    Tick,
}

/// What a member has counted, for its status and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Messages received.
    pub received: u64,
    /// Events applied (from messages and reconciles).
    pub applied: u64,
    /// Events published.
    pub published: u64,
    /// Reconciles done.
    pub reconciles: u64,
    /// Leases taken.
    pub leases: u64,
    /// Repairs of the generation counter.
    pub repairs: u64,
    /// Commands the store refused.
    pub refused: u64,
    /// Messages, stored values and votes ignored, by [`Ignored`] code.
    pub ignored: [u64; 6],
}

impl Counts {
    fn ignore(&mut self, why: Ignored) {
        if let Some(count) = self.ignored.get_mut(usize::from(why.code())) {
            *count = count.saturating_add(1);
        }
    }
}

mod call;
mod lease;
mod member;

pub use call::Call;
pub use member::Protocol;
