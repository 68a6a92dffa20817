//! The breaker: admission, outcomes, and the transitions between them.
//!
//! Two steps per call, as in gobreaker: [`Breaker::acquire`] admits or rejects, and
//! [`Breaker::record`] takes the permit back with the outcome. Every transition starts a
//! new epoch; a permit from an older epoch is *stale*, and its outcome changes nothing, so
//! a slow success from before a trip can never close a half-open breaker.

use crate::config::{Config, ConfigError};
use crate::exposition::Reading;
use crate::fleet::Fleet;
use crate::inflight::InFlight;
use crate::metrics::{bump, count_route, Metrics, Routes, Stats, REJECT_REASONS};
use crate::permit::Permit;
use crate::phase::Phase;
use crate::probes::Probes;
use crate::state::State;
use crate::time::{since, Nanos, Watermark};
use crate::transition::{Reason, Route, Transition, Transitions, MAX_TRANSITIONS};
use crate::window::Window;

mod admission;
mod fleet;
mod reconfigure;
mod recording;
mod snapshot;

pub use admission::Admission;
pub use reconfigure::Reconfigured;
pub use recording::{Recorded, Verdict};

/// Transitions time alone can make due at once: half-open → open when a probe times out,
/// then open → half-open when the cooldown has passed too. The second leaves no probe of
/// the new round out, so no third can follow.
const TIME_TRANSITIONS: usize = MAX_TRANSITIONS - 1;

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
    config: Config,
    clock: Watermark,
    phase: Phase,
    window: Window,
    in_flight: InFlight,
    probes: Probes,
    stats: Stats,
    /// The rejections shadow mode let through, by reason: this breaker's own count, which
    /// an export does not carry.
    shadow_rejected: [u64; REJECT_REASONS],
    /// The stay-away the outcome being recorded asked for (0: none), while
    /// [`Breaker::record_with_retry_after`] records it.
    asked: Nanos,
    fleet: Fleet,
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
            shadow_rejected: [0; REJECT_REASONS],
            asked: 0,
            fleet: Fleet::new(config.fleet_quorum),
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The latest instant the breaker has seen: a `now` below it is treated as it.
    #[inline(always)]
    pub fn latest(&self) -> Nanos {
        // The watermark itself. (Not `peek(0)`: on the circle of instants 0 is *ahead*
        // of a watermark in the upper half, so an untimed admission on a clock whose
        // origin is near `u64::MAX` would have moved the breaker's time forward.)
        self.clock.latest()
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
            shadow_rejected_total: self.shadow_rejected,
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

    /// [`metrics`](Self::metrics) and [`fleet_status`](Self::fleet_status) at `now`, for
    /// the exposition: a host holding the breaker's lock takes both in one hold.
    pub fn reading(&self, now: Nanos) -> Reading {
        let metrics = self.metrics(now);
        // The snapshot's effective state serves the fleet status too: one projection, so
        // a reading costs one `metrics()` call and a few field reads.
        let fleet = self.fleet_status_in(self.clock.peek(now), metrics.state);
        Reading { metrics, fleet }
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
        if to == State::Open && self.asked > 0 && reason.is_by_outcome() {
            // The upstream's own stay-away, as long as the config lets an opening last.
            let asked = self.asked.min(self.config.longest_cooldown());
            self.phase.open_for = self.phase.open_for.max(asked);
            self.phase.asked = asked;
        }
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
        self.fleet.announce(transition.reason, opening, at);
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
}
