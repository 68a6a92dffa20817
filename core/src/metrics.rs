//! What the breaker counts: the lifetime counters it keeps, and the snapshot it hands
//! to dashboards and exporters.

use crate::rejection::RejectReason;
use crate::state::State;
use crate::table::table;
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
    /// The rejections shadow mode made and let through (the calls an enforcing breaker
    /// would have turned away), indexed by [`RejectReason::code`]: kept by this breaker,
    /// not carried by an export.
    pub shadow_rejected_total: [u64; REJECT_REASONS],
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
    /// Rejections shadow mode made for one reason, and let through.
    pub fn shadow_rejected(&self, reason: RejectReason) -> u64 {
        self.shadow_rejected_total
            .get(usize::from(reason.code()))
            .copied()
            .unwrap_or(0)
    }

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

table! {
    /// The scalar fields of [`Metrics`], by the name every host gives them (in its own
    /// case: `in-flight` is `inFlight` in JS, `in_flight` in Python). A host writes its
    /// metrics by looping over [`Metrics::fields`], so a field added here reaches it with
    /// no edit; the rejections by reason, the transitions by route and the last transition
    /// are structures of their own, laid out by their tables.
    pub enum MetricField {
        /// [`Metrics::state`].
        State = 0 => "state",
        /// [`Metrics::epoch`].
        Epoch = 1 => "epoch",
        /// [`Tally::calls`] of [`Metrics::window`].
        Calls = 2 => "calls",
        /// [`Tally::faults`] of [`Metrics::window`].
        Faults = 3 => "faults",
        /// [`Tally::slow`] of [`Metrics::window`].
        Slow = 4 => "slow",
        /// [`Metrics::in_flight`].
        InFlight = 5 => "in-flight",
        /// [`Metrics::hung`].
        Hung = 6 => "hung",
        /// [`Metrics::probes_out`].
        ProbesOut = 7 => "probes-out",
        /// [`Metrics::admitted_total`].
        AdmittedTotal = 8 => "admitted-total",
        /// [`Metrics::successes_total`].
        SuccessesTotal = 9 => "successes-total",
        /// [`Metrics::faults_total`].
        FaultsTotal = 10 => "faults-total",
        /// [`Metrics::stale_total`].
        StaleTotal = 11 => "stale-total",
        /// [`Metrics::transitions_total`].
        TransitionsTotal = 12 => "transitions-total",
        /// [`Metrics::time_in_state`].
        TimeInState = 13 => "time-in-state",
        /// [`Metrics::cooldown_remaining`].
        CooldownRemaining = 14 => "cooldown-remaining",
    }
}

table! {
    /// What a [`MetricField`] holds, which decides how a host shows it (a duration in
    /// milliseconds in JS, in seconds in Python).
    pub enum MetricKind {
        /// A [`State`], by its name.
        State = 0 => "state",
        /// A count.
        Count = 1 => "count",
        /// A duration.
        Duration = 2 => "duration",
    }
}

impl MetricField {
    /// What the field holds.
    pub const fn kind(self) -> MetricKind {
        match self {
            Self::State => MetricKind::State,
            Self::TimeInState | Self::CooldownRemaining => MetricKind::Duration,
            _ => MetricKind::Count,
        }
    }
}

/// The value of one [`MetricField`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricValue {
    /// A state.
    State(State),
    /// A count.
    Count(u64),
    /// A duration (ns).
    Duration(Nanos),
}

impl Metrics {
    /// Every scalar field with its value, in [`MetricField`] order.
    pub fn fields(&self) -> impl Iterator<Item = (MetricField, MetricValue)> + '_ {
        MetricField::ALL
            .iter()
            .map(|&field| (field, self.field(field)))
    }

    /// The value of one scalar field.
    pub fn field(&self, field: MetricField) -> MetricValue {
        use MetricField as F;
        use MetricValue::{Count, Duration};
        match field {
            F::State => MetricValue::State(self.state),
            F::Epoch => Count(self.epoch),
            F::Calls => Count(u64::from(self.window.calls)),
            F::Faults => Count(u64::from(self.window.faults)),
            F::Slow => Count(u64::from(self.window.slow)),
            F::InFlight => Count(u64::from(self.in_flight)),
            F::Hung => Count(u64::from(self.hung)),
            F::ProbesOut => Count(u64::from(self.probes_out)),
            F::AdmittedTotal => Count(self.admitted_total),
            F::SuccessesTotal => Count(self.successes_total),
            F::FaultsTotal => Count(self.faults_total),
            F::StaleTotal => Count(self.stale_total),
            F::TransitionsTotal => Count(self.transitions_total),
            F::TimeInState => Duration(self.time_in_state),
            F::CooldownRemaining => Duration(self.cooldown_remaining),
        }
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
