//! The values the breaker hands back: states, transitions, rejections.
//!
//! Every enum has a `name()` with the kebab-case spelling the WIT interface and the test
//! vectors use, so hosts never invent their own.

use core::fmt;

use crate::time::Nanos;

/// The breaker's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Admitting calls and watching the window.
    Closed,
    /// Rejecting every call until the cooldown passes.
    Open,
    /// Admitting a few probes to test the upstream.
    HalfOpen,
    /// Forced open by the operator until released.
    Isolated,
    /// Admitting everything and never tripping, still measuring.
    Disabled,
}

/// Why a transition happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// `failure-threshold` faults in the window (with `min-calls` calls).
    FailureThreshold,
    /// `failure-rate` reached.
    FailureRate,
    /// `slow-call-rate` reached.
    SlowCallRate,
    /// `failure-threshold` calls in flight for longer than `slow-call-duration`.
    HungCalls,
    /// The cooldown passed.
    CooldownElapsed,
    /// A probe failed.
    ProbeFault,
    /// A probe had no outcome within `probe-timeout`.
    ProbeTimeout,
    /// Enough probes succeeded.
    ProbesSucceeded,
    /// The probes' success rate fell short of `half-open-success-rate`.
    ProbeRateMissed,
    /// The operator isolated the breaker.
    Isolated,
    /// The operator released an isolated or disabled breaker.
    Released,
    /// The operator disabled the breaker.
    Disabled,
    /// The operator reset the breaker.
    Reset,
    /// The state was exported half-open with probes out; it was restored open until
    /// those probes would have timed out.
    Restored,
}

/// Why a call was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// The breaker is open.
    Open,
    /// Half-open, and every probe slot is taken.
    Probing,
    /// Forced open by the operator.
    Isolated,
    /// Closed, but `max-in-flight` calls are already out.
    Saturated,
}

impl RejectReason {
    /// Every reason, in the order metrics count them.
    pub const ALL: [Self; 4] = [Self::Open, Self::Probing, Self::Isolated, Self::Saturated];

    pub(crate) fn index(self) -> usize {
        match self {
            Self::Open => 0,
            Self::Probing => 1,
            Self::Isolated => 2,
            Self::Saturated => 3,
        }
    }
}

macro_rules! names {
    ($ty:ty { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// The kebab-case name.
            pub const fn name(self) -> &'static str {
                match self { $(Self::$variant => $name),+ }
            }

            /// Parses the kebab-case name.
            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($name => Some(Self::$variant),)+ _ => None }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

names!(State {
    Closed => "closed",
    Open => "open",
    HalfOpen => "half-open",
    Isolated => "isolated",
    Disabled => "disabled",
});

names!(Reason {
    FailureThreshold => "failure-threshold",
    FailureRate => "failure-rate",
    SlowCallRate => "slow-call-rate",
    HungCalls => "hung-calls",
    CooldownElapsed => "cooldown-elapsed",
    ProbeFault => "probe-fault",
    ProbeTimeout => "probe-timeout",
    ProbesSucceeded => "probes-succeeded",
    ProbeRateMissed => "probe-rate-missed",
    Isolated => "isolated",
    Released => "released",
    Disabled => "disabled",
    Reset => "reset",
    Restored => "restored",
});

names!(RejectReason {
    Open => "open",
    Probing => "probing",
    Isolated => "isolated",
    Saturated => "saturated",
});

/// A call the breaker turned away. A value, not an error: rejecting is the breaker
/// working.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rejection {
    /// The state that rejected.
    pub state: State,
    /// Why.
    pub reason: RejectReason,
    /// When trying again could succeed, in nanoseconds from now: the rest of the cooldown
    /// when open; when probing, the time until the oldest probe would time out, at most
    /// one second; 0 (no estimate) when isolated or saturated.
    pub retry_after: Nanos,
}

/// A change of state.
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

/// The transitions one call caused, oldest first. At most three: time alone can make two
/// due (a probe timeout that re-opens, then a cooldown that has also passed), and the call
/// itself can make one more (an operator's `isolate`, say).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transitions {
    items: [Option<Transition>; 3],
}

impl Transitions {
    #[inline]
    pub(crate) fn push(&mut self, transition: Transition) {
        if let Some(free) = self.items.iter_mut().find(|t| t.is_none()) {
            *free = Some(transition);
        } else if let Some(last) = self.items.last_mut() {
            // Unreachable by construction (see the type's doc); keep the newest.
            *last = Some(transition);
        }
    }

    pub(crate) fn extend(&mut self, transition: Option<Transition>) {
        if let Some(transition) = transition {
            self.push(transition);
        }
    }

    /// No transition happened.
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
