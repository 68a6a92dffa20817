//! Fleet mode on the breaker: remote events, votes, the probe lease and degraded mode
//! (the rules themselves: `crate::fleet`).

use super::Breaker;
use crate::fleet::{Announcement, FleetApplied, FleetEvent, FleetEventKind, FleetStatus};
use crate::state::State;
use crate::time::{since, Nanos};
use crate::transition::{Reason, Transitions};

impl Breaker {
    /// Applies an event from the fleet at `now` (see the module docs): stale below the
    /// last generation applied, held by operator states, else the fleet's open (for the
    /// event's remaining cooldown, at most this breaker's longest opening: a stored or
    /// replayed event can ask for no more) or close (with an empty window).
    pub fn fleet_apply(&mut self, event: FleetEvent, now: Nanos) -> (FleetApplied, Transitions) {
        let now = self.clock.observe(now);
        let event = FleetEvent {
            remaining: event.remaining.min(self.config.longest_opening()),
            ..event
        };
        let mut transitions = self.settle(now);
        if !self.fleet.enabled() {
            return (FleetApplied::NotInFleet, transitions);
        }
        if !self.fleet.fence(&event) {
            return (FleetApplied::Stale, transitions);
        }
        let from = self.phase.state;
        match (event.kind, from) {
            (_, State::Isolated | State::Disabled) => return (FleetApplied::Held, transitions),
            (FleetEventKind::Open, State::Open) => {
                // Already open: the fleet's cooldown is the one that counts, but never
                // shorter than the upstream asked this member to stay away.
                let fleets = since(now, self.phase.entered_at).saturating_add(event.remaining);
                self.phase.open_for = fleets.max(self.phase.asked);
            }
            (FleetEventKind::Open, _) if event.remaining > 0 => {
                let transition = self
                    .phase
                    .open_exactly(now, event.remaining, Reason::FleetOpen);
                transitions.push(self.entered(from, transition));
            }
            (FleetEventKind::Close, State::Open | State::HalfOpen) => {
                let transition = self.phase.close(now, Reason::FleetClose, &self.config);
                transitions.push(self.entered(from, transition));
            }
            _ => {}
        }
        (FleetApplied::Applied, transitions)
    }

    /// The fleet's trip votes, as the store holds them (member id and age at `now`),
    /// with this member's own among them; whether they reach `fleet-quorum` within one
    /// cooldown, so that the fleet opens. Votes from before the last fleet event do not
    /// count (the adapter clears them in the store with each event).
    pub fn fleet_votes(&mut self, votes: &[(u64, Nanos)], now: Nanos) -> bool {
        let now = self.clock.observe(now);
        let cooldown = self.config.cooldown;
        let mut reached = false;
        for &(member, age) in votes {
            reached = self
                .fleet
                .vote(member, now.wrapping_sub(age), now, cooldown);
        }
        reached
    }

    /// This member took the fleet's probe lease for `held_for` from `now` (`Some`), or
    /// lost or gave it up (`None`). In half-open, only a lease holder admits probes.
    pub fn fleet_lease(&mut self, held_for: Option<Nanos>, now: Nanos) {
        let now = self.clock.observe(now);
        self.fleet.lease_until = held_for.map(|d| now.saturating_add(d.max(1)));
        if held_for.is_some() {
            self.fleet.asked = false;
        }
    }

    /// The store is unreachable (`true`) or back (`false`) at `now`. Degraded, the breaker
    /// decides as one of its own: it probes without a lease, after one probe timeout if
    /// its opening is the fleet's. Back, the adapter reconciles from the store before
    /// anything else.
    pub fn fleet_degraded(&mut self, degraded: bool, now: Nanos) {
        let now = self.clock.observe(now);
        if degraded && !self.fleet.degraded {
            self.fleet.degraded_at = now;
        }
        self.fleet.degraded = degraded;
    }

    /// What the last transition that needs telling asks the adapter to publish; taken
    /// once. (A newer announcement replaces one not yet taken: the newest is the fleet's
    /// news.)
    pub fn fleet_take_announcement(&mut self) -> Option<Announcement> {
        self.fleet.pending.take()
    }

    /// The fleet part of the breaker at `now`.
    pub fn fleet_status(&self, now: Nanos) -> FleetStatus {
        let now = self.clock.peek(now);
        self.fleet_status_in(now, self.state(now))
    }

    /// [`Self::fleet_status`] at an observed `now` whose effective state is known
    /// (`Breaker::reading` has it from the snapshot, and so projects once, not twice).
    pub(crate) fn fleet_status_in(&self, now: Nanos, state: State) -> FleetStatus {
        let fleet = &self.fleet;
        let lease_held = fleet.enabled()
            && fleet.lease_until.is_some()
            && fleet.may_probe(now, self.config.probe_timeout);
        FleetStatus {
            enabled: fleet.enabled(),
            generation: fleet.generation,
            degraded: fleet.degraded,
            lease_held,
            wants_lease: fleet.enabled()
                && !fleet.degraded
                && !lease_held
                && fleet.asked
                && state == State::HalfOpen,
            stale_events: fleet.stale_events,
        }
    }
}
