//! The calls a fuzz input makes on a watched breaker: acquire, record (real, forged and
//! stale permits), drop, the operator's calls; each checked as it returns.

use arbitrary::{Result, Unstructured};
use tripgate_core::{
    Class, Metrics, Outcome, Permit, RawPermit, Reason, RejectReason, Rejection, State,
    Transitions, SECOND,
};

use crate::input;

use super::{permit_is_probe, plus_stale, Watch};

impl Watch {
    pub(super) fn acquire(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let (reading, now) = self.reading(u)?;
        let before = self.b.metrics(now);
        let admission = self.b.acquire(reading);
        let hang = self.config.slow_call_duration.is_some()
            && before.state == State::Closed
            && before.hung >= self.config.failure_threshold;
        let after = self.b.metrics(now);
        match admission.decision {
            Ok(permit) => self.admitted(permit, &before, &after, hang, now),
            Err(r) => self.rejected(&r, &before, hang, &admission.transitions),
        }
        self.after_call(now, &admission.transitions, "acquire");
        Ok(())
    }

    /// An admission, checked against the metrics before and after it; the permit is held.
    fn admitted(
        &mut self,
        permit: Permit,
        before: &Metrics,
        after: &Metrics,
        hang: bool,
        now: u64,
    ) {
        self.counts.admitted += 1;
        assert!(
            matches!(
                before.state,
                State::Closed | State::Disabled | State::HalfOpen
            ),
            "admitted while {:?}",
            before.state
        );
        assert!(!hang, "admitted past a hang trip");
        assert_eq!(permit.is_probe(), before.state == State::HalfOpen, "probe");
        assert_eq!(
            permit.started(),
            now,
            "a permit starts at the observed instant"
        );
        assert_eq!(permit.epoch(), after.epoch, "a permit carries the epoch");
        if before.state == State::HalfOpen {
            assert!(before.probes_out < self.config.half_open_max_probes);
            assert_eq!(after.probes_out, before.probes_out + 1, "probe slot");
        }
        if before.state == State::Closed {
            if let Some(cap) = self.config.max_in_flight {
                assert!(before.in_flight < cap, "admitted past max-in-flight");
            }
        }
        let raw = permit.into_raw();
        assert_eq!(raw.into_permit().map(|p| p.into_raw()), Ok(raw));
        self.held.push(raw);
    }

    /// A rejection, checked against the metrics before it: its reason is the one the state
    /// and the configuration give.
    fn rejected(&mut self, r: &Rejection, before: &Metrics, hang: bool, transitions: &Transitions) {
        self.counts.rejected[usize::from(r.reason.code())] += 1;
        match r.reason {
            RejectReason::Open if hang => {
                assert_eq!(r.state, State::Open);
                let last = transitions.last().expect("the hang trip");
                assert_eq!(last.reason, Reason::HungCalls);
            }
            RejectReason::Open => {
                assert_eq!((before.state, r.state), (State::Open, State::Open));
                assert_eq!(r.retry_after, before.cooldown_remaining, "retry-after");
                assert!(r.retry_after > 0);
            }
            RejectReason::Probing => {
                assert_eq!((before.state, r.state), (State::HalfOpen, State::HalfOpen));
                assert_eq!(before.probes_out, self.config.half_open_max_probes);
                assert!(r.retry_after <= SECOND, "probing retry-after {r:?}");
            }
            RejectReason::Isolated => {
                assert_eq!((before.state, r.state), (State::Isolated, State::Isolated));
                assert_eq!(r.retry_after, 0);
            }
            RejectReason::Saturated => {
                assert_eq!((before.state, r.state), (State::Closed, State::Closed));
                assert!(
                    self.config
                        .max_in_flight
                        .is_some_and(|cap| before.in_flight >= cap),
                    "saturated below max-in-flight"
                );
                assert_eq!(r.retry_after, 0);
            }
            RejectReason::ProbingElsewhere => {
                // Only a fleet member without the probe lease, which these breakers never
                // are.
                assert!(
                    self.config.fleet_quorum.is_some(),
                    "probing-elsewhere off fleet"
                );
                assert_eq!((before.state, r.state), (State::HalfOpen, State::HalfOpen));
            }
        }
    }

    pub(super) fn acquire_untimed(&mut self) {
        let now = self.latest;
        let timeless =
            self.b.metrics(now).state == State::Closed && self.config.slow_call_duration.is_none();
        match self.b.acquire_untimed() {
            Some(admission) => {
                assert!(timeless, "acquire_untimed admitted where time matters");
                match admission.decision {
                    Ok(permit) => {
                        self.counts.admitted += 1;
                        assert_eq!(permit.started(), now);
                        self.held.push(permit.into_raw());
                    }
                    Err(r) => {
                        assert_eq!(r.reason, RejectReason::Saturated);
                        self.counts.rejected[usize::from(r.reason.code())] += 1;
                    }
                }
                self.after_call(now, &admission.transitions, "acquire_untimed");
            }
            None => assert!(!timeless, "acquire_untimed refused a closed breaker"),
        }
    }

    /// The class SPEC.md gives an outcome under this config's fault sets.
    pub(super) fn class_of(&self, outcome: Outcome) -> Class {
        let fault = |yes: bool| if yes { Class::Fault } else { Class::Success };
        match outcome {
            Outcome::Success => Class::Success,
            Outcome::Status(s) => fault(self.config.fault_statuses.contains(s.get())),
            Outcome::Grpc(g) => fault(self.config.fault_grpc_codes.contains(g.get())),
            Outcome::Timeout | Outcome::ConnectionError | Outcome::Failure => Class::Fault,
            Outcome::Cancelled | Outcome::Ignored => Class::Neutral,
        }
    }

    pub(super) fn record(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let index = u.choose_index(self.held.len())?;
        let raw = self.held.swap_remove(index);
        let outcome = input::outcome(u)?;
        let (reading, now) = self.reading(u)?;
        let permit = raw.into_permit().expect("issued permits are well formed");
        let holds = self.b.holds(&permit, now);
        let before = self.b.metrics(now);
        let recorded = if u.arbitrary()? {
            self.b.record(permit, outcome, reading)
        } else {
            self.b.record_raw(raw, outcome, reading).expect("issued")
        };
        let after = self.b.metrics(now);
        assert_eq!(
            recorded.class,
            self.class_of(outcome),
            "class of {outcome:?}"
        );
        assert!(
            !recorded.slow
                || (recorded.class == Class::Success && self.config.slow_call_duration.is_some()),
            "slow {recorded:?}"
        );
        if recorded.stale {
            self.counts.stale += 1;
        }
        let quiet = recorded.transitions.is_empty();
        if !holds {
            assert!(
                recorded.stale,
                "a permit that holds nothing counted: {raw:?}"
            );
            if quiet {
                assert_eq!(
                    after,
                    plus_stale(&before),
                    "a permit holding nothing changed"
                );
            }
        }
        if recorded.stale && quiet {
            assert_eq!(
                (after.state, after.epoch, after.window, after.in_flight),
                (before.state, before.epoch, before.window, before.in_flight),
                "a stale outcome changed the breaker"
            );
            assert!(after.probes_out <= before.probes_out);
        }
        if !recorded.stale && quiet {
            if permit_is_probe(raw) {
                assert_eq!(after.probes_out + 1, before.probes_out, "probe slot freed");
            } else {
                if !self.forged {
                    assert_eq!(after.in_flight + 1, before.in_flight, "in-flight released");
                }
                if recorded.class == Class::Neutral {
                    assert_eq!(after.window, before.window, "a neutral outcome counted");
                } else if self.config.window_calls.is_none() {
                    assert_eq!(after.window.calls, before.window.calls.saturating_add(1));
                }
            }
        }
        self.after_call(now, &recorded.transitions, "record");
        Ok(())
    }

    /// A raw permit nobody issued: refused if its slot is impossible, else counted or
    /// stale, never a panic.
    pub(super) fn record_forged(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let raw = RawPermit {
            ticket: input::number(u)?,
            started: if u.arbitrary()? {
                self.latest.wrapping_sub(input::duration(u)?)
            } else {
                u.arbitrary()?
            },
        };
        let outcome = input::outcome(u)?;
        let (reading, now) = self.reading(u)?;
        let before = self.b.clone();
        // Slots 1-64 are probes', 127 a shadow permit's (whose outcome counts nothing).
        let slot = raw.ticket & 127;
        match self.b.record_raw(raw, outcome, reading) {
            Err(_) => {
                assert!(
                    slot > 64 && slot != 127,
                    "a well-formed ticket refused: {raw:?}"
                );
                assert_eq!(self.b, before, "a refused ticket changed the breaker");
            }
            Ok(recorded) => {
                assert!(
                    slot <= 64 || slot == 127,
                    "an impossible slot accepted: {raw:?}"
                );
                if slot == 127 {
                    assert!(!recorded.stale, "a shadow permit is never stale");
                } else if recorded.stale {
                    self.counts.stale += 1;
                } else {
                    self.forged = true;
                }
                self.after_call(now, &recorded.transitions, "record_raw (forged)");
            }
        }
        Ok(())
    }

    pub(super) fn record_stale(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let outcome = input::outcome(u)?;
        let (reading, now) = self.reading(u)?;
        let before = self.b.metrics(now);
        let recorded = self.b.record_stale(outcome, reading);
        assert!(recorded.stale && !recorded.slow);
        assert_eq!(recorded.class, self.class_of(outcome));
        assert_eq!(
            self.b.metrics(now),
            plus_stale(&before),
            "record_stale changed more"
        );
        self.counts.stale += 1;
        self.after_call(now, &recorded.transitions, "record_stale");
        Ok(())
    }

    /// A permit given up without an outcome, as a host that lost it would (raw permits
    /// have no destructor: it stays out until the state changes or it times out).
    pub(super) fn drop_permit(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if !self.held.is_empty() {
            let index = u.choose_index(self.held.len())?;
            self.held.swap_remove(index);
        }
        Ok(())
    }

    pub(super) fn manual(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let (reading, now) = self.reading(u)?;
        let before = self.b.metrics(now).state;
        let op = u.int_in_range(0..=3)?;
        let (transitions, expected) = match op {
            0 => (
                self.b.isolate(reading),
                (before != State::Isolated).then_some((State::Isolated, Reason::Isolated)),
            ),
            1 => (
                self.b.release(reading),
                matches!(before, State::Isolated | State::Disabled)
                    .then_some((State::Closed, Reason::Released)),
            ),
            2 => (
                self.b.disable(reading),
                (before != State::Disabled).then_some((State::Disabled, Reason::Disabled)),
            ),
            _ => (self.b.reset(reading), Some((State::Closed, Reason::Reset))),
        };
        let own = transitions.last().filter(|t| {
            matches!(
                t.reason,
                Reason::Isolated | Reason::Released | Reason::Disabled | Reason::Reset
            )
        });
        assert_eq!(
            own.map(|t| (t.to, t.reason)),
            expected,
            "manual op {op} from {before:?}: {transitions:?}"
        );
        let m = self.b.metrics(now);
        if expected.is_some_and(|(to, _)| to == State::Closed) {
            assert_eq!((m.window.calls, m.in_flight, m.probes_out), (0, 0, 0));
        }
        self.after_call(now, &transitions, "manual");
        Ok(())
    }
}
