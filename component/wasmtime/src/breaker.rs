//! The breaker: the library's handle on one breaker of an instance, the keyed hot path,
//! and its permits.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Result};
use tripgate_core::Nanos;
use tripgate_host::ListenerSlot;
use wasmtime::component::ResourceAny;
use wasmtime::Store;

use crate::convert::{
    core_case, core_fleet_status, core_metrics, core_rejection, core_state, core_transition,
};
use crate::engine::HostState;
use crate::guest::{Guest, InstanceShared};
use crate::{
    config, wit, Announcement, AnnouncementKind, Class, Config, ConfigError, FleetApplied,
    FleetEvent, FleetEventKind, FleetStatus, Metrics, Outcome, Rejection, State, Transition,
};

/// What [`Breaker::reconfigure`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reconfigured {
    /// The window kept its outcomes (its shape did not change), or started empty.
    pub window_kept: bool,
    /// Transitions time had made due, applied under the old configuration first.
    pub transitions: Vec<Transition>,
}

/// What `acquire-keyed` decided: the ticket with the instance's era, or why not.
type Decided = Result<(wit::Ticketed, u64), Rejection>;

pub(crate) struct BreakerShared {
    pub(crate) instance: Arc<InstanceShared>,
    /// Where the breaker sits in its instance (its handle and key there).
    pub(crate) seat: usize,
    pub(crate) listener: ListenerSlot,
}

impl BreakerShared {
    #[inline]
    pub(crate) fn now(&self) -> Nanos {
        self.instance.now()
    }

    /// Tells the listener, if any, about `transitions` (after the guest's lock is released,
    /// so the listener may call the breaker).
    fn notify(&self, transitions: &[Transition]) {
        self.listener.tell(transitions);
    }

    /// Runs `f` on the locked guest with this breaker's resource, at `now`; a call that
    /// caused transitions (`transitioned` says which results did) leaves a snapshot. A
    /// guest that traps is replaced before the error comes back.
    fn with<T>(
        &self,
        f: impl FnOnce(
            &wit::GuestBreaker<'_>,
            &mut Store<HostState>,
            ResourceAny,
            Nanos,
        ) -> wasmtime::Result<T>,
        transitioned: impl FnOnce(&T) -> bool,
    ) -> Result<T> {
        let now = self.now();
        let mut guest = self.instance.lock();
        let resource = guest.seat(self.seat)?.resource;
        let answer = {
            let (api, store) = guest.breakers();
            f(&api, store, resource, now)
        };
        let kept = answer.and_then(|answer| {
            guest.keep(self.seat, now, transitioned(&answer))?;
            Ok(answer)
        });
        kept.map_err(|trap| self.instance.trapped(&mut guest, trap))
    }

    /// `reconfigure` in the guest, and the seat's config with it (one hold of the lock,
    /// so a replacement instance never makes the breaker with the config it left).
    fn reconfigure(
        &self,
        config: &wit::Config,
    ) -> Result<Result<wit::Reconfigured, wit::ConfigError>> {
        let now = self.now();
        let mut guest = self.instance.lock();
        let resource = guest.seat(self.seat)?.resource;
        let answer = {
            let (api, store) = guest.breakers();
            api.call_reconfigure(store, resource, config, now)
        };
        let answer = answer.map_err(|trap| self.instance.trapped(&mut guest, trap))?;
        if answer.is_ok() {
            guest.set_config(self.seat, config.clone())?;
        }
        // A snapshot now: a replacement imports it under the new config.
        guest
            .keep(self.seat, now, answer.is_ok())
            .map_err(|trap| self.instance.trapped(&mut guest, trap))?;
        Ok(answer)
    }

    /// Admits through `acquire-keyed`: the ticket and the instance's era, or the
    /// rejection, and the transitions the call caused (not yet told: the caller makes its
    /// permit first).
    #[inline]
    fn admit(&self) -> Result<(Decided, Vec<Transition>)> {
        let now = self.now();
        let mut guest = self.instance.lock();
        let key = guest.seat(self.seat)?.key;
        let era = guest.era();
        let answer = {
            let (api, store) = guest.hot();
            api.call_acquire_keyed(store, key, now)
        };
        let (decision, transitioned) = match answer {
            Ok(wit::KeyedAdmission::Admitted(admitted)) => {
                let transitioned = admitted.notes.contains(wit::AdmissionNotes::TRANSITIONED);
                (Ok((admitted, era)), transitioned)
            }
            Ok(wit::KeyedAdmission::Rejected(rejected)) => {
                let rejection = core_rejection(&rejected.rejection);
                self.listener.turned_away(rejection.reason);
                (Err(rejection), rejected.transitioned)
            }
            Ok(wit::KeyedAdmission::UnknownKey) => return Err(unknown_key(key)),
            Err(trap) => return Err(self.instance.trapped(&mut guest, trap)),
        };
        let transitions = self.after(&mut guest, now, transitioned)?;
        Ok((decision, transitions))
    }

    /// Records a ticket's outcome through `record-keyed`, and tells the listener of the
    /// transitions it caused. A ticket of another era (issued before the instance was
    /// replaced) is recorded as one that names nothing, so it counts as stale.
    #[inline]
    fn judge(
        &self,
        ticket: u64,
        era: Option<u64>,
        probe: bool,
        (outcome, retry_after): (Outcome, Nanos),
    ) -> Result<Recorded> {
        let now = self.now();
        let mut guest = self.instance.lock();
        let key = guest.seat(self.seat)?.key;
        let ticket = match era {
            Some(era) if era != guest.era() => NO_TICKET,
            _ => ticket,
        };
        let answer = {
            let (api, store) = guest.hot();
            if retry_after > 0 {
                api.call_record_keyed_after(store, key, ticket, outcome, retry_after, now)
            } else {
                api.call_record_keyed(store, key, ticket, outcome, now)
            }
        };
        let judged = match answer {
            Ok(Ok(judged)) => judged,
            Ok(Err(refused)) => return Err(RecordError::of(refused).into()),
            Err(trap) => return Err(self.instance.trapped(&mut guest, trap)),
        };
        let transitioned = judged.notes.contains(wit::OutcomeNotes::TRANSITIONED);
        let transitions = self.after(&mut guest, now, transitioned)?;
        drop(guest);
        self.notify(&transitions);
        if probe {
            self.listener.probe_recorded();
        }
        Ok(Recorded {
            class: core_case(Class::from_code, judged.class as u8),
            slow: judged.notes.contains(wit::OutcomeNotes::SLOW),
            stale: judged.notes.contains(wit::OutcomeNotes::STALE),
            transitions,
        })
    }

    /// After a keyed call, in the same hold of the guest: the transitions it flagged
    /// (exactly that call's), and the snapshot it leaves when one is due. The common call
    /// flags none and reads no list.
    #[inline]
    fn after(&self, guest: &mut Guest, now: Nanos, transitioned: bool) -> Result<Vec<Transition>> {
        let listed = if transitioned {
            self.listed(guest)
        } else {
            Ok(Vec::new())
        };
        let kept = listed.and_then(|listed| {
            guest.keep(self.seat, now, transitioned)?;
            Ok(listed)
        });
        kept.map_err(|trap| self.instance.trapped(guest, trap))
    }

    #[cold]
    fn listed(&self, guest: &mut Guest) -> wasmtime::Result<Vec<Transition>> {
        let resource = match guest.seat(self.seat) {
            Ok(seat) => seat.resource,
            Err(_) => return Ok(Vec::new()),
        };
        let (api, store) = guest.breakers();
        let listed = api.call_last_transitions(store, resource)?;
        Ok(listed.iter().map(core_transition).collect())
    }
}

/// A ticket no breaker issues: its key bits are the key that names nothing.
const NO_TICKET: u64 = u64::MAX;

/// The error for a hot-path answer that says the breaker's key names nothing: the
/// library holds the breaker's handle, so only a mismatched component build gives it.
fn unknown_key(key: u32) -> anyhow::Error {
    anyhow!("the component has no breaker under key {key} (a mismatched build?)")
}

impl Drop for BreakerShared {
    fn drop(&mut self) {
        // Permits still out are tickets: they record as stale once the breaker is gone.
        self.instance.unseat(self.seat);
    }
}

/// A circuit breaker inside the component. `Send + Sync`; clones share one breaker.
#[derive(Clone)]
pub struct Breaker {
    pub(crate) shared: Arc<BreakerShared>,
}

impl fmt::Debug for Breaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Breaker").finish_non_exhaustive()
    }
}

/// What [`Breaker::acquire`] decided.
#[derive(Debug)]
#[must_use = "an admitted call's permit must be recorded"]
pub struct Admission {
    /// A permit, or why not.
    pub decision: Result<Permit, Rejection>,
    /// Transitions this call caused, oldest first.
    pub transitions: Vec<Transition>,
}

/// A permit as a plain number: a *ticket* naming the permit in the breaker's table of
/// outstanding permits (the WIT's keyed hot path). It is `Copy`: nothing stops a copy or a
/// forgotten outcome, so record it once; a ticket recorded twice, issued by another
/// breaker, or issued before the instance was replaced records a stale outcome that counts
/// nothing. Tickets of ended epochs that were never recorded are dropped as the table
/// fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawPermit {
    ticket: u64,
    probe: bool,
    shadow: bool,
    /// The instance's era when the ticket was issued; `None` for a ticket from a number.
    era: Option<u64>,
}

impl RawPermit {
    /// A raw permit from a ticket kept as a number (as [`Self::ticket`] gave it). Whether it
    /// is a probe is not known from the number: it reads `false`.
    pub fn from_ticket(ticket: u64) -> Self {
        Self {
            ticket,
            probe: false,
            shadow: false,
            era: None,
        }
    }

    /// The ticket, as the component numbers it.
    pub fn ticket(self) -> u64 {
        self.ticket
    }

    /// Whether this call is a half-open probe.
    pub fn is_probe(self) -> bool {
        self.probe
    }

    /// Whether shadow mode let this call through: an enforcing breaker would have turned
    /// it away, and its outcome counts nothing.
    pub fn is_shadow(self) -> bool {
        self.shadow
    }
}

/// What [`Breaker::acquire_raw`] decided.
#[derive(Debug)]
pub struct RawAdmission {
    /// A raw permit, or why not.
    pub decision: Result<RawPermit, Rejection>,
    /// Transitions this call caused, oldest first.
    pub transitions: Vec<Transition>,
}

/// What recording an outcome did.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// How the breaker classified the outcome.
    pub class: Class,
    /// A success slower than `slow-call-duration`.
    pub slow: bool,
    /// The permit was from an earlier epoch (or named no permit out): nothing was counted.
    pub stale: bool,
    /// Transitions this call caused, oldest first.
    pub transitions: Vec<Transition>,
}

/// An outcome the breaker refused. Nothing was counted, and the permit is still out.
/// The `Display` text is the core's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// An HTTP status outside 100–599, or a gRPC code above 16.
    Outcome(tripgate_core::OutcomeError),
    /// The component has no breaker under this breaker's key (a mismatched build: the
    /// library holds the breaker's handle, so its key stays valid).
    UnknownBreaker,
    /// The component refused a permit of another breaker (a mismatched build: the keyed
    /// path records another breaker's ticket as stale).
    ForeignPermit,
}

impl RecordError {
    fn of(refused: wit::RecordError) -> Self {
        use tripgate_core::OutcomeError as E;
        match refused {
            wit::RecordError::InvalidStatus(code) => Self::Outcome(E::Status(code)),
            wit::RecordError::InvalidGrpcCode(code) => Self::Outcome(E::GrpcCode(code)),
            wit::RecordError::UnknownKey => Self::UnknownBreaker,
            wit::RecordError::ForeignPermit => Self::ForeignPermit,
        }
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Outcome(error) => write!(f, "{error}"),
            Self::UnknownBreaker => f.write_str("the component has no breaker under this key"),
            Self::ForeignPermit => f.write_str("the permit was issued by another breaker"),
        }
    }
}

impl std::error::Error for RecordError {}

impl Breaker {
    /// Runs `f` on the locked guest with this breaker's resource and the clock's `now`.
    fn with<T>(
        &self,
        f: impl FnOnce(
            &wit::GuestBreaker<'_>,
            &mut Store<HostState>,
            ResourceAny,
            Nanos,
        ) -> wasmtime::Result<T>,
    ) -> Result<T> {
        self.shared.with(f, |_| false)
    }

    /// Waits `duration` on the runtime's clock (a fake clock moves forward instead): a
    /// retry's wait between attempts.
    pub fn sleep(&self, duration: Duration) {
        self.shared.instance.sleep(duration);
    }

    /// Admits a call or turns it away, at the clock's `now`.
    #[inline]
    pub fn acquire(&self) -> Result<Admission> {
        let (decision, transitions) = self.shared.admit()?;
        // The permit exists before the listener hears of the transitions.
        let admission = Admission {
            decision: decision.map(|(admitted, era)| Permit {
                breaker: Arc::clone(&self.shared),
                ticket: Some(admitted.ticket),
                probe: admitted.notes.contains(wit::AdmissionNotes::PROBE),
                shadow: admitted.notes.contains(wit::AdmissionNotes::SHADOW),
                era,
            }),
            transitions,
        };
        self.shared.notify(&admission.transitions);
        Ok(admission)
    }

    /// [`Self::acquire`] with a plain-number permit (see [`RawPermit`]): nothing is
    /// recorded for it when it is dropped.
    #[inline]
    pub fn acquire_raw(&self) -> Result<RawAdmission> {
        let (decision, transitions) = self.shared.admit()?;
        self.shared.notify(&transitions);
        Ok(RawAdmission {
            decision: decision.map(|(admitted, era)| RawPermit {
                ticket: admitted.ticket,
                probe: admitted.notes.contains(wit::AdmissionNotes::PROBE),
                shadow: admitted.notes.contains(wit::AdmissionNotes::SHADOW),
                era: Some(era),
            }),
            transitions,
        })
    }

    /// Records a raw permit's outcome. An invalid outcome is a [`RecordError`] and the
    /// raw permit stays out.
    pub fn record_raw(&self, permit: RawPermit, outcome: impl Into<Outcome>) -> Result<Recorded> {
        self.shared
            .judge(permit.ticket, permit.era, permit.probe, (outcome.into(), 0))
    }

    /// How many times the transition listener panicked (each panic was caught).
    pub fn listener_panics(&self) -> u64 {
        self.shared.listener.panics()
    }

    /// The effective state now.
    pub fn state(&self) -> Result<State> {
        self.with(|api, store, me, now| api.call_state(store, me, now))
            .map(core_state)
    }

    /// Counters and state now.
    pub fn metrics(&self) -> Result<Metrics> {
        self.with(|api, store, me, now| api.call_metrics(store, me, now))
            .map(|m| core_metrics(&m))
    }

    /// [`Self::metrics`] and [`Self::fleet_status`] now, in one hold of the guest's lock
    /// (two guest calls at one reading of the clock): what the exposition reads
    /// (`tripgate_core::exposition`).
    pub fn reading(&self) -> Result<tripgate_core::exposition::Reading> {
        let (m, s) = self.with(|api, store, me, now| {
            let m = api.call_metrics(&mut *store, me, now)?;
            Ok((m, api.call_fleet_status(store, me, now)?))
        })?;
        Ok(tripgate_core::exposition::Reading {
            metrics: core_metrics(&m),
            fleet: core_fleet_status(&s),
        })
    }

    /// Forces the breaker open until [`Self::release`].
    pub fn isolate(&self) -> Result<Vec<Transition>> {
        self.manual(|api, store, me, now| api.call_isolate(store, me, now))
    }

    /// Closes an isolated or disabled breaker.
    pub fn release(&self) -> Result<Vec<Transition>> {
        self.manual(|api, store, me, now| api.call_release(store, me, now))
    }

    /// Admits everything and never trips, still measuring, until [`Self::release`].
    pub fn disable(&self) -> Result<Vec<Transition>> {
        self.manual(|api, store, me, now| api.call_disable(store, me, now))
    }

    /// Back to closed with an empty window; every permit out becomes stale.
    pub fn reset(&self) -> Result<Vec<Transition>> {
        self.manual(|api, store, me, now| api.call_reset(store, me, now))
    }

    /// Puts `config` in force now, keeping the state, the permits out and (while its shape
    /// is the same) the window: see the core's `Breaker::reconfigure`. A bad config, or a
    /// change to `fleet-quorum` or `slow-call-duration`, is a [`ConfigError`] (the error
    /// downcasts to it) and changes nothing. Transitions time had made due reach the
    /// listener.
    pub fn reconfigure(&self, config: &Config) -> Result<Reconfigured> {
        let done = self
            .shared
            .reconfigure(&config::to_wit(config))?
            .map_err(ConfigError::from)?;
        let transitions: Vec<Transition> = done.transitions.iter().map(core_transition).collect();
        self.shared.notify(&transitions);
        Ok(Reconfigured {
            window_kept: done.window_kept,
            transitions,
        })
    }

    /// A manual operation, its transitions told to the listener.
    fn manual(
        &self,
        op: impl FnOnce(
            &wit::GuestBreaker<'_>,
            &mut Store<HostState>,
            ResourceAny,
            u64,
        ) -> wasmtime::Result<Vec<wit::Transition>>,
    ) -> Result<Vec<Transition>> {
        let listed = self.shared.with(op, |listed| !listed.is_empty())?;
        let transitions: Vec<Transition> = listed.iter().map(core_transition).collect();
        self.shared.notify(&transitions);
        Ok(transitions)
    }

    /// Fleet mode (`fleet-quorum` set; a fleet adapter drives these in the background):
    /// applies an event from the fleet (see `wit/breaker.wit`'s `fleet-apply`).
    pub fn fleet_apply(&self, event: FleetEvent) -> Result<(FleetApplied, Vec<Transition>)> {
        let kind = match event.kind {
            FleetEventKind::Open => wit::FleetEventKind::Open,
            FleetEventKind::Close => wit::FleetEventKind::Close,
        };
        let wit_event = wit::FleetEvent {
            generation: event.generation,
            kind,
            remaining: event.remaining,
        };
        let applying = self.shared.with(
            |api, store, me, now| api.call_fleet_apply(store, me, wit_event, now),
            |applying| !applying.transitions.is_empty(),
        )?;
        let transitions: Vec<Transition> =
            applying.transitions.iter().map(core_transition).collect();
        self.shared.notify(&transitions);
        Ok((
            core_case(FleetApplied::from_code, applying.applied as u8),
            transitions,
        ))
    }

    /// Fleet mode: the store's trip votes (member id, age in ns); whether they reach the
    /// quorum, so that the fleet opens.
    pub fn fleet_votes(&self, votes: &[(u64, u64)]) -> Result<bool> {
        let votes: Vec<wit::FleetVote> = votes
            .iter()
            .map(|&(member, age)| wit::FleetVote { member, age })
            .collect();
        self.with(|api, store, me, now| api.call_fleet_votes(store, me, &votes, now))
    }

    /// Fleet mode: whether the store is reachable, and the probe lease if this member
    /// holds it (for so many ns from now).
    pub fn fleet_store(&self, reachable: bool, lease: Option<u64>) -> Result<()> {
        self.with(|api, store, me, now| api.call_fleet_store(store, me, reachable, lease, now))
    }

    /// Fleet mode: what the last transition that needs telling asks the adapter to
    /// publish (taken once).
    pub fn fleet_take_announcement(&self) -> Result<Option<Announcement>> {
        let taken = self.with(|api, store, me, _| api.call_fleet_take_announcement(store, me))?;
        Ok(taken.map(|a| Announcement {
            kind: core_case(AnnouncementKind::from_code, a.kind as u8),
            remaining: a.remaining,
        }))
    }

    /// The configured `cooldown` (before backoff), in ns: a fleet's votes count within one.
    pub fn cooldown(&self) -> u64 {
        self.configured(|c| c.cooldown)
            .unwrap_or(Config::default().cooldown)
    }

    /// The configured `probe-timeout`, in ns: the length of a fleet's probe lease.
    pub fn probe_timeout(&self) -> u64 {
        let timeout = self.configured(|c| c.probe_timeout);
        timeout.unwrap_or(Config::default().probe_timeout)
    }

    /// A field of the config the breaker's seat keeps (the one it was made or last
    /// reconfigured with); `None` when unset there (the component's default holds).
    fn configured(&self, field: impl FnOnce(&wit::Config) -> Option<u64>) -> Option<u64> {
        let guest = self.shared.instance.lock();
        guest
            .seat(self.shared.seat)
            .ok()
            .and_then(|seat| field(seat.config()))
    }

    /// Fleet mode: the breaker's fleet state now.
    pub fn fleet_status(&self) -> Result<FleetStatus> {
        let s = self.with(|api, store, me, now| api.call_fleet_status(store, me, now))?;
        Ok(core_fleet_status(&s))
    }

    /// Calls `listener` with every transition this breaker reports from now on, from
    /// whichever call caused it (`acquire`, a record, a dropped permit, a manual
    /// operation, `call`), after the call: no polling, and the listener may use the
    /// breaker (a listener that owns a clone of the breaker keeps it alive). Replaces any
    /// earlier listener. For logs, events and metrics exporters.
    pub fn on_transition(&self, listener: impl Fn(&Transition) + Send + Sync + 'static) {
        self.shared.listener.set(listener);
    }

    /// The state as compact bytes, instants relative to now.
    pub fn export_state(&self) -> Result<Vec<u8>> {
        Ok(self.with(|api, store, me, now| api.call_export_state(store, me, now))??)
    }

    /// Replaces the state with exported bytes; `elapsed` ns passed since the export. Bad
    /// bytes are a [`SnapshotError`](crate::SnapshotError) and change nothing.
    pub fn import_state(&self, bytes: &[u8], elapsed: u64) -> Result<()> {
        // A new state: the next call takes a snapshot of it.
        Ok(self.shared.with(
            |api, store, me, now| api.call_import_state(store, me, bytes, elapsed, now),
            |imported| imported.is_ok(),
        )??)
    }
}

/// Admission for one call. Record it once with [`Permit::record`]; dropping it instead
/// records it as `cancelled` (counts as nothing).
pub struct Permit {
    breaker: Arc<BreakerShared>,
    /// `None` once recorded.
    ticket: Option<u64>,
    probe: bool,
    shadow: bool,
    /// The instance's era when it was issued.
    era: u64,
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("ticket", &self.ticket)
            .field("probe", &self.probe)
            .finish_non_exhaustive()
    }
}

impl Permit {
    /// Whether this call is a half-open probe.
    pub fn is_probe(&self) -> bool {
        self.probe
    }

    /// Whether shadow mode let this call through: an enforcing breaker would have turned
    /// it away, and its outcome counts nothing.
    pub fn is_shadow(&self) -> bool {
        self.shadow
    }

    /// Hands the permit back with its call's outcome, at the clock's `now`. An invalid
    /// outcome is a [`RecordError`]; the permit is then released as `cancelled` when
    /// dropped.
    #[inline]
    pub fn record(self, outcome: impl Into<Outcome>) -> Result<Recorded> {
        self.record_judged(outcome.into(), 0)
    }

    /// [`Self::record`] for an answer that asked its callers to stay away for
    /// `retry_after` (an HTTP `Retry-After` on a 429 or 503, a gRPC pushback;
    /// [`tripgate_host::stay_away`] reads them): if this outcome trips the breaker or fails
    /// its probe round, it opens for at least that long, up to `max-cooldown`.
    pub fn record_with_retry_after(
        self,
        outcome: impl Into<Outcome>,
        retry_after: Duration,
    ) -> Result<Recorded> {
        let retry_after = u64::try_from(retry_after.as_nanos()).unwrap_or(u64::MAX);
        self.record_judged(outcome.into(), retry_after)
    }

    fn record_judged(mut self, outcome: Outcome, retry_after: Nanos) -> Result<Recorded> {
        let Some(ticket) = self.ticket else {
            return Err(anyhow!("permit already recorded"));
        };
        let recorded =
            self.breaker
                .judge(ticket, Some(self.era), self.probe, (outcome, retry_after));
        if recorded.is_ok() {
            self.ticket = None;
        }
        // Refused: `Drop` releases it as `cancelled`.
        recorded
    }
}

impl Drop for Permit {
    /// Records `cancelled` at the clock's `now`.
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            let _ = self
                .breaker
                .judge(ticket, Some(self.era), self.probe, (Outcome::Cancelled, 0));
        }
    }
}
