//! The WIT's values as the core's types: every Rust host reports the core's own types.

use tripgate_core::{
    FleetStatus, Metrics, Reason, RejectReason, Rejection, State, Tally, Transition,
};

use crate::wit;

/// The core's case for a WIT enum value: a WIT enum's discriminant is its position, and
/// `wit/breaker.wit` lists each such enum in the core's code order (the `tables` test reads
/// the WIT and checks it), so no second table is kept here.
pub(crate) fn core_case<T>(from_code: fn(u8) -> Option<T>, code: u8) -> T {
    match from_code(code) {
        Some(case) => case,
        None => panic!("wit/breaker.wit and tripgate-core list different cases"),
    }
}

/// The core's state for the WIT one.
pub fn core_state(state: wit::State) -> State {
    core_case(State::from_code, state as u8)
}

/// The core's transition for the WIT one.
pub fn core_transition(t: &wit::Transition) -> Transition {
    Transition {
        from: core_state(t.from),
        to: core_state(t.to),
        reason: core_case(Reason::from_code, t.reason as u8),
        at: t.at,
        epoch: t.epoch,
    }
}

/// The core's rejection for the WIT one.
pub fn core_rejection(r: &wit::Rejection) -> Rejection {
    Rejection {
        state: core_state(r.state),
        reason: core_case(RejectReason::from_code, r.reason as u8),
        retry_after: r.retry_after,
    }
}

/// The core's fleet status for the WIT record.
pub fn core_fleet_status(s: &wit::FleetStatus) -> FleetStatus {
    FleetStatus {
        enabled: s.enabled,
        generation: s.generation,
        degraded: s.degraded,
        lease_held: s.lease_held,
        wants_lease: s.wants_lease,
        stale_events: s.stale_events,
    }
}

/// Counts by reason, laid out as the core's `rejected_total` (by `RejectReason::code`).
fn per_reason(counts: [(RejectReason, u64); 5]) -> [u64; tripgate_core::REJECT_REASONS] {
    let mut total = [0; tripgate_core::REJECT_REASONS];
    for (reason, count) in counts {
        if let Some(slot) = total.get_mut(usize::from(reason.code())) {
            *slot = count;
        }
    }
    total
}

/// The core's metrics for the WIT record.
pub fn core_metrics(m: &wit::Metrics) -> Metrics {
    let rejected_total = per_reason([
        (RejectReason::Open, m.rejected_open),
        (RejectReason::Probing, m.rejected_probing),
        (RejectReason::Isolated, m.rejected_isolated),
        (RejectReason::Saturated, m.rejected_saturated),
        (RejectReason::ProbingElsewhere, m.rejected_probing_elsewhere),
    ]);
    let s = &m.shadow_rejected;
    let shadow_rejected_total = per_reason([
        (RejectReason::Open, s.open),
        (RejectReason::Probing, s.probing),
        (RejectReason::Isolated, s.isolated),
        (RejectReason::Saturated, s.saturated),
        (RejectReason::ProbingElsewhere, s.probing_elsewhere),
    ]);
    // In the order of the core's ROUTES (the `tables` test checks the WIT lists it).
    let mut transitions_by_route = [0; tripgate_core::ROUTE_COUNT];
    for (slot, count) in transitions_by_route.iter_mut().zip(&m.transitions_by_route) {
        *slot = *count;
    }
    Metrics {
        state: core_state(m.state),
        epoch: m.epoch,
        window: Tally {
            calls: m.window.calls,
            faults: m.window.faults,
            slow: m.window.slow,
        },
        in_flight: m.in_flight,
        hung: m.hung,
        probes_out: m.probes_out,
        admitted_total: m.admitted_total,
        rejected_total,
        shadow_rejected_total,
        successes_total: m.successes_total,
        faults_total: m.faults_total,
        stale_total: m.stale_total,
        transitions_total: m.transitions_total,
        transitions_by_route,
        time_in_state: m.time_in_state,
        cooldown_remaining: m.cooldown_remaining,
        last_transition: m.last_transition.as_ref().map(core_transition),
    }
}
