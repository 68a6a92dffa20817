//! What the breaker counts: the lifetime counters it keeps, and the snapshot it hands
//! to dashboards and exporters.

use crate::rejection::RejectReason;
use crate::state::State;
use crate::time::Nanos;
use crate::transition::{Route, Transition, ROUTE_COUNT};
use crate::window::Tally;

/// How many rejection reasons there are (the length of [`Metrics::rejected_total`]).
pub const REJECT_REASONS: usize = RejectReason::ALL.len();

/// A point-in-time view for dashboards and exporters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metrics {
    /// Effective state at the time asked.
    pub state: State,
    /// Effective epoch.
    pub epoch: u64,
    /// Calls, faults and slow calls in the window.
    pub window: Tally,
    /// Normal calls of this epoch still out.
    pub in_flight: u32,
    /// Of those, out for longer than `slow-call-duration`.
    pub hung: u32,
    /// Probes out.
    pub probes_out: u8,
    /// Calls admitted since creation.
    pub admitted_total: u64,
    /// Rejections since creation, indexed by [`RejectReason::code`].
    pub rejected_total: [u64; REJECT_REASONS],
    /// Outcomes counted as successes since creation.
    pub successes_total: u64,
    /// Outcomes counted as faults since creation (probe timeouts included).
    pub faults_total: u64,
    /// Outcomes that arrived with a stale permit.
    pub stale_total: u64,
    /// Transitions since creation.
    pub transitions_total: u64,
    /// Transitions since creation by the way they went, indexed by [`Route::index`] (the
    /// order of [`ROUTES`](crate::ROUTES)); they add up to `transitions_total`.
    pub transitions_by_route: [u64; ROUTE_COUNT],
    /// Time since the last transition (or creation).
    pub time_in_state: Nanos,
    /// Remaining cooldown when open, else 0.
    pub cooldown_remaining: Nanos,
    /// The most recent transition.
    pub last_transition: Option<Transition>,
}

impl Metrics {
    /// Rejections for one reason.
    pub fn rejected(&self, reason: RejectReason) -> u64 {
        self.rejected_total
            .get(usize::from(reason.code()))
            .copied()
            .unwrap_or(0)
    }

    /// Transitions that went by `route` (0 for a way no transition goes).
    pub fn transitions(&self, route: Route) -> u64 {
        route
            .index()
            .and_then(|i| self.transitions_by_route.get(i))
            .copied()
            .unwrap_or(0)
    }
}

/// Lifetime counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stats {
    pub(crate) admitted: u64,
    pub(crate) rejected: [u64; REJECT_REASONS],
    pub(crate) successes: u64,
    pub(crate) faults: u64,
    pub(crate) stale: u64,
    pub(crate) transitions: u64,
    /// `transitions` by route. Kept last, after the counters the hot paths write.
    pub(crate) routes: Routes,
    pub(crate) last: Option<Transition>,
}

/// Transition counters by route ([`Metrics::transitions_by_route`]).
pub(crate) type Routes = [u64; ROUTE_COUNT];

/// Counts one transition that went by `route`. Every route a transition takes is in
/// `ROUTES` (checked by the model tests, which add the counters up against the total).
pub(crate) fn count_route(routes: &mut Routes, route: Route) {
    if let Some(counter) = route.index().and_then(|i| routes.get_mut(i)) {
        bump(counter);
    }
}

#[inline(always)]
pub(crate) fn bump(counter: &mut u64) {
    *counter = counter.saturating_add(1);
}
