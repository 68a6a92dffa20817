//! Fleet mode: the rules that make breakers in many processes, guarding one upstream,
//! act toward it like one breaker (`FLEET.md`; the wire format is `wit/fleet.md`).
//!
//! The store (Redis), its scripts, subscriptions and reconnects live in each host's
//! adapter, in the background; every decision is made here, so every host decides the
//! same and the call path never waits on the store:
//!
//! * **Remote events** ([`FleetEvent`]): a fleet *open* carries the remaining cooldown (a
//!   duration, never an instant: clocks differ between hosts) and opens this breaker for
//!   exactly that long (reason `fleet-open`); a fleet *close* closes it with an empty
//!   window (`fleet-close`). Operator states (isolated, disabled) hold.
//! * **Fencing**: every event carries the fleet generation (the store's counter, which
//!   only grows); an event at or below the last generation applied is stale and changes
//!   nothing, so a late or replayed open never re-opens a fleet that has since closed.
//! * **One probe round fleet-wide**: in half-open a fleet member admits probes only while
//!   it holds the fleet's probe lease ([`Breaker::fleet_lease`](crate::Breaker::fleet_lease)); without it callers are
//!   turned away as `probing-elsewhere`. The lease holder's round ends in an
//!   [`Announcement`] the adapter publishes: `reopened` (a probe failed: the fleet opens
//!   again) or `closed` (the probes succeeded: the fleet closes). That is the fleet's
//!   round only when the last fleet event applied was an open; a member that opened on
//!   its own, below the quorum, runs a round of its own: a failed probe is one more trip
//!   (announced `tripped`, a fresh vote) and a success is announced to no one, so a
//!   member whose path alone is broken never opens or closes the fleet by its probes.
//! * **Quorum**: a local trip is announced as `tripped`; the adapter records it as this
//!   member's vote in the store and hands back every member's vote
//!   ([`Breaker::fleet_votes`](crate::Breaker::fleet_votes)); the fleet opens only once `fleet-quorum` distinct members
//!   have tripped within one cooldown. Below quorum the member that tripped stays open on
//!   its own, as any breaker does.
//! * **Degraded**: with the store unreachable the adapter says so
//!   ([`Breaker::fleet_degraded`](crate::Breaker::fleet_degraded)) and the breaker is a plain local one: it probes on its
//!   own (K probes), without a lease, until the store is back. A member whose opening is
//!   the fleet's first waits one probe timeout from losing the store: the fleet's round
//!   may be running under another member's lease, so through a store outage shorter
//!   than that (a Redis failover) the fleet still has at most K probes out.
//!
//! With the feature `alloc`, the rest of fleet mode that every adapter shares:
//! `protocol` (the member protocol: a state machine with no I/O that adapters run),
//! `wire` (the keys, the message line, the signed vote), `options` (the bounds of the
//! timings, the reconnect backoff) and `store` (what the store's error replies mean, and
//! which eviction policies keep the probe lease). With the feature `sign`, `SharedKey`:
//! the wire format's HMAC-SHA256, the one signer every adapter uses. Always:
//! [`scripts`], the store's side.

use crate::config::MAX_QUORUM;

#[cfg(feature = "alloc")]
pub mod options;
#[cfg(feature = "alloc")]
pub mod protocol;
pub mod scripts;
#[cfg(feature = "sign")]
mod sign;
#[cfg(feature = "alloc")]
pub mod store;
#[cfg(feature = "alloc")]
pub mod wire;

use crate::state::State;
use crate::table::table;
use crate::time::{since, Nanos};
use crate::transition::Reason;
#[cfg(feature = "sign")]
pub use sign::SharedKey;

table! {
    /// What a fleet event says.
    pub enum FleetEventKind {
        /// The fleet is open for the event's remaining cooldown.
        Open = 0 => "open",
        /// The fleet's probes succeeded: every member closes.
        Close = 1 => "close",
    }
}

/// An event from the fleet, as the store delivered it (a message, or the stored state
/// read back when reconciling).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FleetEvent {
    /// The fleet generation the event was published under.
    pub generation: u64,
    /// Open or close.
    pub kind: FleetEventKind,
    /// For an open: how much of the cooldown is left, as the store reckons it.
    pub remaining: Nanos,
}

table! {
    /// What applying a fleet event did.
    pub enum FleetApplied {
        /// The event moved the breaker (or found it where the event puts it).
        Applied = 0 => "applied",
        /// At or below the last generation applied: nothing changed.
        Stale = 1 => "stale",
        /// The breaker is isolated or disabled by its operator: its state holds (the
        /// generation is still taken, so older events stay stale).
        Held = 2 => "held",
        /// This breaker is not in fleet mode (`fleet-quorum` unset).
        NotInFleet = 3 => "not-in-fleet",
    }
}

table! {
    /// What a fleet member must tell the fleet.
    pub enum AnnouncementKind {
        /// It tripped on its own evidence, or failed a probe round of its own (it opened below
        /// the quorum): record its vote (and open the fleet at quorum).
        Tripped = 0 => "tripped",
        /// The fleet's probe round (under the lease, after a fleet open) failed: the fleet
        /// opens again.
        Reopened = 1 => "reopened",
        /// The fleet's probe round succeeded: the fleet closes. (A round of its own that
        /// succeeds is announced to no one.)
        Closed = 2 => "closed",
    }
}

/// Something the adapter must publish, made by the transition that caused it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Announcement {
    /// What happened.
    pub kind: AnnouncementKind,
    /// For `tripped` and `reopened`: the opening's length, which the fleet's open carries.
    pub remaining: Nanos,
}

impl AnnouncementKind {
    /// Whether an announcement of this kind still describes a breaker in `state`: a
    /// `closed` while it is closed, the others while it is open. An adapter whose store
    /// failed to take an announcement publishes it later only then (an event applied in
    /// between may have made it untrue).
    pub fn holds_in(self, state: State) -> bool {
        match self {
            Self::Closed => state == State::Closed,
            Self::Tripped | Self::Reopened => state == State::Open,
        }
    }
}

/// A fleet member's state, for its adapter and its metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FleetStatus {
    /// In fleet mode at all.
    pub enabled: bool,
    /// The last fleet generation applied.
    pub generation: u64,
    /// The store is unreachable: deciding locally.
    pub degraded: bool,
    /// This member holds the probe lease.
    pub lease_held: bool,
    /// Half-open, in touch with the store, without the lease, and a caller was turned away
    /// for the want of it (`probing-elsewhere`): the adapter should try to take it. A member
    /// with no call to probe with never asks, so an idle member never holds the fleet's
    /// round up.
    pub wants_lease: bool,
    /// Fleet events ignored as stale since creation.
    pub stale_events: u64,
}

/// The fleet part of a breaker's state. Fixed size, like the rest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fleet {
    pub(crate) quorum: Option<u8>,
    pub(crate) generation: u64,
    pub(crate) degraded: bool,
    /// When the store was lost (this breaker's clock), while degraded.
    pub(crate) degraded_at: Nanos,
    /// The instant (this breaker's clock) the probe lease runs out.
    pub(crate) lease_until: Option<Nanos>,
    /// A fleet open was applied, and this member has not tripped on its own evidence
    /// since: a probe round here is the fleet's.
    fleet_opened: bool,
    /// Distinct members' trip votes: member id and the instant of the trip.
    votes: [(u64, Nanos); MAX_QUORUM as usize],
    voters: u8,
    pub(crate) pending: Option<Announcement>,
    pub(crate) stale_events: u64,
    /// A caller was turned away as `probing-elsewhere` since this member last took a lease
    /// or changed state: it has a call to probe with.
    pub(crate) asked: bool,
}

impl Fleet {
    pub(crate) fn new(quorum: Option<u8>) -> Self {
        Self {
            quorum,
            generation: 0,
            degraded: false,
            degraded_at: 0,
            lease_until: None,
            fleet_opened: false,
            votes: [(0, 0); MAX_QUORUM as usize],
            voters: 0,
            pending: None,
            stale_events: 0,
            asked: false,
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.quorum.is_some()
    }

    /// Whether this member may admit probes at `now`: not in fleet mode, holding a lease
    /// that has not run out, or degraded, and either in an opening of its own or cut off
    /// for `hold` (the probe timeout: any lease held elsewhere has run out by then).
    pub(crate) fn may_probe(&self, now: Nanos, hold: Nanos) -> bool {
        !self.enabled()
            || self.holds_lease(now)
            || (self.degraded && (!self.fleet_opened || since(now, self.degraded_at) >= hold))
    }

    /// Whether this member holds a probe lease that has not run out at `now`.
    pub(crate) fn holds_lease(&self, now: Nanos) -> bool {
        self.lease_until
            .is_some_and(|until| since(until, now) > 0 && since(until, now) < 1 << 63)
    }

    /// Takes `event`'s generation if it is newer than the last one applied; false (and
    /// counted) when it is stale. A new generation also ends the round of votes, and
    /// decides whose the next probe round is: the fleet's after a fleet open.
    pub(crate) fn fence(&mut self, event: &FleetEvent) -> bool {
        if event.generation <= self.generation {
            self.stale_events = self.stale_events.saturating_add(1);
            return false;
        }
        self.generation = event.generation;
        self.fleet_opened = event.kind == FleetEventKind::Open;
        self.voters = 0;
        self.lease_until = None;
        true
    }

    /// Records `member`'s trip at `at` (a member votes once: its newest trip counts) and
    /// says whether `quorum` distinct members have tripped within `cooldown` of `now`.
    pub(crate) fn vote(&mut self, member: u64, at: Nanos, now: Nanos, cooldown: Nanos) -> bool {
        let recent = |&(_, at): &(u64, Nanos)| since(now, at) < cooldown;
        let voters = usize::from(self.voters);
        // Keep only recent votes, then add or refresh this one.
        let mut kept = 0usize;
        for i in 0..voters.min(self.votes.len()) {
            let vote = self.votes.get(i).copied().unwrap_or_default();
            if recent(&vote) && vote.0 != member {
                if let Some(slot) = self.votes.get_mut(kept) {
                    *slot = vote;
                }
                kept = kept.saturating_add(1);
            }
        }
        if recent(&(member, at)) {
            if kept < self.votes.len() {
                if let Some(slot) = self.votes.get_mut(kept) {
                    *slot = (member, at);
                }
                kept = kept.saturating_add(1);
            } else if let Some(oldest) = self.votes.iter_mut().max_by_key(|(_, at)| since(now, *at))
            {
                *oldest = (member, at);
            }
        }
        self.voters = u8::try_from(kept).unwrap_or(MAX_QUORUM);
        self.quorum
            .is_some_and(|quorum| self.voters >= quorum.max(1))
    }

    /// The announcement a transition at `at` makes, if any: a trip on the breaker's own
    /// evidence, or the end of a probe round this member ran under a lease it still held
    /// (the lease ends too). A round after the fleet's open ends in the fleet's event; a
    /// round after this member's own opening (below the quorum: it tripped since the last
    /// fleet open) ends in a fresh vote, or in nothing. A round whose lease had run out
    /// speaks for nobody: another member may hold the lease by now (a member frozen past
    /// its lease, waking up), so it ends in no announcement.
    pub(crate) fn announce(&mut self, reason: Reason, remaining: Nanos, at: Nanos) {
        if !self.enabled() {
            return;
        }
        // Any change of state answers the callers who asked for a lease, one way or another.
        self.asked = false;
        let led = self.holds_lease(at);
        let kind = match reason {
            Reason::FailureThreshold
            | Reason::FailureRate
            | Reason::SlowCallRate
            | Reason::HungCalls => {
                // An opening on this member's own evidence: its rounds are its own until
                // a fleet open (its own, once the quorum is reached) is applied.
                self.fleet_opened = false;
                Some(AnnouncementKind::Tripped)
            }
            Reason::ProbeFault | Reason::ProbeTimeout | Reason::ProbeRateMissed if led => {
                Some(if self.fleet_opened {
                    AnnouncementKind::Reopened
                } else {
                    AnnouncementKind::Tripped
                })
            }
            Reason::ProbesSucceeded if led => self.fleet_opened.then_some(AnnouncementKind::Closed),
            _ => return,
        };
        self.lease_until = None;
        if let Some(kind) = kind {
            self.pending = Some(Announcement { kind, remaining });
        }
    }
}
