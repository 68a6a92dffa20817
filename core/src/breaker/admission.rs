//! Admission: `acquire` in every form, and the decisions behind it.

use super::{report, Breaker};
use crate::metrics::bump;
use crate::permit::Permit;
use crate::rejection::{RejectReason, Rejection};
use crate::state::State;
use crate::time::{since, Nanos, SECOND};
use crate::transition::Transitions;

/// Longest `retry-after` given to callers turned away while probes are out: probes
/// usually answer in far less than `probe-timeout`, and a caller that comes back early
/// is turned away again for a few nanoseconds.
const PROBING_RETRY_CAP: Nanos = SECOND;

/// The result of [`Breaker::acquire`].
#[must_use = "an admitted call's permit must be recorded"]
#[derive(Debug, PartialEq, Eq)]
pub struct Admission {
    /// A permit, or why not.
    pub decision: Result<Permit, Rejection>,
    /// Transitions this call caused (a cooldown that passed, a hang that tripped).
    pub transitions: Transitions,
}

impl Breaker {
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
        // A closed breaker without hang detection or a concurrency cap (time alone cannot
        // move it, nothing can turn the call away), and an open one inside its cooldown.
        match self.phase.state {
            State::Closed => (self.config.slow_call_duration.is_none()
                && self.config.max_in_flight.is_none())
            .then(|| Ok(self.admit_untracked_call(now))),
            State::Open => {
                let remaining = self.phase.remaining(now);
                (remaining > 0).then(|| self.refuse(RejectReason::Open, remaining, now))
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
            State::Open => self.refuse(RejectReason::Open, self.phase.remaining(now), now),
            State::HalfOpen => self.admit_probe(now),
            State::Isolated => self.refuse(RejectReason::Isolated, 0, now),
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

    /// Turns a call away, or in shadow mode (SPEC § Shadow mode) counts the rejection it
    /// would have been and admits it with a shadow permit, whose outcome counts nothing.
    #[inline(always)]
    fn refuse(
        &mut self,
        reason: RejectReason,
        retry_after: Nanos,
        now: Nanos,
    ) -> Result<Permit, Rejection> {
        if self.config.shadow {
            return Ok(self.shadow_permit(reason, now));
        }
        Err(self.reject(reason, retry_after))
    }

    #[cold]
    fn shadow_permit(&mut self, reason: RejectReason, now: Nanos) -> Permit {
        if let Some(count) = self.shadow_rejected.get_mut(usize::from(reason.code())) {
            bump(count);
        }
        Permit::shadow(self.phase.epoch, now)
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
                return self.refuse(RejectReason::Open, self.phase.remaining(now), now);
            }
        }
        if self
            .config
            .max_in_flight
            .is_some_and(|cap| self.in_flight.count() >= cap)
        {
            return self.refuse(RejectReason::Saturated, 0, now);
        }
        Ok(self.admit_call(now))
    }

    #[inline(never)]
    fn admit_probe(&mut self, now: Nanos) -> Result<Permit, Rejection> {
        if !self.fleet.may_probe(now, self.config.probe_timeout) {
            // Another member holds the fleet's probe lease (its round speaks for all), or
            // nobody does: this caller is why this member asks for it.
            self.fleet.asked = true;
            return self.refuse(RejectReason::ProbingElsewhere, 0, now);
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
                let retry_after = until_timeout.min(PROBING_RETRY_CAP);
                self.refuse(RejectReason::Probing, retry_after, now)
            }
        }
    }
}
