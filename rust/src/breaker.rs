//! The thread-safe breaker: the core behind a lock, with its own clock.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tripgate_core::exposition::Reading;
use tripgate_core::fleet::protocol::View;
use tripgate_core::{
    Announcement, Config, ConfigError, FleetApplied, FleetEvent, FleetStatus, Metrics, Nanos,
    Outcome, Reconfigured, Rejection, SnapshotError, State, Transition, Transitions, Verdict,
    MAX_EXPORT_LEN,
};
use tripgate_host::{Clock, CoarseClock, ListenerSlot, Lock};

/// A circuit breaker for one upstream, shared between threads (`Send + Sync`; put it in an
/// `Arc`, or a [`Registry`](crate::Registry)). It owns its clock ([`CoarseClock`] unless
/// told otherwise) and the core's state behind a lock held for a few nanoseconds per
/// call; every decision is `tripgate-core`'s.
///
/// ```
/// use tripgate::{Breaker, Config, Outcome, Status, Classify};
///
/// let breaker = Breaker::new(Config::default()).unwrap();
/// match breaker.acquire() {
///     Ok(permit) => {
///         let status = Status(503); // ... make the call ...
///         permit.record(status.outcome());
///     }
///     Err(rejection) => println!("not now: retry in {} ns", rejection.retry_after),
/// };
/// ```
pub struct Breaker<C: Clock = CoarseClock> {
    core: Lock<tripgate_core::Breaker>,
    clock: C,
    listener: ListenerSlot,
}

impl<C: Clock> fmt::Debug for Breaker<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Breaker")
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

impl Breaker<CoarseClock> {
    /// A closed breaker on a fresh [`CoarseClock`], or the first rule `config` breaks.
    pub fn new(config: Config) -> Result<Self, ConfigError> {
        Self::with_clock(config, CoarseClock::new())
    }
}

impl<C: Clock> Breaker<C> {
    /// A closed breaker reading `clock` (tests pass an `Arc<FakeClock>`).
    pub fn with_clock(config: Config, clock: C) -> Result<Self, ConfigError> {
        let core = tripgate_core::Breaker::new(config, clock.now())?;
        Ok(Self {
            core: Lock::new(core),
            clock,
            listener: ListenerSlot::new(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> Config {
        *self.core.lock().config()
    }

    /// The clock the breaker reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Admits a call or turns it away. A closed breaker admits without reading the clock
    /// (`acquire_untimed`); every other state reads it once.
    #[inline(always)]
    pub fn acquire(&self) -> Result<Permit<'_, C>, Rejection> {
        let mut caused = None;
        let decision = self.admit(&mut caused);
        // The permit exists before the listener hears of the transitions: whatever the
        // listener does, the permit is recorded or dropped as a permit.
        let permit = decision.map(|permit| Permit {
            breaker: self,
            permit: Some(permit),
        });
        self.notify(&caused);
        permit
    }

    /// [`Self::acquire`] with a permit that holds the breaker by `Arc`, for futures and
    /// tasks that must be `'static` (the tower layer's response future).
    #[inline(always)]
    pub fn acquire_owned(self: &Arc<Self>) -> Result<OwnedPermit<C>, Rejection> {
        let mut caused = None;
        let decision = self.admit(&mut caused);
        let permit = decision.map(|permit| OwnedPermit {
            breaker: Arc::clone(self),
            permit: Some(permit),
        });
        self.notify(&caused);
        permit
    }

    /// The core's decision, with the lock released; the transitions it caused are put in
    /// `caused`.
    #[inline(always)]
    fn admit(&self, caused: &mut Option<Transitions>) -> Result<tripgate_core::Permit, Rejection> {
        // The `_into` forms: a call that causes no transition moves a permit, not the
        // core's whole `Admission`, out of the lock; and `caused` stays where the caller
        // made it, so the transitions (a few dozen bytes) are never moved, only tested.
        let decision = self
            .core
            .lock()
            .acquire_reading(|| self.clock.now(), caused);
        if let Err(rejection) = &decision {
            self.listener.turned_away(rejection.reason);
        }
        decision
    }

    /// Takes a core permit back with its outcome at the clock's `now`.
    #[inline(always)]
    fn finish(&self, permit: tripgate_core::Permit, outcome: Outcome) -> Verdict {
        // Read before taking the lock: the clock is the longest part of a record.
        let now = self.clock.now();
        let probe = permit.is_probe();
        let mut caused = None;
        let verdict = self
            .core
            .lock()
            .record_into(permit, outcome, now, &mut caused);
        self.notify(&caused);
        if probe {
            self.listener.probe_recorded();
        }
        verdict
    }

    /// [`Self::finish`] for an answer that asked callers to stay away for `retry_after`.
    #[cold]
    fn finish_after(
        &self,
        permit: tripgate_core::Permit,
        outcome: Outcome,
        retry_after: Nanos,
    ) -> Verdict {
        let now = self.clock.now();
        let probe = permit.is_probe();
        let recorded = self
            .core
            .lock()
            .record_with_retry_after(permit, outcome, retry_after, now);
        self.listener.tell(recorded.transitions.as_slice());
        if probe {
            self.listener.probe_recorded();
        }
        Verdict {
            class: recorded.class,
            slow: recorded.slow,
            stale: recorded.stale,
        }
    }

    /// A permit dropped without an outcome.
    #[cold]
    #[inline(never)]
    fn cancel(&self, permit: tripgate_core::Permit) {
        self.finish(permit, Outcome::Cancelled);
    }

    /// The effective state now.
    pub fn state(&self) -> State {
        let now = self.clock.now();
        self.core.lock().state(now)
    }

    /// Counters and state now.
    pub fn metrics(&self) -> Metrics {
        let now = self.clock.now();
        self.core.lock().metrics(now)
    }

    /// [`Self::metrics`] and [`Self::fleet_status`] now, in one hold of the lock: what
    /// the exposition reads (`tripgate_core::exposition`).
    pub fn reading(&self) -> tripgate_core::exposition::Reading {
        let now = self.clock.now();
        self.core.lock().reading(now)
    }

    /// Forces the breaker open until [`Self::release`].
    pub fn isolate(&self) -> Transitions {
        self.manual(tripgate_core::Breaker::isolate)
    }

    /// Closes an isolated or disabled breaker, with an empty window.
    pub fn release(&self) -> Transitions {
        self.manual(tripgate_core::Breaker::release)
    }

    /// Admits everything and never trips, still measuring, until [`Self::release`].
    pub fn disable(&self) -> Transitions {
        self.manual(tripgate_core::Breaker::disable)
    }

    /// Back to closed with an empty window; every permit out becomes stale.
    pub fn reset(&self) -> Transitions {
        self.manual(tripgate_core::Breaker::reset)
    }

    /// Puts `config` in force now, keeping the state, the permits out and (while its shape
    /// is the same) the window: see the core's
    /// [`reconfigure`](tripgate_core::Breaker::reconfigure). A bad config, or a change to
    /// `fleet-quorum` or `slow-call-duration`, is an error that names the field and
    /// changes nothing. Transitions time had made due reach the listener.
    pub fn reconfigure(&self, config: Config) -> Result<Reconfigured, ConfigError> {
        let now = self.clock.now();
        let reconfigured = self.core.lock().reconfigure(config, now)?;
        self.listener.tell(reconfigured.transitions.as_slice());
        Ok(reconfigured)
    }

    fn manual(&self, op: fn(&mut tripgate_core::Breaker, u64) -> Transitions) -> Transitions {
        let now = self.clock.now();
        let transitions = op(&mut self.core.lock(), now);
        self.listener.tell(transitions.as_slice());
        transitions
    }

    /// The state as compact bytes, instants relative to now (see the core's `export`).
    pub fn export_state(&self) -> Vec<u8> {
        let now = self.clock.now();
        let mut buf = [0u8; MAX_EXPORT_LEN];
        let len = self.core.lock().export(now, &mut buf);
        // The buffer is the largest export the core writes, so it never runs short.
        buf.get(..len.unwrap_or(0)).unwrap_or_default().to_vec()
    }

    /// Replaces the state with exported bytes; `elapsed` ns passed since the export. Bad
    /// bytes are an error and change nothing.
    pub fn import_state(&self, bytes: &[u8], elapsed: u64) -> Result<(), SnapshotError> {
        let now = self.clock.now();
        self.core.lock().import(bytes, elapsed, now)
    }

    /// Fleet mode (`fleet-quorum` set; a fleet adapter such as `tripgate-redis` drives
    /// these in the background): applies an event from the fleet. See the core's
    /// [`fleet_apply`](tripgate_core::Breaker::fleet_apply).
    pub fn fleet_apply(&self, event: FleetEvent) -> (FleetApplied, Transitions) {
        let now = self.clock.now();
        let (applied, transitions) = self.core.lock().fleet_apply(event, now);
        self.listener.tell(transitions.as_slice());
        (applied, transitions)
    }

    /// Fleet mode: the store's trip votes (member id, age in ns); whether they reach the
    /// quorum, so that the fleet opens.
    pub fn fleet_votes(&self, votes: &[(u64, u64)]) -> bool {
        let now = self.clock.now();
        self.core.lock().fleet_votes(votes, now)
    }

    /// Fleet mode: whether the store is reachable, and the probe lease if this member
    /// holds it (for so many ns from now).
    pub fn fleet_store(&self, reachable: bool, lease: Option<u64>) {
        let now = self.clock.now();
        let mut core = self.core.lock();
        core.fleet_degraded(!reachable, now);
        core.fleet_lease(lease, now);
    }

    /// Fleet mode: what the last transition that needs telling asks the adapter to
    /// publish (taken once).
    pub fn fleet_take_announcement(&self) -> Option<Announcement> {
        self.core.lock().fleet_take_announcement()
    }

    /// Fleet mode: the breaker's fleet state now.
    pub fn fleet_status(&self) -> FleetStatus {
        let now = self.clock.now();
        self.core.lock().fleet_status(now)
    }

    /// Fleet mode: what the member protocol reads of the breaker, in one hold of the lock.
    pub fn fleet_view(&self) -> View {
        let Reading { metrics, fleet } = self.reading();
        View {
            state: metrics.state,
            status: fleet,
            probes_out: metrics.probes_out,
            cooldown_remaining: metrics.cooldown_remaining,
            admitted: metrics.admitted_total,
        }
    }

    /// Calls `listener` with every transition from now on, from whichever call caused it
    /// (`acquire`, a record, a dropped permit, a manual operation, a guarded call),
    /// after that call has released the breaker: no polling, and the listener may use the
    /// breaker. Replaces any earlier listener. For logs, events and metrics exporters. A
    /// listener that panics is caught, counted ([`Self::listener_panics`]) and reported
    /// as a `tracing` event (feature `tracing`); the call that caused the transition goes
    /// on as if it had returned.
    pub fn on_transition(&self, listener: impl Fn(&Transition) + Send + Sync + 'static) {
        self.listener.set(listener);
    }

    /// How many times the transition listener panicked (each panic was caught).
    pub fn listener_panics(&self) -> u64 {
        self.listener.panics()
    }

    /// Where the listener is kept (the registry installs its `tracing` listener there).
    pub(crate) fn listener_slot(&self) -> &ListenerSlot {
        &self.listener
    }

    #[inline(always)]
    fn notify(&self, caused: &Option<Transitions>) {
        if let Some(transitions) = caused {
            self.listener.tell(transitions.as_slice());
        }
    }
}

/// Admission for one call, borrowed from its breaker. Record it once with
/// [`Permit::record`]; dropping it instead (an early return, a panic, a cancelled
/// future) records `cancelled`, which counts as nothing.
#[must_use = "dropping a permit records the call as cancelled"]
pub struct Permit<'a, C: Clock = CoarseClock> {
    breaker: &'a Breaker<C>,
    /// `None` once recorded.
    permit: Option<tripgate_core::Permit>,
}

/// [`Permit`] holding its breaker by `Arc` (see [`Breaker::acquire_owned`]).
#[must_use = "dropping a permit records the call as cancelled"]
pub struct OwnedPermit<C: Clock = CoarseClock> {
    breaker: Arc<Breaker<C>>,
    permit: Option<tripgate_core::Permit>,
}

macro_rules! permit_api {
    ($ty:ty) => {
        impl<C: Clock> $ty {
            /// Whether this call is a half-open probe.
            pub fn is_probe(&self) -> bool {
                self.permit.as_ref().is_some_and(|p| p.is_probe())
            }

            /// Whether shadow mode let this call through (`Config::shadow`): an enforcing
            /// breaker would have turned it away, and its outcome counts nothing.
            pub fn is_shadow(&self) -> bool {
                self.permit.as_ref().is_some_and(|p| p.is_shadow())
            }

            /// Hands the permit back with its call's outcome, at the clock's `now`. The
            /// transitions it caused go to the listener ([`Breaker::on_transition`]).
            // Inline always, with `acquire`: a permit or verdict handed across a call goes
            // through memory, and reading it back whole stalls on the narrower stores
            // that wrote it (measured: two thirds of a shared acquire + record).
            #[inline(always)]
            pub fn record(mut self, outcome: Outcome) -> Verdict {
                match self.permit.take() {
                    Some(permit) => self.breaker.finish(permit, outcome),
                    // Unreachable: `record` consumes the permit, and only it and `Drop`
                    // take the core's permit out.
                    None => Verdict {
                        class: tripgate_core::Class::Neutral,
                        slow: false,
                        stale: true,
                    },
                }
            }

            /// [`Self::record`] for an answer that asked its callers to stay away for
            /// `retry_after` (an HTTP `Retry-After` on a 429 or 503, a gRPC pushback;
            /// [`tripgate_host::stay_away`] reads them): if this outcome trips the breaker
            /// or fails its probe round, it opens for at least that long, up to
            /// `max-cooldown` (see the core's `record_with_retry_after`).
            pub fn record_with_retry_after(
                mut self,
                outcome: Outcome,
                retry_after: Duration,
            ) -> Verdict {
                let retry_after = u64::try_from(retry_after.as_nanos()).unwrap_or(u64::MAX);
                match self.permit.take() {
                    Some(permit) => self.breaker.finish_after(permit, outcome, retry_after),
                    None => Verdict {
                        class: tripgate_core::Class::Neutral,
                        slow: false,
                        stale: true,
                    },
                }
            }
        }

        impl<C: Clock> Drop for $ty {
            /// Inline: after `record` there is nothing to do, and a call for nothing
            /// would cost as much as a check.
            #[inline(always)]
            fn drop(&mut self) {
                if let Some(permit) = self.permit.take() {
                    self.breaker.cancel(permit);
                }
            }
        }

        impl<C: Clock> fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("permit", &self.permit)
                    .finish_non_exhaustive()
            }
        }
    };
}

permit_api!(Permit<'_, C>);
permit_api!(OwnedPermit<C>);
