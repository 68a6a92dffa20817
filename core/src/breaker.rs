//! The breaker: admission, outcomes, and the transitions between them.
//!
//! Two steps per call, as in gobreaker: [`Breaker::acquire`] admits or rejects, and
//! [`Breaker::record`] takes the permit back with the outcome. Every transition starts a
//! new epoch; a permit from an older epoch is *stale*, and its outcome changes nothing, so
//! a slow success from before a trip can never close a half-open breaker.

use crate::config::{Config, ConfigError};
use crate::fleet::Fleet;
use crate::inflight::InFlight;
use crate::metrics::{bump, count_route, Metrics, Routes, Stats};
use crate::outcome::{classify, Class, Outcome};
use crate::permit::{MalformedPermit, Permit, RawPermit};
use crate::phase::Phase;
use crate::probes::Probes;
use crate::rejection::{RejectReason, Rejection};
use crate::state::State;
use crate::time::{since, Nanos, Watermark, SECOND};
use crate::transition::{Reason, Route, Transition, Transitions, MAX_TRANSITIONS};
use crate::window::{Tally, Window};

/// Longest `retry-after` given to callers turned away while probes are out: probes
/// usually answer in far less than `probe-timeout`, and a caller that comes back early
/// is turned away again for a few nanoseconds.
const PROBING_RETRY_CAP: Nanos = SECOND;

/// Transitions time alone can make due at once: half-open → open when a probe times out,
/// then open → half-open when the cooldown has passed too. The second leaves no probe of
/// the new round out, so no third can follow.
const TIME_TRANSITIONS: usize = MAX_TRANSITIONS - 1;

/// The result of [`Breaker::acquire`].
#[must_use = "an admitted call's permit must be recorded"]
#[derive(Debug, PartialEq, Eq)]
pub struct Admission {
    /// A permit, or why not.
    pub decision: Result<Permit, Rejection>,
    /// Transitions this call caused (a cooldown that passed, a hang that tripped).
    pub transitions: Transitions,
}

/// The result of [`Breaker::record`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// How the outcome was classified.
    pub class: Class,
    /// A success slower than `slow-call-duration`.
    pub slow: bool,
    /// The permit was from an earlier epoch (or not issued by this breaker), so nothing was
    /// counted.
    pub stale: bool,
    /// Transitions this call caused.
    pub transitions: Transitions,
}

/// What [`Breaker::record_into`] made of an outcome: [`Recorded`] without its
/// transitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// How the outcome was classified.
    pub class: Class,
    /// A success slower than `slow-call-duration`.
    pub slow: bool,
    /// The permit was from an earlier epoch (or not issued by this breaker), so nothing was
    /// counted.
    pub stale: bool,
}

/// Appends `transitions` to a host's `caused` (see [`Breaker::acquire_into`]).
#[inline]
fn report(caused: &mut Option<Transitions>, transitions: &Transitions) {
    for transition in transitions {
        report_one(caused, *transition);
    }
}

#[cold]
fn report_one(caused: &mut Option<Transitions>, transition: Transition) {
    caused
        .get_or_insert_with(Transitions::default)
        .push(transition);
}

/// The breaker as time alone would have moved it (see [`Breaker::projected`]).
pub(crate) struct Projection {
    pub(crate) phase: Phase,
    pub(crate) last: Option<Transition>,
    pub(crate) transitions: u64,
    pub(crate) probe_timeouts: u64,
    /// The routes of those transitions, oldest first.
    pub(crate) routes: [Option<Route>; TIME_TRANSITIONS],
}

impl Projection {
    /// `routes` with the projected transitions counted too.
    pub(crate) fn add_routes(&self, routes: &mut Routes) {
        for route in self.routes.iter().flatten() {
            count_route(routes, *route);
        }
    }
}

/// A circuit breaker. Plain data: no clock, no allocation, no interior mutability; wrap
/// it in a lock to share it between threads.
///
/// ```
/// use tripgate_core::{Breaker, Config, Outcome, State, SECOND};
///
/// let mut breaker = Breaker::new(Config::default(), 0).unwrap();
/// for i in 0..5 {
///     let permit = breaker.acquire(i).decision.unwrap();
///     breaker.record(permit, Outcome::status(503).unwrap(), i);
/// }
/// assert_eq!(breaker.state(5), State::Open);
///
/// let rejection = breaker.acquire(SECOND).decision.unwrap_err();
/// assert_eq!(rejection.retry_after, 15 * SECOND - (SECOND - 4));
/// assert_eq!(breaker.state(4 + 15 * SECOND), State::HalfOpen);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Breaker {
    pub(crate) config: Config,
    pub(crate) clock: Watermark,
    pub(crate) phase: Phase,
    pub(crate) window: Window,
    pub(crate) in_flight: InFlight,
    pub(crate) probes: Probes,
    pub(crate) stats: Stats,
    pub(crate) fleet: Fleet,
}

impl Breaker {
    /// A closed breaker, or the first rule `config` breaks.
    pub fn new(config: Config, now: Nanos) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            clock: Watermark::new(now),
            phase: Phase::new(&config, now),
            window: Window::new(&config, now),
            in_flight: InFlight::new(config.slow_call_duration, now),
            probes: Probes::new(),
            stats: Stats::default(),
            fleet: Fleet::new(config.fleet_quorum),
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Admits a call or turns it away. Never blocks, never allocates.
    #[inline(always)]
    pub fn acquire(&mut self, now: Nanos) -> Admission {
        let now = self.clock.observe(now);
        // The inline paths build the admission here, in registers: routed through a
        // borrowed `Option<Transitions>` (as `acquire_into` is), it was initialised in
        // memory on every call and the decision stored there for the join.
        match self.admit_inline(now) {
            Some(decision) => Admission {
                decision,
                transitions: Transitions::default(),
            },
            None => self.admit_settled(now),
        }
    }

    /// [`Self::acquire`] for hosts that pass the decision on and the transitions
    /// elsewhere (a listener): the transitions, if the call caused any, are appended to
    /// `caused`, which a call that causes none never touches. A hot path then moves a
    /// permit, not a whole [`Admission`].
    #[inline(always)]
    pub fn acquire_into(
        &mut self,
        now: Nanos,
        caused: &mut Option<Transitions>,
    ) -> Result<Permit, Rejection> {
        let now = self.clock.observe(now);
        self.acquire_observed(now, caused)
    }

    /// [`Self::acquire_into`] at an instant already observed.
    #[inline(always)]
    fn acquire_observed(
        &mut self,
        now: Nanos,
        caused: &mut Option<Transitions>,
    ) -> Result<Permit, Rejection> {
        match self.admit_inline(now) {
            Some(decision) => decision,
            None => self.admit_settled_into(now, caused),
        }
    }

    /// The two decisions that must cost nanoseconds, made inline; `None` for the general
    /// path.
    #[inline(always)]
    fn admit_inline(&mut self, now: Nanos) -> Option<Result<Permit, Rejection>> {
        // WebAssembly builds take the general path alone: the component has a 64 KiB
        // budget, and its call boundary costs far more than the inline paths save.
        if cfg!(target_family = "wasm") {
            return None;
        }
        // A closed breaker without hang detection or a concurrency cap (time alone cannot
        // move it, nothing can turn the call away), and an open one inside its cooldown.
        match self.phase.state {
            State::Closed => (self.config.slow_call_duration.is_none()
                && self.config.max_in_flight.is_none())
            .then(|| Ok(self.admit_untracked_call(now))),
            State::Open => {
                let remaining = self.phase.remaining(now);
                (remaining > 0).then(|| Err(self.reject(RejectReason::Open, remaining)))
            }
            _ => None,
        }
    }

    /// [`Self::admit_settled`] for [`Self::acquire_into`].
    #[inline(never)]
    fn admit_settled_into(
        &mut self,
        now: Nanos,
        caused: &mut Option<Transitions>,
    ) -> Result<Permit, Rejection> {
        let Admission {
            decision,
            transitions,
        } = self.settled_admission(now);
        report(caused, &transitions);
        decision
    }

    /// [`Self::acquire`] off its inline paths.
    #[inline(never)]
    fn admit_settled(&mut self, now: Nanos) -> Admission {
        self.settled_admission(now)
    }

    /// Admission in every state: first the transitions time alone made due.
    #[inline(always)]
    fn settled_admission(&mut self, now: Nanos) -> Admission {
        let mut transitions = self.settle(now);
        let decision = match self.phase.state {
            State::Closed => self.admit_closed(now, &mut transitions),
            State::Disabled => Ok(self.admit_call(now)),
            State::Open => Err(self.reject(RejectReason::Open, self.phase.remaining(now))),
            State::HalfOpen => self.admit_probe(now),
            State::Isolated => Err(self.reject(RejectReason::Isolated, 0)),
        };
        Admission {
            decision,
            transitions,
        }
    }

    /// [`Self::acquire`] without a clock reading, when time cannot matter to admission:
    /// the breaker is closed (nothing but an operator moves it out of closed before an
    /// outcome does) and `slow-call-duration` is unset (no hang detection). The call is
    /// admitted at [`Self::latest`]; its outcome still needs a real `now`. `None` in
    /// every other case: read the clock and call [`Self::acquire`].
    ///
    /// For hosts where a clock reading costs as much as the breaker (a JS
    /// `performance.now()` is ~40 ns).
    #[inline]
    pub fn acquire_untimed(&mut self) -> Option<Admission> {
        self.untimed_admissible()
            .then(|| self.acquire(self.latest()))
    }

    /// [`Self::acquire_untimed`] in the form of [`Self::acquire_into`].
    #[inline(always)]
    pub fn acquire_untimed_into(
        &mut self,
        caused: &mut Option<Transitions>,
    ) -> Option<Result<Permit, Rejection>> {
        self.untimed_admissible()
            .then(|| self.acquire_into(self.latest(), caused))
    }

    /// [`Self::acquire_into`] that reads `clock` only when the decision needs the time:
    /// not for a closed breaker without hang detection ([`Self::acquire_untimed`]'s case).
    #[inline(always)]
    pub fn acquire_reading(
        &mut self,
        clock: impl FnOnce() -> Nanos,
        caused: &mut Option<Transitions>,
    ) -> Result<Permit, Rejection> {
        if self.untimed_admissible() {
            // The latest instant needs no observing: one store fewer on the hot path.
            self.acquire_observed(self.latest(), caused)
        } else {
            self.acquire_into(clock(), caused)
        }
    }

    #[inline(always)]
    fn untimed_admissible(&self) -> bool {
        self.phase.state == State::Closed && self.config.slow_call_duration.is_none()
    }

    /// The latest instant the breaker has seen: a `now` below it is treated as it.
    #[inline(always)]
    pub fn latest(&self) -> Nanos {
        // The watermark itself. (Not `peek(0)`: on the circle of instants 0 is *ahead*
        // of a watermark in the upper half, so an untimed admission on a clock whose
        // origin is near `u64::MAX` would have moved the breaker's time forward.)
        self.clock.latest()
    }

    /// Takes a permit back with its call's outcome.
    #[inline(always)]
    pub fn record(&mut self, permit: Permit, outcome: Outcome, now: Nanos) -> Recorded {
        let now = self.clock.observe(now);
        let class = self.classify(outcome);
        // As in `acquire`: the inline path builds its result in registers.
        let fast = |transitions| Recorded {
            class,
            slow: false,
            stale: false,
            transitions,
        };
        match self.record_inline(&permit, class, now) {
            Some(None) => fast(Transitions::default()),
            Some(Some(trip)) => {
                let mut transitions = Transitions::default();
                transitions.push(trip);
                fast(transitions)
            }
            None => self.record_settled(permit, class, now),
        }
    }

    /// [`Self::record`] in the form of [`Self::acquire_into`]: the transitions, if any,
    /// are appended to `caused`; the rest comes back as a [`Verdict`].
    #[inline(always)]
    pub fn record_into(
        &mut self,
        permit: Permit,
        outcome: Outcome,
        now: Nanos,
        caused: &mut Option<Transitions>,
    ) -> Verdict {
        let now = self.clock.observe(now);
        let class = self.classify(outcome);
        match self.record_inline(&permit, class, now) {
            Some(trip) => {
                if let Some(trip) = trip {
                    report_one(caused, trip);
                }
                Verdict {
                    class,
                    slow: false,
                    stale: false,
                }
            }
            None => self.record_settled_into(permit, class, now, caused),
        }
    }

    #[inline(always)]
    fn classify(&self, outcome: Outcome) -> Class {
        classify(
            outcome,
            &self.config.fault_statuses,
            &self.config.fault_grpc_codes,
        )
    }

    /// The path that must cost nanoseconds, inline: a normal call of the current epoch
    /// back at a closed breaker that tracks no slow calls (time alone cannot move a
    /// closed breaker, and no success is slow). `Some` with the trip it caused, if any;
    /// `None` for the general path (always in WebAssembly: see `admit_inline`).
    #[inline(always)]
    fn record_inline(
        &mut self,
        permit: &Permit,
        class: Class,
        now: Nanos,
    ) -> Option<Option<Transition>> {
        if !cfg!(target_family = "wasm")
            && self.phase.state == State::Closed
            && permit.is_call_of_epoch(self.phase.epoch)
            && self.config.slow_call_duration.is_none()
            && self.started_this_phase(permit, now)
        {
            // `is_current` for a normal call in closed, checked above.
            self.in_flight.finish_untracked();
            Some(self.count_in_window(class, false, now, true))
        } else {
            None
        }
    }

    /// [`Self::record`] off its inline path.
    #[inline(never)]
    fn record_settled(&mut self, permit: Permit, class: Class, now: Nanos) -> Recorded {
        self.settled_record(permit, class, now)
    }

    /// [`Self::record_into`] off its inline path.
    #[inline(never)]
    fn record_settled_into(
        &mut self,
        permit: Permit,
        class: Class,
        now: Nanos,
        caused: &mut Option<Transitions>,
    ) -> Verdict {
        let Recorded {
            class,
            slow,
            stale,
            transitions,
        } = self.settled_record(permit, class, now);
        report(caused, &transitions);
        Verdict { class, slow, stale }
    }

    /// An outcome in every state: first the transitions time alone made due.
    #[inline(always)]
    fn settled_record(&mut self, permit: Permit, class: Class, now: Nanos) -> Recorded {
        let mut transitions = self.settle(now);
        let slow = class == Class::Success
            && self
                .config
                .slow_call_duration
                .is_some_and(|limit| since(now, permit.started) > limit);
        let current = self.is_current(&permit, now);
        if !current {
            bump(&mut self.stats.stale);
            if permit.slot() != 0 {
                self.probes
                    .release_lingering(permit.slot().saturating_sub(1), permit.started);
            }
        } else if permit.slot() == 0 {
            transitions.extend(self.finish_call(permit.started, class, slow, now));
        } else {
            transitions.extend(self.finish_probe(class, slow, now));
        }
        Recorded {
            class,
            slow,
            stale: !current,
            transitions,
        }
    }

    /// Records an outcome whose permit the host could not match: recorded already, or
    /// never issued (hosts that keep permits as numbers in a table of their own). It is
    /// classified and counted as stale, exactly like a permit of an earlier epoch, and
    /// changes nothing else.
    pub fn record_stale(&mut self, outcome: Outcome, now: Nanos) -> Recorded {
        let now = self.clock.observe(now);
        let transitions = self.settle(now);
        bump(&mut self.stats.stale);
        Recorded {
            class: classify(
                outcome,
                &self.config.fault_statuses,
                &self.config.fault_grpc_codes,
            ),
            slow: false,
            stale: true,
            transitions,
        }
    }

    /// Whether `permit` still holds anything here at `now`: its outcome would count (it
    /// is of the current epoch and still out), or it is a probe of an earlier round that
    /// keeps its slot until its outcome or its `probe-timeout`. A host that keeps permits
    /// in a table may drop those that hold nothing; their outcome would only be stale.
    pub fn holds(&self, permit: &Permit, now: Nanos) -> bool {
        let now = self.clock.peek(now);
        let current = permit.is_of_epoch(self.phase.epoch)
            && since(now, permit.started) <= since(now, self.phase.entered_at);
        match (permit.slot().checked_sub(1), self.phase.state) {
            (None, State::Closed | State::Disabled) => current,
            (None, _) => false,
            (Some(slot), state) => self.probes.holds(
                slot,
                permit.started,
                current && state == State::HalfOpen,
                now,
                self.config.probe_timeout,
            ),
        }
    }

    /// [`Self::record`] for a permit in its plain-number form.
    pub fn record_raw(
        &mut self,
        permit: RawPermit,
        outcome: Outcome,
        now: Nanos,
    ) -> Result<Recorded, MalformedPermit> {
        Ok(self.record(permit.into_permit()?, outcome, now))
    }

    /// The effective state at `now` (an `open` breaker whose cooldown has passed reads
    /// `half-open`). Changes nothing.
    pub fn state(&self, now: Nanos) -> State {
        self.projected(now).phase.state
    }

    /// Counters and state as of `now`. Changes nothing.
    pub fn metrics(&self, now: Nanos) -> Metrics {
        let now = self.clock.peek(now);
        let projection = self.projected(now);
        let mut transitions_by_route = self.stats.routes;
        projection.add_routes(&mut transitions_by_route);
        let Projection {
            phase,
            last,
            transitions,
            probe_timeouts,
            ..
        } = projection;
        Metrics {
            state: phase.state,
            epoch: phase.epoch,
            window: self.window.tally_at(now),
            in_flight: self.in_flight.count(),
            hung: self.in_flight.hung_at(now),
            probes_out: if probe_timeouts > 0 {
                // The projected timeout retired the round, as `settle` will: its probes
                // linger, and the one that timed out is out no more.
                let mut retired = self.probes.clone();
                retired.retire();
                retired.out(now, self.config.probe_timeout)
            } else {
                self.probes.out(now, self.config.probe_timeout)
            },
            admitted_total: self.stats.admitted,
            rejected_total: self.stats.rejected,
            successes_total: self.stats.successes,
            faults_total: self.stats.faults.saturating_add(probe_timeouts),
            stale_total: self.stats.stale,
            transitions_total: self.stats.transitions.saturating_add(transitions),
            transitions_by_route,
            time_in_state: since(now, phase.entered_at),
            cooldown_remaining: if phase.state == State::Open {
                phase.remaining(now)
            } else {
                0
            },
            last_transition: last,
        }
    }

    /// Forces the breaker open until [`Self::release`]. No-op when already isolated.
    pub fn isolate(&mut self, now: Nanos) -> Transitions {
        self.manual(now, |state| {
            (state != State::Isolated).then_some((State::Isolated, Reason::Isolated))
        })
    }

    /// Closes an isolated or disabled breaker, with an empty window. No-op otherwise.
    pub fn release(&mut self, now: Nanos) -> Transitions {
        self.manual(now, |state| {
            matches!(state, State::Isolated | State::Disabled)
                .then_some((State::Closed, Reason::Released))
        })
    }

    /// Admits everything and never trips, still measuring, until [`Self::release`].
    pub fn disable(&mut self, now: Nanos) -> Transitions {
        self.manual(now, |state| {
            (state != State::Disabled).then_some((State::Disabled, Reason::Disabled))
        })
    }

    /// Back to closed from any state, with an empty window and the configured cooldown.
    /// Always a transition (even closed → closed), so it also retires every permit out.
    pub fn reset(&mut self, now: Nanos) -> Transitions {
        self.manual(now, |_| Some((State::Closed, Reason::Reset)))
    }

    fn manual(
        &mut self,
        now: Nanos,
        decide: impl FnOnce(State) -> Option<(State, Reason)>,
    ) -> Transitions {
        let now = self.clock.observe(now);
        let mut transitions = self.settle(now);
        if let Some((to, reason)) = decide(self.phase.state) {
            transitions.push(self.enter(to, reason, now));
        }
        transitions
    }

    /// Applies the transitions time alone has made due.
    #[inline(always)]
    pub(crate) fn settle(&mut self, now: Nanos) -> Transitions {
        // Only open and half-open have clocks running; the hot paths (closed, and open
        // inside its cooldown) skip out.
        // (Everything here returns transitions by value rather than pushing through a
        // `&mut`: a borrowed list must live in memory, and copying it out costs the hot
        // path more than the breaker's own work.)
        match self.phase.state {
            State::Open if self.phase.remaining(now) > 0 => Transitions::default(),
            State::Open | State::HalfOpen => self.settle_timed(now),
            State::Closed | State::Isolated | State::Disabled => Transitions::default(),
        }
    }

    #[inline(never)]
    fn settle_timed(&mut self, now: Nanos) -> Transitions {
        let mut transitions = Transitions::default();
        for _ in 0..TIME_TRANSITIONS {
            let oldest = self.oldest_probe(now);
            match self.phase.due(now, oldest, &self.config) {
                Some((to, reason, at)) => {
                    if reason == Reason::ProbeTimeout {
                        bump(&mut self.stats.faults);
                    }
                    transitions.push(self.enter(to, reason, at));
                }
                None => break,
            }
        }
        transitions
    }

    fn oldest_probe(&self, now: Nanos) -> Option<Nanos> {
        if self.phase.state == State::HalfOpen {
            self.probes.oldest_current(now)
        } else {
            None
        }
    }

    /// Where time alone would have moved the breaker by `now`, without moving it.
    pub(crate) fn projected(&self, now: Nanos) -> Projection {
        let now = self.clock.peek(now);
        let mut projection = Projection {
            phase: self.phase,
            last: self.stats.last,
            transitions: 0,
            probe_timeouts: 0,
            routes: [None; TIME_TRANSITIONS],
        };
        let mut oldest = self.oldest_probe(now);
        for slot in 0..TIME_TRANSITIONS {
            let phase = &mut projection.phase;
            let Some((to, reason, at)) = phase.due(now, oldest, &self.config) else {
                break;
            };
            let transition = phase.enter(to, reason, at, &self.config);
            if let Some(route) = projection.routes.get_mut(slot) {
                *route = Some(transition.route());
            }
            projection.last = Some(transition);
            oldest = None; // a transition releases every probe
            bump(&mut projection.transitions);
            if reason == Reason::ProbeTimeout {
                bump(&mut projection.probe_timeouts);
            }
        }
        projection
    }

    #[cold]
    #[inline(never)]
    fn enter(&mut self, to: State, reason: Reason, at: Nanos) -> Transition {
        let from = self.phase.state;
        let transition = self.phase.enter(to, reason, at, &self.config);
        self.entered(from, transition)
    }

    /// The bookkeeping of every transition the phase has made.
    #[cold]
    pub(crate) fn entered(&mut self, from: State, transition: Transition) -> Transition {
        let (to, at) = (transition.to, transition.at);
        let opening = if to == State::Open {
            self.phase.open_for
        } else {
            0
        };
        self.fleet.announce(transition.reason, opening);
        bump(&mut self.stats.transitions);
        count_route(&mut self.stats.routes, transition.route());
        self.stats.last = Some(transition);
        // Permits of the old epoch are stale from here on: they hold nothing, except that a
        // re-opened round's probes linger in their slots (see `probes`).
        self.in_flight.clear(at);
        match (from, to) {
            (State::HalfOpen, State::Open) => self.probes.retire(),
            (State::Open, State::HalfOpen) => {}
            _ => self.probes.clear(),
        }
        if to == State::Closed {
            self.window.clear(at);
        }
        transition
    }

    #[inline(always)]
    fn reject(&mut self, reason: RejectReason, retry_after: Nanos) -> Rejection {
        if let Some(count) = self.stats.rejected.get_mut(usize::from(reason.code())) {
            bump(count);
        }
        Rejection {
            state: self.phase.state,
            reason,
            retry_after,
        }
    }

    #[inline(always)]
    fn admit_call(&mut self, now: Nanos) -> Permit {
        bump(&mut self.stats.admitted);
        self.in_flight.start(now);
        self.permit_for_call(now)
    }

    /// [`Self::admit_call`] for a breaker without hang tracking.
    #[inline(always)]
    fn admit_untracked_call(&mut self, now: Nanos) -> Permit {
        bump(&mut self.stats.admitted);
        self.in_flight.start_untracked();
        self.permit_for_call(now)
    }

    #[inline(always)]
    fn permit_for_call(&self, now: Nanos) -> Permit {
        Permit::new(self.phase.epoch, now, 0)
    }

    #[inline(always)]
    fn admit_closed(
        &mut self,
        now: Nanos,
        transitions: &mut Transitions,
    ) -> Result<Permit, Rejection> {
        if self.config.slow_call_duration.is_some() {
            if let Some(trip) = self.hang_trip(now) {
                transitions.push(trip);
                return Err(self.reject(RejectReason::Open, self.phase.remaining(now)));
            }
        }
        if self
            .config
            .max_in_flight
            .is_some_and(|cap| self.in_flight.count() >= cap)
        {
            return Err(self.reject(RejectReason::Saturated, 0));
        }
        Ok(self.admit_call(now))
    }

    #[inline(never)]
    fn admit_probe(&mut self, now: Nanos) -> Result<Permit, Rejection> {
        if !self.fleet.may_probe(now) {
            // Another member holds the fleet's probe lease: its round speaks for all.
            return Err(self.reject(RejectReason::ProbingElsewhere, 0));
        }
        let (limit, timeout) = (self.config.half_open_max_probes, self.config.probe_timeout);
        match self.probes.admit(limit, now, timeout) {
            Some(slot) => {
                bump(&mut self.stats.admitted);
                Ok(Permit::new(self.phase.epoch, now, slot.saturating_add(1)))
            }
            None => {
                let until_timeout = self.probes.oldest(now).map_or(0, |start| {
                    self.config.probe_timeout.saturating_sub(since(now, start))
                });
                Err(self.reject(RejectReason::Probing, until_timeout.min(PROBING_RETRY_CAP)))
            }
        }
    }

    /// Trips on hung calls.
    #[inline(never)]
    fn hang_trip(&mut self, now: Nanos) -> Option<Transition> {
        (self.in_flight.hung(now) >= self.config.failure_threshold)
            .then(|| self.enter(State::Open, Reason::HungCalls, now))
    }

    /// Whether `permit` started no earlier than the current phase, as seen from `now`.
    #[inline(always)]
    fn started_this_phase(&self, permit: &Permit, now: Nanos) -> bool {
        since(now, permit.started) <= since(now, self.phase.entered_at)
    }

    /// Whether `permit` was issued by this breaker in its current epoch and is still out.
    #[inline(always)]
    fn is_current(&mut self, permit: &Permit, now: Nanos) -> bool {
        if !permit.is_of_epoch(self.phase.epoch) || !self.started_this_phase(permit, now) {
            return false;
        }
        match (permit.slot(), self.phase.state) {
            (0, State::Closed | State::Disabled) => true,
            (0, _) => false,
            (slot, State::HalfOpen) => self.probes.release(slot.saturating_sub(1), permit.started),
            _ => false,
        }
    }

    #[inline(always)]
    fn count_outcome(&mut self, class: Class) {
        match class {
            Class::Success => bump(&mut self.stats.successes),
            Class::Fault => bump(&mut self.stats.faults),
            Class::Neutral => {}
        }
    }

    #[inline(always)]
    fn finish_call(
        &mut self,
        started: Nanos,
        class: Class,
        slow: bool,
        now: Nanos,
    ) -> Option<Transition> {
        // Read once: nothing below changes the state before a transition, and a local
        // spares the hot path a reload after every store into the window.
        let closed = self.phase.state == State::Closed;
        self.in_flight.finish(started, now);
        if let Some(trip) = self.count_in_window(class, slow, now, closed) {
            return Some(trip);
        }
        if closed && self.config.slow_call_duration.is_some() {
            return self.hang_trip(now);
        }
        None
    }

    /// Counts a normal call's outcome, and trips a `closed` breaker if a rule is now met.
    #[inline(always)]
    fn count_in_window(
        &mut self,
        class: Class,
        slow: bool,
        now: Nanos,
        closed: bool,
    ) -> Option<Transition> {
        self.count_outcome(class);
        if class == Class::Neutral {
            return None;
        }
        let tally = self.window.record(now, class == Class::Fault, slow);
        let reason = if closed {
            self.trip_reason(tally)
        } else {
            None
        };
        reason.map(|reason| self.enter(State::Open, reason, now))
    }

    /// The first trip rule the window's tally meets.
    #[inline(always)]
    fn trip_reason(&self, tally: Tally) -> Option<Reason> {
        // A window without a fault or a slow call meets no rule (`failure-threshold` and
        // every percentage are at least 1, and the tally holds the call just counted):
        // one test instead of four for the closed path's usual success.
        if (tally.faults | tally.slow) == 0 {
            return None;
        }
        let config = &self.config;
        if tally.calls < config.min_calls {
            return None;
        }
        let reached = |count: u32, percent: Option<u8>| {
            percent.is_some_and(|p| {
                u64::from(count).saturating_mul(100)
                    >= u64::from(p).saturating_mul(u64::from(tally.calls))
            })
        };
        if tally.faults >= config.failure_threshold {
            Some(Reason::FailureThreshold)
        } else if reached(tally.faults, config.failure_rate) {
            Some(Reason::FailureRate)
        } else if reached(tally.slow, config.slow_call_rate) {
            Some(Reason::SlowCallRate)
        } else {
            None
        }
    }

    #[inline(never)]
    fn finish_probe(&mut self, class: Class, slow: bool, now: Nanos) -> Option<Transition> {
        self.count_outcome(class);
        // When the operator asked to trip on slowness, a slow probe is no proof of health.
        let failed = match class {
            Class::Neutral => return None,
            Class::Fault => true,
            Class::Success => slow && self.config.slow_call_rate.is_some(),
        };
        let probes = &mut self.probes;
        probes.judged = probes.judged.saturating_add(1);
        if !failed {
            probes.successes = probes.successes.saturating_add(1);
        }
        let required = self.config.half_open_required_successes;
        let verdict = match self.config.half_open_success_rate {
            None if failed => Some((State::Open, Reason::ProbeFault)),
            None => {
                (probes.successes >= required).then_some((State::Closed, Reason::ProbesSucceeded))
            }
            Some(rate) => {
                let percent_of = |n: u32, of: u32| {
                    u64::from(n).saturating_mul(100)
                        >= u64::from(rate).saturating_mul(u64::from(of))
                };
                let still_to_judge = required.saturating_sub(probes.judged);
                if !percent_of(probes.successes.saturating_add(still_to_judge), required) {
                    Some((State::Open, Reason::ProbeRateMissed))
                } else if still_to_judge == 0 {
                    Some((State::Closed, Reason::ProbesSucceeded))
                } else {
                    None
                }
            }
        };
        verdict.map(|(to, reason)| self.enter(to, reason, now))
    }
}
