//! Transitions: a change of state, why it happened, and the few a single call can cause.

use core::fmt;

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
        /// The fleet opened (fleet mode): another member's trip, or its failed probe round.
        FleetOpen = 14 => "fleet-open",
        /// The fleet's probe round succeeded (fleet mode).
        FleetClose = 15 => "fleet-close",
    }
}

impl Reason {
    /// Whether a transition for this reason is caused by an outcome being recorded: a trip
    /// rule met, a probe's fault, a probe round's rate missed.
    pub const fn is_by_outcome(self) -> bool {
        matches!(
            self,
            Self::FailureThreshold
                | Self::FailureRate
                | Self::SlowCallRate
                | Self::ProbeFault
                | Self::ProbeRateMissed
        )
    }

    /// The state a transition for this reason enters: every reason leads to exactly one
    /// state, so a transition's `to` never needs counting apart from its reason.
    pub const fn to(self) -> State {
        match self {
            Self::FailureThreshold
            | Self::FailureRate
            | Self::SlowCallRate
            | Self::HungCalls
            | Self::ProbeFault
            | Self::ProbeTimeout
            | Self::ProbeRateMissed
            | Self::Restored
            | Self::FleetOpen => State::Open,
            Self::CooldownElapsed => State::HalfOpen,
            Self::ProbesSucceeded | Self::Released | Self::Reset | Self::FleetClose => {
                State::Closed
            }
            Self::Isolated => State::Isolated,
            Self::Disabled => State::Disabled,
        }
    }
}

/// A way a transition can go: the state it leaves and why (the reason fixes the state it
/// enters, [`Reason::to`]). The unit the lifetime transition counters count in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Route {
    /// The state left.
    pub from: State,
    /// Why.
    pub reason: Reason,
}

impl Route {
    /// The state entered.
    pub const fn to(self) -> State {
        self.reason.to()
    }

    /// The route's position in [`ROUTES`], which is also the position of its counter in
    /// [`Metrics::transitions_by_route`](crate::Metrics::transitions_by_route).
    pub fn index(self) -> Option<usize> {
        // A table lookup, not a search of ROUTES: a search compiles to ~760 bytes of
        // WebAssembly, and the component has a size budget.
        let index = ROUTE_INDEX
            .get(usize::from(self.reason.code()))?
            .get(usize::from(self.from.code()))?;
        (*index != NO_ROUTE).then_some(usize::from(*index))
    }
}

const fn route(from: State, reason: Reason) -> Route {
    Route { from, reason }
}

/// How many routes there are (the length of
/// [`Metrics::transitions_by_route`](crate::Metrics::transitions_by_route)).
pub const ROUTE_COUNT: usize = 29;

/// Every route a transition can take, in counter order: the breaker's state machine as a
/// list. Trips leave `closed` only (the window and hang detection run there alone), a
/// cooldown ends an opening, probes decide a half-open round, an import that finds probes
/// out re-opens a half-open state; an operator isolates or disables from any other state,
/// releases an isolated or disabled breaker, and resets from anywhere (`Breaker::manual`);
/// in fleet mode the fleet opens a closed or half-open member (an open one only has its
/// cooldown set) and closes an open or half-open one (`Breaker::fleet_apply`).
/// The model-based tests check that every transition of every random history is on this
/// list and that the route counters add up to `transitions_total`.
pub const ROUTES: [Route; ROUTE_COUNT] = {
    use Reason as R;
    use State as S;
    [
        route(S::Closed, R::FailureThreshold),
        route(S::Closed, R::FailureRate),
        route(S::Closed, R::SlowCallRate),
        route(S::Closed, R::HungCalls),
        route(S::Open, R::CooldownElapsed),
        route(S::HalfOpen, R::ProbeFault),
        route(S::HalfOpen, R::ProbeTimeout),
        route(S::HalfOpen, R::ProbesSucceeded),
        route(S::HalfOpen, R::ProbeRateMissed),
        route(S::HalfOpen, R::Restored),
        route(S::Closed, R::Isolated),
        route(S::Open, R::Isolated),
        route(S::HalfOpen, R::Isolated),
        route(S::Disabled, R::Isolated),
        route(S::Isolated, R::Released),
        route(S::Disabled, R::Released),
        route(S::Closed, R::Disabled),
        route(S::Open, R::Disabled),
        route(S::HalfOpen, R::Disabled),
        route(S::Isolated, R::Disabled),
        route(S::Closed, R::Reset),
        route(S::Open, R::Reset),
        route(S::HalfOpen, R::Reset),
        route(S::Isolated, R::Reset),
        route(S::Disabled, R::Reset),
        route(S::Closed, R::FleetOpen),
        route(S::HalfOpen, R::FleetOpen),
        route(S::Open, R::FleetClose),
        route(S::HalfOpen, R::FleetClose),
    ]
};

/// [`ROUTE_INDEX`]'s mark for a way no transition goes.
const NO_ROUTE: u8 = u8::MAX;

/// Each route's position in [`ROUTES`], by reason and state left ([`NO_ROUTE`] where no
/// transition goes), made from `ROUTES` at compile time.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const ROUTE_INDEX: [[u8; State::ALL.len()]; Reason::ALL.len()] = {
    let mut table = [[NO_ROUTE; State::ALL.len()]; Reason::ALL.len()];
    let mut i = 0;
    while i < ROUTE_COUNT {
        table[ROUTES[i].reason as usize][ROUTES[i].from as usize] = i as u8;
        i += 1;
    }
    table
};

// No route twice, or two counters would share one route's transitions.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const _: () = {
    let mut i = 0;
    while i < ROUTE_COUNT {
        let mut j = i + 1;
        while j < ROUTE_COUNT {
            assert!(
                !(ROUTES[i].from as u8 == ROUTES[j].from as u8
                    && ROUTES[i].reason as u8 == ROUTES[j].reason as u8),
                "a route is listed twice"
            );
            j += 1;
        }
        i += 1;
    }
};

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

impl Transition {
    /// The way it went: the state left and the reason.
    pub const fn route(&self) -> Route {
        route(self.from, self.reason)
    }
}

/// Most transitions one call can cause: time alone can make two due (a probe timeout that
/// re-opens, then a cooldown that has also passed), and the call itself one more (an
/// operator's `isolate`, say).
pub const MAX_TRANSITIONS: usize = 3;

/// The transitions one call caused, oldest first (at most [`MAX_TRANSITIONS`]).
///
/// Every admission and outcome returns one by value, so it is laid out for the common
/// case, no transition: a count, and slots that start as a constant filler and are
/// written whole. (An array of `Option`s writes one niche byte per empty slot, and
/// copying the value out then reads those bytes back with wide loads, which the CPU
/// cannot forward from narrow stores: that stall was a third of the closed path's time.)
#[derive(Clone, Copy)]
pub struct Transitions {
    items: [Transition; MAX_TRANSITIONS],
    len: u8,
}

/// What the unused slots of a [`Transitions`] hold; never read as a transition.
const FILLER: Transition = Transition {
    from: State::Closed,
    to: State::Closed,
    reason: Reason::FailureThreshold,
    at: 0,
    epoch: 0,
};

impl Default for Transitions {
    #[inline(always)]
    fn default() -> Self {
        Self {
            items: [FILLER; MAX_TRANSITIONS],
            len: 0,
        }
    }
}

impl Transitions {
    #[inline]
    pub(crate) fn push(&mut self, transition: Transition) {
        // Constant indices, so the optimiser can keep a `Transitions` in registers.
        // Past the last slot is unreachable by construction (see MAX_TRANSITIONS); the
        // newest then replaces the last.
        let [first, second, third] = &mut self.items;
        let (slot, len) = match self.len {
            0 => (first, 1),
            1 => (second, 2),
            _ => (third, 3),
        };
        *slot = transition;
        self.len = len;
    }

    #[inline(always)]
    pub(crate) fn extend(&mut self, transition: Option<Transition>) {
        if let Some(transition) = transition {
            self.push(transition);
        }
    }

    /// No transition happened.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many transitions happened.
    #[inline]
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// The transitions, oldest first, as a slice.
    #[inline]
    pub fn as_slice(&self) -> &[Transition] {
        self.items.get(..self.len()).unwrap_or(&[])
    }

    /// The transitions, oldest first.
    pub fn iter(&self) -> core::slice::Iter<'_, Transition> {
        self.as_slice().iter()
    }

    /// The last transition, whose `to` is the state the call left the breaker in.
    pub fn last(&self) -> Option<&Transition> {
        self.as_slice().last()
    }
}

impl From<Option<Transition>> for Transitions {
    /// None or one transition, built as a value (not pushed through a `&mut`), so a hot
    /// path can write it straight into its result.
    #[inline(always)]
    fn from(transition: Option<Transition>) -> Self {
        match transition {
            None => Self::default(),
            Some(transition) => Self {
                items: [transition, FILLER, FILLER],
                len: 1,
            },
        }
    }
}

impl PartialEq for Transitions {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Transitions {}

impl fmt::Debug for Transitions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<'a> IntoIterator for &'a Transitions {
    type Item = &'a Transition;
    type IntoIter = core::slice::Iter<'a, Transition>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
