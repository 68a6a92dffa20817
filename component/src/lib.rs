//! # tripgate-component
//!
//! `tripgate-core` as a WASI 0.2 component exporting `tripgate:breaker/circuit-breaker`
//! (`wit/breaker.wit`). This crate only translates: WIT values in, core calls, WIT values
//! out. Every decision is the core's, so the component decides exactly as the native
//! breaker does.
//!
//! Build: `cargo build -p tripgate-component --target wasm32-wasip2 --release`, which
//! writes `target/wasm32-wasip2/release/tripgate_component.wasm`: a component with no
//! imports.
//!
//! The component never traps on input. Bad configurations, statuses, gRPC codes and
//! snapshot bytes come back as error values; a permit given to a breaker that did not
//! issue it is refused as `foreign-permit`. Breakers and permits are reference counted
//! (`Rc`), so a permit may outlive its breaker's handle: dropping it then releases it on the
//! breaker it came from, which is freed with its last permit.

#![no_std]
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

extern crate alloc;
// Host builds only (`cargo clippy --workspace`, `cargo test --workspace`): std supplies
// the panic handler and allocator there. The component itself is `no_std`.
#[cfg(not(target_family = "wasm"))]
extern crate std;

use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};

use tripgate_core as core_api;
use tripgate_core::{Breaker, Outcome, Permit, PermitTable, Verdict};

wit_bindgen::generate!({
    path: "../wit",
    world: "tripgate",
    // `from_repr` on every enum the core keeps a table for: a core code becomes the WIT
    // case at that position, with no second table here.
    additional_type_attributes: {
        "tripgate:breaker/circuit-breaker@0.3.0/state": [#[derive(strum::FromRepr)]],
        "tripgate:breaker/circuit-breaker@0.3.0/reason": [#[derive(strum::FromRepr)]],
        "tripgate:breaker/circuit-breaker@0.3.0/reject-reason": [#[derive(strum::FromRepr)]],
        "tripgate:breaker/circuit-breaker@0.3.0/class": [#[derive(strum::FromRepr)]],
        "tripgate:breaker/circuit-breaker@0.3.0/config-field": [#[derive(strum::FromRepr)]],
        "tripgate:breaker/circuit-breaker@0.3.0/snapshot-error-kind": [#[derive(strum::FromRepr)]],
        "tripgate:breaker/circuit-breaker@0.3.0/fleet-applied": [#[derive(strum::FromRepr)]],
        "tripgate:breaker/circuit-breaker@0.3.0/announcement-kind": [#[derive(strum::FromRepr)]],
        "tripgate:breaker/circuit-breaker@0.3.0/retry-stop": [#[derive(strum::FromRepr)]],
    },
});

use exports::tripgate::breaker::circuit_breaker as wit;

mod convert;
mod guest_runtime;
mod keys;
mod places;
mod retries;
use convert::{
    by_reason, case, config_error, core_config, core_outcome, rejection, snapshot_error, state,
    transition, transitions,
};
use keys::KEYS;
use places::USED;

struct Component;
export!(Component);

impl wit::Guest for Component {
    type Breaker = BreakerResource;
    type Permit = PermitResource;
    type RetryBudget = retries::RetryBudgetResource;

    fn acquire_keyed(key: u32, now: u64) -> wit::KeyedAdmission {
        match KEYS.get(key) {
            Some(held) => held.acquire_keyed(key, now),
            None => wit::KeyedAdmission::UnknownKey,
        }
    }

    fn record_keyed(
        key: u32,
        ticket: wit::Ticket,
        outcome: wit::Outcome,
        now: u64,
    ) -> Result<wit::KeyedRecord, wit::RecordError> {
        let held = KEYS.get(key).ok_or(wit::RecordError::UnknownKey)?;
        held.record_keyed(key, ticket, (core_outcome(outcome)?, 0), now)
    }

    fn record_keyed_after(
        key: u32,
        ticket: wit::Ticket,
        outcome: wit::Outcome,
        retry_after: u64,
        now: u64,
    ) -> Result<wit::KeyedRecord, wit::RecordError> {
        let held = KEYS.get(key).ok_or(wit::RecordError::UnknownKey)?;
        held.record_keyed(key, ticket, (core_outcome(outcome)?, retry_after), now)
    }
}

/// One breaker, shared by its resource handle and its permits, with the transitions of
/// its latest call that caused any (what `last-transitions` returns).
pub(crate) struct Held {
    core: RefCell<Breaker>,
    last: Cell<core_api::Transitions>,
    /// The permits `acquire-keyed` handed out as tickets, made on first use.
    handles: RefCell<Option<PermitTable>>,
}

impl Held {
    fn new(breaker: Breaker) -> Self {
        Held {
            handles: RefCell::new(None),
            core: RefCell::new(breaker),
            last: Cell::new(core_api::Transitions::default()),
        }
    }

    /// The breaker's handle and key.
    fn keep(self) -> (wit::Breaker, u32) {
        let held = Rc::new(self);
        let key = KEYS.insert(Rc::clone(&held));
        (wit::Breaker::new(BreakerResource(held, key)), key)
    }

    /// Keeps `transitions` for `last-transitions` when there are any; returns their count.
    fn note(&self, transitions: core_api::Transitions) -> u8 {
        if !transitions.is_empty() {
            self.last.set(transitions);
        }
        u8::try_from(transitions.len()).unwrap_or(u8::MAX)
    }
}

pub(crate) type Shared = Rc<Held>;

/// The `breaker` resource: its breaker and its key (`keys`).
struct BreakerResource(Shared, u32);

impl Drop for Held {
    fn drop(&mut self) {
        // The breaker's tickets die with it: their places go back to the instance.
        if let Some(table) = self.handles.get_mut() {
            USED.release(table);
        }
    }
}

impl Drop for BreakerResource {
    fn drop(&mut self) {
        // The breaker itself lives on while permits hold it; its key ends with its handle.
        KEYS.remove(self.1);
    }
}

/// The `permit` resource: the core's permit and the breaker that issued it.
struct PermitResource {
    owner: Shared,
    /// `None` once recorded.
    permit: Cell<Option<Permit>>,
    probe: bool,
    shadow: bool,
    epoch: u64,
    started: u64,
}

impl PermitResource {
    /// Releases the permit as `cancelled` on the breaker that issued it, at `now`, or at
    /// that breaker's latest instant when there is none. (Not at 0: above 2⁶³, 0 is an
    /// instant ahead of the latest, and the breaker's clock would jump there.)
    fn cancel(&self, now: Option<u64>) {
        if let Some(permit) = self.permit.take() {
            if let Ok(mut breaker) = self.owner.core.try_borrow_mut() {
                let now = now.unwrap_or_else(|| breaker.latest());
                let recorded = breaker.record(permit, Outcome::Cancelled, now);
                self.owner.note(recorded.transitions);
            }
        }
    }
}

impl Drop for PermitResource {
    fn drop(&mut self) {
        // A destructor has no `now`: the breaker's latest instant stands in.
        self.cancel(None);
    }
}

impl wit::GuestPermit for PermitResource {
    fn is_probe(&self) -> bool {
        self.probe
    }

    fn is_shadow(&self) -> bool {
        self.shadow
    }

    fn epoch(&self) -> u64 {
        self.epoch
    }

    fn started(&self) -> u64 {
        self.started
    }
}

/// A core decision with the count of the transitions it caused (kept for
/// `last-transitions`).
type Counted<T> = (T, u8);

impl Held {
    #[inline(never)]
    fn acquire_core(&self, now: u64) -> Counted<Result<Permit, core_api::Rejection>> {
        let admission = self.core.borrow_mut().acquire(now);
        let count = self.note(admission.transitions);
        (admission.decision, count)
    }

    fn permit_resource(self: &Rc<Self>, permit: Permit) -> wit::Permit {
        wit::Permit::new(PermitResource {
            owner: Rc::clone(self),
            probe: permit.is_probe(),
            shadow: permit.is_shadow(),
            epoch: permit.epoch(),
            started: permit.started(),
            permit: Cell::new(Some(permit)),
        })
    }

    /// One copy of the core's `record` for every permit kind and result shape.
    #[inline(never)]
    /// Records `outcome` with the stay-away it asked for (0: none).
    fn record_core(
        &self,
        permit: Option<Permit>,
        (outcome, retry_after): (Outcome, u64),
        now: u64,
    ) -> Counted<Verdict> {
        let mut core = self.core.borrow_mut();
        let recorded = match permit {
            Some(permit) if retry_after > 0 => {
                core.record_with_retry_after(permit, outcome, retry_after, now)
            }
            Some(permit) => core.record(permit, outcome, now),
            None => core.record_stale(outcome, now),
        };
        let verdict = Verdict {
            class: recorded.class,
            slow: recorded.slow,
            stale: recorded.stale,
        };
        (verdict, self.note(recorded.transitions))
    }

    /// The core permit a permit resource holds, checked against this breaker, with its
    /// outcome. A foreign permit is dropped (released on its own breaker); an invalid
    /// outcome releases the permit as `cancelled`.
    fn take(
        self: &Rc<Self>,
        permit: wit::Permit,
        outcome: wit::Outcome,
        now: u64,
    ) -> Result<(Permit, Outcome), wit::RecordError> {
        let held: PermitResource = permit.into_inner();
        if !Rc::ptr_eq(&held.owner, self) {
            // Dropping `held` releases it on its own breaker, at that breaker's latest
            // instant (this `now` is another breaker's).
            return Err(wit::RecordError::ForeignPermit);
        }
        let outcome = match core_outcome(outcome) {
            Ok(outcome) => outcome,
            Err(error) => {
                held.cancel(Some(now));
                return Err(error);
            }
        };
        match held.permit.take() {
            Some(permit) => Ok((permit, outcome)),
            // Never: a permit resource is consumed by the call that records it.
            None => Err(wit::RecordError::ForeignPermit),
        }
    }

    /// The listing form of a result: its transitions from `last`, when it counted any.
    fn listed(&self, count: u8) -> Vec<wit::Transition> {
        if count == 0 {
            Vec::new()
        } else {
            transitions(&self.last.get())
        }
    }

    fn recorded(&self, (judged, count): Counted<Verdict>) -> wit::Recorded {
        wit::Recorded {
            class: case(wit::Class::from_repr, judged.class.code()),
            slow: judged.slow,
            stale: judged.stale,
            transitions: self.listed(count),
        }
    }

    /// One copy of the manual operations' glue.
    #[inline(never)]
    fn manual(
        &self,
        op: fn(&mut Breaker, u64) -> core_api::Transitions,
        now: u64,
    ) -> Vec<wit::Transition> {
        let count = self.note(op(&mut self.core.borrow_mut(), now));
        self.listed(count)
    }
}

/// A ticket: the breaker's key above its permit table's handle, so that a ticket given to
/// another breaker of the instance (live, or made after this one was dropped: keys are
/// never reused) names no permit there.
fn ticket(key: u32, handle: u32) -> wit::Ticket {
    u64::from(key) << 32 | u64::from(handle)
}

impl Held {
    /// Stores a permit in the handle table (made on first use); the permit back when the
    /// table is full and the instance's budget of places lets it grow no more.
    fn store(&self, permit: Permit, now: u64) -> Result<u32, Permit> {
        let mut handles = self.handles.borrow_mut();
        let core = self.core.borrow();
        let table = handles.get_or_insert_with(|| PermitTable::new(0, core.config().probe_timeout));
        USED.change(table, |table| {
            table.insert(
                permit,
                |p| core.holds(p, now),
                || (core.metrics(now).epoch, now),
            )
        })
    }

    fn acquire_keyed(&self, key: u32, now: u64) -> wit::KeyedAdmission {
        let (decision, transitions) = self.acquire_core(now);
        let rejection = match decision.map(|permit| {
            let admitted = (permit.is_probe(), permit.is_shadow(), permit.epoch());
            (admitted, self.store(permit, now))
        }) {
            Ok(((probe, shadow, epoch), Ok(handle))) => {
                let flag = |on: bool, flag| {
                    if on {
                        flag
                    } else {
                        wit::AdmissionNotes::empty()
                    }
                };
                // `|`, not `|=`: wit-bindgen's flags have no `BitOrAssign` without its
                // `bitflags` feature.
                let notes = flag(probe, wit::AdmissionNotes::PROBE)
                    | flag(transitions > 0, wit::AdmissionNotes::TRANSITIONED)
                    | flag(shadow, wit::AdmissionNotes::SHADOW);
                return wit::KeyedAdmission::Admitted(wit::Ticketed {
                    ticket: ticket(key, handle),
                    notes,
                    epoch,
                });
            }
            Err(rejection) => self::rejection(rejection),
            Ok((_, Err(permit))) => {
                // No place for another ticket: hand the permit straight back, uncounted.
                let (_, more) = self.record_core(Some(permit), (Outcome::Ignored, 0), now);
                return wit::KeyedAdmission::Rejected(wit::KeyedRejection {
                    rejection: wit::Rejection {
                        state: state(self.core.borrow().state(now)),
                        reason: wit::RejectReason::Saturated,
                        retry_after: 0,
                    },
                    transitioned: transitions.saturating_add(more) > 0,
                });
            }
        };
        wit::KeyedAdmission::Rejected(wit::KeyedRejection {
            rejection,
            transitioned: transitions > 0,
        })
    }

    fn record_keyed(
        &self,
        key: u32,
        ticket: wit::Ticket,
        outcome: (Outcome, u64),
        now: u64,
    ) -> Result<wit::KeyedRecord, wit::RecordError> {
        let permit = (ticket >> 32 == u64::from(key))
            .then(|| u32::try_from(ticket & u64::from(u32::MAX)).ok())
            .flatten()
            .and_then(|handle| {
                let mut handles = self.handles.borrow_mut();
                USED.change(handles.as_mut()?, |table| table.take(handle))
            });
        // A ticket that names no permit out here records a stale outcome.
        let (judged, transitions) = self.record_core(permit, outcome, now);
        // A stale ticket's start may be gone with its table entry: never slow.
        let judged_notes = if judged.stale {
            wit::OutcomeNotes::STALE
        } else if judged.slow {
            wit::OutcomeNotes::SLOW
        } else {
            wit::OutcomeNotes::empty()
        };
        let notes = if transitions > 0 {
            judged_notes | wit::OutcomeNotes::TRANSITIONED
        } else {
            judged_notes
        };
        Ok(wit::KeyedRecord {
            class: case(wit::Class::from_repr, judged.class.code()),
            notes,
        })
    }
}

impl wit::GuestBreaker for BreakerResource {
    fn create(config: wit::Config, now: u64) -> Result<wit::Breaker, wit::ConfigError> {
        let breaker = Breaker::new(core_config(config)?, now).map_err(config_error)?;
        Ok(Held::new(breaker).keep().0)
    }

    fn restore(
        config: wit::Config,
        snapshot: Option<wit::Snapshot>,
        now: u64,
    ) -> Result<wit::RestoredBreaker, wit::ConfigError> {
        let mut breaker = Breaker::new(core_config(config)?, now).map_err(config_error)?;
        // A fresh breaker takes a state exactly, or stays as it is.
        let imported = match snapshot {
            Some(snapshot) => breaker
                .import(&snapshot.bytes, snapshot.elapsed, now)
                .map_err(snapshot_error),
            None => Ok(()),
        };
        let (breaker, key) = Held::new(breaker).keep();
        Ok(wit::RestoredBreaker {
            breaker,
            key,
            imported,
        })
    }

    fn key(&self) -> u32 {
        self.1
    }

    fn acquire(&self, now: u64) -> wit::Admission {
        let (decision, count) = self.0.acquire_core(now);
        wit::Admission {
            decision: decision
                .map(|permit| self.0.permit_resource(permit))
                .map_err(rejection),
            transitions: self.0.listed(count),
        }
    }

    fn record_outcome(
        &self,
        permit: wit::Permit,
        outcome: wit::Outcome,
        now: u64,
    ) -> Result<wit::Recorded, wit::RecordError> {
        let (permit, outcome) = self.0.take(permit, outcome, now)?;
        Ok(self
            .0
            .recorded(self.0.record_core(Some(permit), (outcome, 0), now)))
    }

    fn record_outcome_after(
        &self,
        permit: wit::Permit,
        outcome: wit::Outcome,
        retry_after: u64,
        now: u64,
    ) -> Result<wit::Recorded, wit::RecordError> {
        let (permit, outcome) = self.0.take(permit, outcome, now)?;
        let counted = self
            .0
            .record_core(Some(permit), (outcome, retry_after), now);
        Ok(self.0.recorded(counted))
    }

    fn fleet_apply(&self, event: wit::FleetEvent, now: u64) -> wit::FleetApplying {
        let kind = match event.kind {
            wit::FleetEventKind::Open => core_api::FleetEventKind::Open,
            wit::FleetEventKind::Close => core_api::FleetEventKind::Close,
        };
        let event = core_api::FleetEvent {
            generation: event.generation,
            kind,
            remaining: event.remaining,
        };
        let (applied, caused) = self.0.core.borrow_mut().fleet_apply(event, now);
        let count = self.0.note(caused);
        wit::FleetApplying {
            applied: case(wit::FleetApplied::from_repr, applied.code()),
            transitions: self.0.listed(count),
        }
    }

    fn fleet_votes(&self, votes: Vec<wit::FleetVote>, now: u64) -> bool {
        let votes: Vec<(u64, u64)> = votes.iter().map(|v| (v.member, v.age)).collect();
        self.0.core.borrow_mut().fleet_votes(&votes, now)
    }

    fn fleet_store(&self, reachable: bool, lease: Option<u64>, now: u64) {
        let mut core = self.0.core.borrow_mut();
        core.fleet_degraded(!reachable, now);
        core.fleet_lease(lease, now);
    }

    fn fleet_take_announcement(&self) -> Option<wit::Announcement> {
        let taken = self.0.core.borrow_mut().fleet_take_announcement()?;
        Some(wit::Announcement {
            kind: case(wit::AnnouncementKind::from_repr, taken.kind.code()),
            remaining: taken.remaining,
        })
    }

    fn fleet_status(&self, now: u64) -> wit::FleetStatus {
        let s = self.0.core.borrow().fleet_status(now);
        wit::FleetStatus {
            enabled: s.enabled,
            generation: s.generation,
            degraded: s.degraded,
            lease_held: s.lease_held,
            wants_lease: s.wants_lease,
            stale_events: s.stale_events,
        }
    }

    fn last_transitions(&self) -> Vec<wit::Transition> {
        transitions(&self.0.last.get())
    }

    fn state(&self, now: u64) -> wit::State {
        state(self.0.core.borrow().state(now))
    }

    fn metrics(&self, now: u64) -> wit::Metrics {
        let m = self.0.core.borrow().metrics(now);
        let rejected = |reason| m.rejected(reason);
        wit::Metrics {
            state: state(m.state),
            epoch: m.epoch,
            window: wit::Tally {
                calls: m.window.calls,
                faults: m.window.faults,
                slow: m.window.slow,
            },
            in_flight: m.in_flight,
            hung: m.hung,
            probes_out: m.probes_out,
            admitted_total: m.admitted_total,
            rejected_open: rejected(core_api::RejectReason::Open),
            rejected_probing: rejected(core_api::RejectReason::Probing),
            rejected_isolated: rejected(core_api::RejectReason::Isolated),
            rejected_saturated: rejected(core_api::RejectReason::Saturated),
            rejected_probing_elsewhere: rejected(core_api::RejectReason::ProbingElsewhere),
            shadow_rejected: by_reason(|reason| m.shadow_rejected(reason)),
            successes_total: m.successes_total,
            faults_total: m.faults_total,
            stale_total: m.stale_total,
            transitions_total: m.transitions_total,
            transitions_by_route: m.transitions_by_route.to_vec(),
            time_in_state: m.time_in_state,
            cooldown_remaining: m.cooldown_remaining,
            last_transition: m.last_transition.as_ref().map(transition),
        }
    }

    fn isolate(&self, now: u64) -> Vec<wit::Transition> {
        self.0.manual(Breaker::isolate, now)
    }

    fn release(&self, now: u64) -> Vec<wit::Transition> {
        self.0.manual(Breaker::release, now)
    }

    fn disable(&self, now: u64) -> Vec<wit::Transition> {
        self.0.manual(Breaker::disable, now)
    }

    fn reset(&self, now: u64) -> Vec<wit::Transition> {
        self.0.manual(Breaker::reset, now)
    }

    fn reconfigure(
        &self,
        config: wit::Config,
        now: u64,
    ) -> Result<wit::Reconfigured, wit::ConfigError> {
        let config = core_config(config)?;
        let done = self
            .0
            .core
            .borrow_mut()
            .reconfigure(config, now)
            .map_err(config_error)?;
        let count = self.0.note(done.transitions);
        Ok(wit::Reconfigured {
            window_kept: done.window_kept,
            transitions: self.0.listed(count),
        })
    }

    fn export_state(&self, now: u64) -> Result<Vec<u8>, wit::SnapshotError> {
        let mut buffer = [0u8; core_api::MAX_EXPORT_LEN];
        let len = self
            .0
            .core
            .borrow()
            .export(now, &mut buffer)
            .map_err(snapshot_error)?;
        Ok(buffer.get(..len).unwrap_or_default().to_vec())
    }

    fn import_state(
        &self,
        bytes: Vec<u8>,
        elapsed: u64,
        now: u64,
    ) -> Result<(), wit::SnapshotError> {
        self.0
            .core
            .borrow_mut()
            .import(&bytes, elapsed, now)
            .map_err(snapshot_error)
    }
}
