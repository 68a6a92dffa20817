//! Transitions: a change of state, why it happened, and the few a single call can cause.

use crate::state::State;
use crate::table::table;
use crate::time::Nanos;

table! {
    /// Why a transition happened.
    pub enum Reason {
        /// `failure-threshold` faults in the window (with `min-calls` calls).
        FailureThreshold = 0 => "failure-threshold",
        /// `failure-rate` reached.
        FailureRate = 1 => "failure-rate",
        /// `slow-call-rate` reached.
        SlowCallRate = 2 => "slow-call-rate",
        /// `failure-threshold` calls in flight for longer than `slow-call-duration`.
        HungCalls = 3 => "hung-calls",
        /// The cooldown passed.
        CooldownElapsed = 4 => "cooldown-elapsed",
        /// A probe failed.
        ProbeFault = 5 => "probe-fault",
        /// A probe had no outcome within `probe-timeout`.
        ProbeTimeout = 6 => "probe-timeout",
        /// Enough probes succeeded.
        ProbesSucceeded = 7 => "probes-succeeded",
        /// The probes' success rate fell short of `half-open-success-rate`.
        ProbeRateMissed = 8 => "probe-rate-missed",
        /// The operator isolated the breaker.
        Isolated = 9 => "isolated",
        /// The operator released an isolated or disabled breaker.
        Released = 10 => "released",
        /// The operator disabled the breaker.
        Disabled = 11 => "disabled",
        /// The operator reset the breaker.
        Reset = 12 => "reset",
        /// The state was exported half-open with probes out; it was restored open until
        /// those probes would have timed out.
        Restored = 13 => "restored",
    }
}

/// A change of state. Made in one place only (`Phase::enter`), so a transition the
/// breaker makes, one a read projects and one an export writes are built alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Transition {
    /// The state left.
    pub from: State,
    /// The state entered.
    pub to: State,
    /// Why.
    pub reason: Reason,
    /// The instant (host clock) it happened. For transitions that time alone causes
    /// (cooldown, probe timeout) this is when they fell due, which may be before the call
    /// that reports them.
    pub at: Nanos,
    /// The epoch entered.
    pub epoch: u64,
}

/// Most transitions one call can cause: time alone can make two due (a probe timeout that
/// re-opens, then a cooldown that has also passed), and the call itself one more (an
/// operator's `isolate`, say).
pub const MAX_TRANSITIONS: usize = 3;

/// The transitions one call caused, oldest first (at most [`MAX_TRANSITIONS`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transitions {
    items: [Option<Transition>; MAX_TRANSITIONS],
}

impl Transitions {
    #[inline]
    pub(crate) fn push(&mut self, transition: Transition) {
        if let Some(free) = self.items.iter_mut().find(|t| t.is_none()) {
            *free = Some(transition);
        } else if let Some(last) = self.items.last_mut() {
            // Unreachable by construction (see MAX_TRANSITIONS); keep the newest.
            *last = Some(transition);
        }
    }

    pub(crate) fn extend(&mut self, transition: Option<Transition>) {
        if let Some(transition) = transition {
            self.push(transition);
        }
    }

    /// No transition happened.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.iter().all(Option::is_none)
    }

    /// How many transitions happened.
    pub fn len(&self) -> usize {
        self.items.iter().flatten().count()
    }

    /// The transitions, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Transition> {
        self.items.iter().flatten()
    }

    /// The last transition, whose `to` is the state the call left the breaker in.
    pub fn last(&self) -> Option<&Transition> {
        self.iter().last()
    }
}

impl<'a> IntoIterator for &'a Transitions {
    type Item = &'a Transition;
    type IntoIter = core::iter::Flatten<core::slice::Iter<'a, Option<Transition>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter().flatten()
    }
}
