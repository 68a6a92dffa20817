//! The breaker: admission, outcomes, and the transitions between them.
//!
//! Two steps per call, as in gobreaker: [`Breaker::acquire`] admits or rejects, and
//! [`Breaker::record`] takes the permit back with the outcome. Every transition starts a
//! new epoch; a permit from an older epoch is *stale*, and its outcome changes nothing, so
//! a slow success from before a trip can never close a half-open breaker.

use crate::config::{Config, ConfigError};
use crate::inflight::InFlight;
use crate::metrics::{bump, Metrics, Stats};
use crate::outcome::{classify, Class, Outcome};
use crate::permit::{MalformedPermit, Permit, RawPermit};
use crate::phase::Phase;
use crate::probes::Probes;
use crate::rejection::{RejectReason, Rejection};
use crate::state::State;
use crate::time::{since, Nanos, Watermark, SECOND};
use crate::transition::{Reason, Transition, Transitions, MAX_TRANSITIONS};
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

/// The breaker as time alone would have moved it (see [`Breaker::projected`]).
pub(crate) struct Projection {
    pub(crate) phase: Phase,
    pub(crate) last: Option<Transition>,
    pub(crate) transitions: u64,
    pub(crate) probe_timeouts: u64,
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
        let mut transitions = self.settle(now);
        let decision = match self.phase.state {
            State::Closed => self.admit_closed(now, &mut transitions),
            State::Disabled => Ok(self.admit_call(now)),
            State::Open => Err(self.reject(RejectReason::Open, self.phase.remaining(now))),
            State::HalfOpen => self.admit_probe(now),
            State::Isolated => Err(self.reject(RejectReason::Isolated, 0)),
        };
        if decision.is_ok() {
            bump(&mut self.stats.admitted);
        }
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
        (self.phase.state == State::Closed && self.config.slow_call_duration.is_none())
            .then(|| self.acquire(self.latest()))
    }

    /// The latest instant the breaker has seen: a `now` below it is treated as it.
    pub fn latest(&self) -> Nanos {
        self.clock.latest()
    }

    /// Takes a permit back with its call's outcome.
    #[inline(always)]
    pub fn record(&mut self, permit: Permit, outcome: Outcome, now: Nanos) -> Recorded {
        let now = self.clock.observe(now);
        let mut transitions = self.settle(now);
        let class = classify(
            outcome,
            &self.config.fault_statuses,
            &self.config.fault_grpc_codes,
        );
        let slow = class == Class::Success
            && self
                .config
                .slow_call_duration
                .is_some_and(|limit| since(now, permit.started) > limit);
        let current = self.is_current(&permit, now);
        if !current {
            bump(&mut self.stats.stale);
            if permit.slot != 0 {
                self.probes
                    .release_lingering(permit.slot.saturating_sub(1), permit.started);
            }
        } else if permit.slot == 0 {
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
        let current = permit.epoch == self.phase.epoch
            && since(now, permit.started) <= since(now, self.phase.entered_at);
        match (permit.slot.checked_sub(1), self.phase.state) {
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
        let Projection {
            phase,
            last,
            transitions,
            probe_timeouts,
        } = self.projected(now);
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
    fn settle(&mut self, now: Nanos) -> Transitions {
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
        };
        let mut oldest = self.oldest_probe(now);
        for _ in 0..TIME_TRANSITIONS {
            let phase = &mut projection.phase;
            let Some((to, reason, at)) = phase.due(now, oldest, &self.config) else {
                break;
            };
            projection.last = Some(phase.enter(to, reason, at, &self.config));
            oldest = None; // a transition releases every probe
            bump(&mut projection.transitions);
            if reason == Reason::ProbeTimeout {
                bump(&mut projection.probe_timeouts);
            }
        }
        projection
    }

    fn enter(&mut self, to: State, reason: Reason, at: Nanos) -> Transition {
        let from = self.phase.state;
        let transition = self.phase.enter(to, reason, at, &self.config);
        bump(&mut self.stats.transitions);
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

    fn admit_call(&mut self, now: Nanos) -> Permit {
        self.in_flight.start(now);
        Permit {
            epoch: self.phase.epoch,
            started: now,
            slot: 0,
        }
    }

    #[inline]
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

    fn admit_probe(&mut self, now: Nanos) -> Result<Permit, Rejection> {
        let (limit, timeout) = (self.config.half_open_max_probes, self.config.probe_timeout);
        match self.probes.admit(limit, now, timeout) {
            Some(slot) => Ok(Permit {
                epoch: self.phase.epoch,
                started: now,
                slot: slot.saturating_add(1),
            }),
            None => {
                let until_timeout = self.probes.oldest(now).map_or(0, |start| {
                    self.config.probe_timeout.saturating_sub(since(now, start))
                });
                Err(self.reject(RejectReason::Probing, until_timeout.min(PROBING_RETRY_CAP)))
            }
        }
    }

    /// Trips on hung calls.
    fn hang_trip(&mut self, now: Nanos) -> Option<Transition> {
        (self.in_flight.hung(now) >= self.config.failure_threshold)
            .then(|| self.enter(State::Open, Reason::HungCalls, now))
    }

    /// Whether `permit` was issued by this breaker in its current epoch and is still out.
    fn is_current(&mut self, permit: &Permit, now: Nanos) -> bool {
        if permit.epoch != self.phase.epoch
            || since(now, permit.started) > since(now, self.phase.entered_at)
        {
            return false;
        }
        match (permit.slot, self.phase.state) {
            (0, State::Closed | State::Disabled) => true,
            (0, _) => false,
            (slot, State::HalfOpen) => self.probes.release(slot.saturating_sub(1), permit.started),
            _ => false,
        }
    }

    fn count_outcome(&mut self, class: Class) {
        match class {
            Class::Success => bump(&mut self.stats.successes),
            Class::Fault => bump(&mut self.stats.faults),
            Class::Neutral => {}
        }
    }

    #[inline]
    fn finish_call(
        &mut self,
        started: Nanos,
        class: Class,
        slow: bool,
        now: Nanos,
    ) -> Option<Transition> {
        self.in_flight.finish(started, now);
        self.count_outcome(class);
        if class != Class::Neutral {
            let tally = self.window.record(now, class == Class::Fault, slow);
            if self.phase.state == State::Closed {
                if let Some(reason) = self.trip_reason(tally) {
                    return Some(self.enter(State::Open, reason, now));
                }
            }
        }
        if self.phase.state == State::Closed && self.config.slow_call_duration.is_some() {
            return self.hang_trip(now);
        }
        None
    }

    /// The first trip rule the window's tally meets.
    #[inline]
    fn trip_reason(&self, tally: Tally) -> Option<Reason> {
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
