//! Fleet mode for JS: a thin pass-through to the core's `fleet_*` rules (FLEET.md; the
//! store's wire format is `wit/fleet.md`), the breaker's side that the public API exposes
//! for adapters to other stores. The Redis adapter (`js/src/fleet/`) runs the core's member
//! protocol instead ([`fleet_protocol`](crate::fleet_protocol)), which calls the same rules
//! from inside the module; every decision — fencing, the lease gate, the quorum, degraded
//! mode — is the core's.
//!
//! Codes are the core's tables ([`tables()`](crate::tables): `fleetEventKinds`,
//! `fleetApplied`, `announcementKinds`). Generations cross as `f64`: the JS side checks
//! they are safe integers, so the conversion is exact. Member ids are 64-bit, so votes
//! cross as a `BigUint64Array` beside their ages.

use tripgate_core::{FleetEvent, FleetEventKind};
use wasm_bindgen::prelude::*;

use crate::breaker::Breaker;
use crate::time::{duration, ms};

/// Numbers [`Breaker::fleet_status`] writes: enabled, generation, degraded, lease-held,
/// wants-lease, stale-events.
pub const FLEET_STATUS_LEN: usize = 6;

/// `fleet_apply`'s result for a kind code no event has (nothing changed).
pub const BAD_EVENT: i32 = -1;

#[wasm_bindgen]
impl Breaker {
    /// Applies a fleet event: `applied-code | transitions << 4`, or [`BAD_EVENT`] for an
    /// unknown kind. Read the transitions with `transitions`.
    pub fn fleet_apply(
        &mut self,
        generation: f64,
        kind: u8,
        remaining_ms: f64,
        now_ms: f64,
    ) -> i32 {
        let Some(kind) = FleetEventKind::from_code(kind) else {
            return BAD_EVENT;
        };
        let now = self.now(now_ms);
        let event = FleetEvent {
            // Whole and below 2^53 (checked in JS); `as` saturates anything else.
            generation: generation as u64,
            kind,
            remaining: duration(remaining_ms),
        };
        let (applied, transitions) = self.core.fleet_apply(event, now);
        let moved = transitions.len() as i32;
        self.note(transitions);
        i32::from(applied.code()) | moved << 4
    }

    /// The store's trip votes, `members[i]` aged `ages_ms[i]` (the shorter list bounds
    /// them); whether they reach the quorum.
    pub fn fleet_votes(&mut self, members: &[u64], ages_ms: &[f64], now_ms: f64) -> bool {
        let now = self.now(now_ms);
        // One vote at a time: the core's answer after the last is the answer for all, as
        // when it is handed the list, and nothing is allocated.
        let mut reached = false;
        for (&member, &age) in members.iter().zip(ages_ms) {
            reached = self.core.fleet_votes(&[(member, duration(age))], now);
        }
        reached
    }

    /// What the store says of this member: reachable or not, and the probe lease held
    /// for `lease_ms` from now (`NaN`: not held).
    pub fn fleet_store(&mut self, reachable: bool, lease_ms: f64, now_ms: f64) {
        let now = self.now(now_ms);
        self.core.fleet_degraded(!reachable, now);
        let lease = (!lease_ms.is_nan()).then(|| duration(lease_ms));
        self.core.fleet_lease(lease, now);
    }

    /// Takes the pending announcement: its kind code, with its remaining ms in `out[0]`;
    /// -1 when there is none.
    pub fn fleet_take_announcement(&mut self, out: &mut [f64]) -> i32 {
        let Some(announcement) = self.core.fleet_take_announcement() else {
            return -1;
        };
        if let Some(slot) = out.first_mut() {
            *slot = ms(announcement.remaining);
        }
        i32::from(announcement.kind.code())
    }

    /// Fills `out` ([`FLEET_STATUS_LEN`] numbers) with the fleet status at `now_ms`.
    pub fn fleet_status(&self, now_ms: f64, out: &mut [f64]) {
        let s = self.core.fleet_status(self.now(now_ms));
        let values = [
            f64::from(u8::from(s.enabled)),
            s.generation as f64,
            f64::from(u8::from(s.degraded)),
            f64::from(u8::from(s.lease_held)),
            f64::from(u8::from(s.wants_lease)),
            s.stale_events as f64,
        ];
        for (o, v) in out.iter_mut().zip(values) {
            *o = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tripgate_core::{AnnouncementKind, Field, FleetApplied, RejectReason};

    const FAULT: f64 = 503.0;

    fn member(quorum: f64) -> Breaker {
        let mut values = vec![f64::NAN; Field::ALL.len()];
        values[usize::from(Field::FleetQuorum.code())] = quorum;
        values[usize::from(Field::Cooldown.code())] = 5_000.0;
        Breaker::new(&values, None, None, 0.0).unwrap()
    }

    #[test]
    fn an_open_is_fenced_and_the_lease_gates_probes() {
        let mut b = member(1.0);
        let open = i32::from(FleetEventKind::Open.code());
        let r = b.fleet_apply(3.0, open as u8, 4_000.0, 1_000.0);
        assert_eq!(r & 15, i32::from(FleetApplied::Applied.code()));
        assert_eq!(r >> 4, 1, "closed to open");
        let r = b.fleet_apply(3.0, open as u8, 9_000.0, 1_000.0);
        assert_eq!(r, i32::from(FleetApplied::Stale.code()));
        assert_eq!(b.fleet_apply(4.0, 9, 0.0, 1_000.0), BAD_EVENT);
        let rejected = b.acquire(5_000.0);
        let elsewhere = -1 - i32::from(RejectReason::ProbingElsewhere.code());
        assert_eq!(
            rejected,
            elsewhere - crate::TRANSITIONED,
            "with open > half-open"
        );
        assert_eq!(
            b.rejected_reason(),
            i32::from(RejectReason::ProbingElsewhere.code())
        );
        let mut status = [0.0; FLEET_STATUS_LEN];
        b.fleet_status(5_000.0, &mut status);
        assert_eq!(status, [1.0, 3.0, 0.0, 0.0, 1.0, 1.0]);
        b.fleet_store(true, 15_000.0, 5_000.0);
        let probe = b.acquire(5_000.0);
        assert!(probe >= 0 && probe & 1 == 1, "a probe: {probe}");
        b.fleet_status(5_000.0, &mut status);
        assert_eq!(status[3], 1.0, "lease held");
        b.record(f64::from(probe), FAULT, 5_100.0);
        let mut remaining = [0.0];
        let kind = b.fleet_take_announcement(&mut remaining);
        assert_eq!(kind, i32::from(AnnouncementKind::Reopened.code()));
        assert_eq!(remaining, [5_000.0]);
        assert_eq!(b.fleet_take_announcement(&mut remaining), -1);
    }

    #[test]
    fn votes_count_distinct_members_and_64_bit_ids_survive() {
        let mut b = member(2.0);
        let big = u64::MAX - 1;
        assert!(!b.fleet_votes(&[big, big], &[0.0, 10.0], 100.0));
        assert!(b.fleet_votes(&[big, big - 1], &[0.0, 10.0], 100.0));
        assert!(!b.fleet_votes(&[], &[], 100.0));
        assert!(
            !b.fleet_votes(&[7], &[6_000.0], 20_000.0),
            "older than a cooldown"
        );
    }

    #[test]
    fn degraded_probes_locally_and_not_in_fleet_is_said() {
        let mut b = member(1.0);
        for _ in 0..5 {
            let p = b.acquire(0.0);
            b.record(f64::from(p), FAULT, 0.0);
        }
        let mut remaining = [0.0];
        assert_eq!(
            b.fleet_take_announcement(&mut remaining),
            i32::from(AnnouncementKind::Tripped.code())
        );
        b.fleet_store(false, f64::NAN, 100.0);
        let p = b.acquire(5_000.0);
        assert!(p >= crate::TRANSITIONED && p & 1 == 1, "a local probe: {p}");
        let mut lone = Breaker::new(&[f64::NAN; Field::ALL.len()], None, None, 0.0).unwrap();
        assert_eq!(
            lone.fleet_apply(1.0, 0, 5_000.0, 0.0),
            i32::from(FleetApplied::NotInFleet.code())
        );
    }
}
