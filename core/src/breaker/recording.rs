//! Recording: an outcome taken back with its permit, counted, and the trips it causes.

use super::{report, report_one, Breaker};
use crate::metrics::bump;
use crate::outcome::{classify, Class, Outcome};
use crate::permit::{MalformedPermit, Permit, RawPermit};
use crate::state::State;
use crate::time::{since, Nanos};
use crate::transition::{Reason, Transition, Transitions};
use crate::window::Tally;

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

impl Breaker {
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

    /// [`Self::record`] for an answer that asked its callers to stay away for
    /// `retry_after` (an HTTP `Retry-After` on a 429 or 503, a gRPC pushback: see
    /// [`retry_after`](crate::retry_after)). When this outcome trips the breaker (or fails
    /// its probe round), it opens for at least that long, as long as the config lets an
    /// opening last (`max-cooldown`; without it, what the backoff grows to); the
    /// rejections' `retry-after` and a fleet's announcement carry it. Otherwise it is
    /// [`Self::record`].
    pub fn record_with_retry_after(
        &mut self,
        permit: Permit,
        outcome: Outcome,
        retry_after: Nanos,
        now: Nanos,
    ) -> Recorded {
        self.asked = retry_after;
        let recorded = self.record(permit, outcome, now);
        self.asked = 0;
        recorded
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
    /// `None` for the general path.
    #[inline(always)]
    fn record_inline(
        &mut self,
        permit: &Permit,
        class: Class,
        now: Nanos,
    ) -> Option<Option<Transition>> {
        if self.phase.state == State::Closed
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
        if permit.is_shadow() {
            // A call only shadow mode let through: an enforcing breaker never saw it.
            return Recorded {
                class,
                slow: false,
                stale: false,
                transitions,
            };
        }
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
        if permit.is_shadow() {
            // It holds no place, but a table that dropped it would count its outcome as
            // stale: it is kept through its epoch, and after as long as a probe would be.
            return permit.is_of_epoch(self.phase.epoch)
                || since(self.clock.peek(now), permit.started) <= self.config.probe_timeout;
        }
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
        // `None`: the window holds no fault and no slow call, so it meets no rule
        // (`failure-threshold` and every percentage are at least 1, and the tally holds
        // the call just counted). The window tests that on its own sums, before it makes a
        // tally of them: one test for the closed path's usual success.
        let tally = self.window.record(now, class == Class::Fault, slow)?;
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
