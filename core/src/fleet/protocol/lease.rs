//! The probe lease as one member holds it: when to renew it and when to give it back.
//!
//! A holder runs the fleet's whole probe round: it keeps the lease while its probes keep
//! coming, so the round's successes are counted in one breaker, and the fleet recovers
//! after M probes, not after M probes of every member the lease passes through. It gives
//! the lease back once the round is over (the breaker dropped its lease: it closed or
//! opened again), or once no probe is out and none came for a third of the lease: a holder
//! whose callers went quiet must not keep the fleet from recovering.

use super::View;
use crate::time::Nanos;

/// The lease, as this member believes the store holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lease {
    Free,
    Held(Held),
}

/// A lease this member holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Held {
    /// When the store's lease runs out, at the latest (this member's clock).
    pub(super) until: Nanos,
    renew_at: Nanos,
    /// The breaker's admitted count when last looked at: a probe came once it grew.
    admitted: u64,
    /// With no probe out, the lease goes back at this instant.
    idle_at: Nanos,
}

/// What a holder does next with its lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    Keep,
    Renew,
    /// Give it back; `over` when the breaker already dropped its side of it.
    Release {
        over: bool,
    },
}

impl Held {
    /// A lease of `length` the store granted to a request `sent` at that instant, with the
    /// breaker's `admitted` count at `now`.
    pub(super) fn taken(sent: Nanos, now: Nanos, length: Nanos, admitted: u64) -> Self {
        Self {
            // The store's lease began when it answered or before: ours must not outlast it.
            until: sent.saturating_add(length),
            renew_at: now.saturating_add(length / 3),
            admitted,
            idle_at: now.saturating_add(length / 3),
        }
    }

    /// The same lease, renewed by a request `sent` at that instant.
    pub(super) fn renewed(self, sent: Nanos, now: Nanos, length: Nanos) -> Self {
        Self {
            until: sent.saturating_add(length),
            renew_at: now.saturating_add(length / 3),
            ..self
        }
    }

    /// When the holder must look again: to renew, or to give an idle lease back.
    pub(super) fn deadline(&self) -> Nanos {
        self.renew_at.min(self.idle_at)
    }

    /// Looks at the breaker at `now` and says what to do with a lease of `length`.
    pub(super) fn step(&mut self, view: &View, now: Nanos, length: Nanos) -> Step {
        if !view.status.lease_held {
            return Step::Release { over: true };
        }
        // A probe came, or one is still out: the round goes on, and the idle third of
        // the lease counts from here.
        if view.admitted > self.admitted || view.probes_out > 0 {
            self.admitted = view.admitted;
            self.idle_at = self.idle_at.max(now.saturating_add(length / 3));
        }
        if view.probes_out == 0 && now >= self.idle_at {
            Step::Release { over: false }
        } else if now >= self.renew_at {
            Step::Renew
        } else {
            Step::Keep
        }
    }
}
