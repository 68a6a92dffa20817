//! The metrics every host exposes, written down once: the families (name, type, help,
//! unit, labels) and the samples a [`Reading`] (a [`Metrics`] snapshot and the
//! [`FleetStatus`]) gives for them.
//!
//! Every host turns a snapshot into samples here and only encodes them (the Rust hosts
//! for `prometheus-client`, the JS package for prom-client, OpenTelemetry and plain
//! Prometheus text, from the same table read out of its wasm module), so every host
//! produces the same names, labels and values. Every label but `breaker` takes its values
//! from one of the core's tables, so the set of series is fixed: [`series`] lists it, in
//! exposition order, and [`Series::value`] reads one series' value from a snapshot.
//!
//! Names follow Prometheus conventions: base units (seconds), counters end in `_total`,
//! and a family's name is the name of its samples in the Prometheus text format.
//! [`Family::stem`] is the name without the `_total` and unit suffixes, as OpenMetrics
//! and OpenTelemetry declare a family (their encoders add the suffixes back).
//!
//! Adding a family: add a case to [`Family`] and its arms to the `match`es below (the
//! compiler lists them); a family with a label of its own also needs an arm in
//! [`Family::series_count`] and [`Series::label_value`].

use crate::fleet::FleetStatus;
use crate::metrics::Metrics;
use crate::outcome::Class;
use crate::rejection::RejectReason;
use crate::state::State;
use crate::table::table;
use crate::time::Nanos;
use crate::transition::{ROUTES, ROUTE_COUNT};

table! {
    /// How a family's samples behave, in Prometheus' words.
    pub enum MetricType {
        /// A value that goes up and down.
        Gauge = 0 => "gauge",
        /// A count that only goes up (from the breaker's creation or import).
        Counter = 1 => "counter",
    }
}

/// The label every sample carries: the breaker's name, which only the host knows (a
/// registry's key, or the name a collector is given).
pub const BREAKER_LABEL: &str = "breaker";

/// The most labels a family has besides [`BREAKER_LABEL`].
pub const MAX_LABELS: usize = 3;

/// The outcome classes the core counts (neutral outcomes count as nothing).
const COUNTED_CLASSES: [Class; 2] = [Class::Success, Class::Fault];

table! {
    /// The metric families, in exposition order. A family's [`name`](Family::name) is the
    /// name of its samples in the Prometheus text format.
    pub enum Family {
        /// `state`: 1 for the breaker's state, 0 for the others.
        State = 0 => "tripgate_state",
        /// Calls admitted.
        CallsAdmitted = 1 => "tripgate_calls_admitted_total",
        /// `class`: outcomes counted, by class.
        Outcomes = 2 => "tripgate_outcomes_total",
        /// Outcomes with a stale permit.
        StaleOutcomes = 3 => "tripgate_stale_outcomes_total",
        /// `reason`: rejections by reason.
        Rejections = 4 => "tripgate_rejections_total",
        /// `from`, `to`, `reason`: transitions by route.
        Transitions = 5 => "tripgate_transitions_total",
        /// The window's calls.
        WindowCalls = 6 => "tripgate_window_calls",
        /// The window's faults.
        WindowFaults = 7 => "tripgate_window_faults",
        /// The window's slow calls.
        WindowSlowCalls = 8 => "tripgate_window_slow_calls",
        /// Normal calls in flight.
        InFlightCalls = 9 => "tripgate_in_flight_calls",
        /// Calls in flight for longer than `slow-call-duration`.
        HungCalls = 10 => "tripgate_hung_calls",
        /// Probes out.
        InFlightProbes = 11 => "tripgate_in_flight_probes",
        /// Time since the last transition.
        TimeInState = 12 => "tripgate_time_in_state_seconds",
        /// Cooldown left.
        CooldownRemaining = 13 => "tripgate_cooldown_remaining_seconds",
        /// 1 in fleet mode.
        FleetMember = 14 => "tripgate_fleet_member",
        /// 1 while the fleet's store is unreachable.
        FleetDegraded = 15 => "tripgate_fleet_degraded",
        /// The last fleet generation applied.
        FleetGeneration = 16 => "tripgate_fleet_generation",
        /// 1 while this member holds the fleet's probe lease.
        FleetLeaseHeld = 17 => "tripgate_fleet_lease_held",
        /// Fleet events ignored as stale.
        FleetStaleEvents = 18 => "tripgate_fleet_stale_events_total",
        /// `reason`: the rejections shadow mode made and let through, by reason.
        ShadowRejections = 19 => "tripgate_shadow_rejections_total",
    }
}

/// What the samples are read from: one breaker's snapshot and fleet status, taken
/// together ([`Breaker::reading`](crate::Breaker::reading); a host that gets them by two calls, as the wasmtime
/// host does, reads them one after the other).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    /// The snapshot.
    pub metrics: Metrics,
    /// The fleet part (all zero outside fleet mode).
    pub fleet: FleetStatus,
}

impl Family {
    /// Gauge or counter.
    pub const fn kind(self) -> MetricType {
        match self {
            Self::CallsAdmitted
            | Self::Outcomes
            | Self::StaleOutcomes
            | Self::Rejections
            | Self::Transitions
            | Self::FleetStaleEvents
            | Self::ShadowRejections => MetricType::Counter,
            Self::State
            | Self::WindowCalls
            | Self::WindowFaults
            | Self::WindowSlowCalls
            | Self::InFlightCalls
            | Self::HungCalls
            | Self::InFlightProbes
            | Self::TimeInState
            | Self::CooldownRemaining
            | Self::FleetMember
            | Self::FleetDegraded
            | Self::FleetGeneration
            | Self::FleetLeaseHeld => MetricType::Gauge,
        }
    }

    /// The help text: one line, no quotes or backslashes (checked by a test), so every
    /// encoder can write it as it is.
    pub const fn help(self) -> &'static str {
        match self {
            Self::State => "1 for the state the breaker is in (an open breaker past its cooldown reads half-open), 0 for the others.",
            Self::CallsAdmitted => "Calls admitted since the breaker was created, half-open probes included.",
            Self::Outcomes => "Outcomes counted since creation, by class; a probe that timed out counts as a fault, cancelled and ignored calls count as nothing.",
            Self::StaleOutcomes => "Outcomes that arrived with a permit from an earlier state and counted as nothing.",
            Self::Rejections => "Calls rejected since creation, by reason.",
            Self::ShadowRejections => "Calls shadow mode let through that the breaker would have rejected, by reason (this process's count).",
            Self::Transitions => "State changes since creation, by the state left, the state entered and why.",
            Self::WindowCalls => "Calls with a success or fault outcome in the sliding window.",
            Self::WindowFaults => "Of the calls in the window, faults.",
            Self::WindowSlowCalls => "Of the calls in the window, successes slower than slow-call-duration.",
            Self::InFlightCalls => "Calls admitted in the current state and not yet recorded (probes apart).",
            Self::HungCalls => "Of the calls in flight, those out for longer than slow-call-duration.",
            Self::InFlightProbes => "Half-open probes out, including those of an earlier round still at the upstream.",
            Self::TimeInState => "Time since the last transition, or since creation.",
            Self::CooldownRemaining => "Time left before an open breaker admits probes; 0 when it is not open.",
            Self::FleetMember => "1 when the breaker is a member of a fleet sharing its state through a store, 0 otherwise.",
            Self::FleetDegraded => "1 while the fleet's store is unreachable and the member decides alone, 0 otherwise.",
            Self::FleetGeneration => "The generation of the last fleet event applied (0 before any, and outside fleet mode).",
            Self::FleetLeaseHeld => "1 while this member holds the fleet's probe lease, 0 otherwise.",
            Self::FleetStaleEvents => "Fleet events ignored because a newer generation had been applied.",
        }
    }

    /// The unit, when the family has one: the name ends in `_` and the unit (before
    /// `_total` for a counter).
    pub const fn unit(self) -> Option<&'static str> {
        match self {
            Self::TimeInState | Self::CooldownRemaining => Some("seconds"),
            _ => None,
        }
    }

    /// The labels besides [`BREAKER_LABEL`], in the order samples list their values.
    pub const fn labels(self) -> &'static [&'static str] {
        match self {
            Self::State => &["state"],
            Self::Outcomes => &["class"],
            Self::Rejections | Self::ShadowRejections => &["reason"],
            Self::Transitions => &["from", "to", "reason"],
            _ => &[],
        }
    }

    /// The name without the `_total` suffix of a counter and the unit suffix: the name
    /// OpenMetrics and OpenTelemetry declare, whose encoders append those suffixes.
    pub fn stem(self) -> &'static str {
        let name = self.name();
        let name = match self.kind() {
            MetricType::Counter => name.strip_suffix("_total").unwrap_or(name),
            MetricType::Gauge => name,
        };
        match self.unit() {
            Some(unit) => name
                .strip_suffix(unit)
                .and_then(|rest| rest.strip_suffix('_'))
                .unwrap_or(name),
            None => name,
        }
    }

    /// How many series the family has per breaker: one per value of its labels.
    pub const fn series_count(self) -> usize {
        match self {
            Self::State => State::ALL.len(),
            Self::Outcomes => COUNTED_CLASSES.len(),
            Self::Rejections | Self::ShadowRejections => RejectReason::ALL.len(),
            Self::Transitions => ROUTE_COUNT,
            _ => 1,
        }
    }

    /// The family's series, in exposition order.
    pub fn series(self) -> impl Iterator<Item = Series> + Clone {
        (0..self.series_count()).map(move |index| Series {
            family: self,
            index: u8::try_from(index).unwrap_or(u8::MAX),
        })
    }
}

/// How many series a breaker has (the length of [`series`]).
pub const SERIES: usize = {
    let mut total = 0;
    let mut i = 0;
    while i < Family::ALL.len() {
        #[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
        {
            total += Family::ALL[i].series_count();
            i += 1;
        }
    }
    total
};

/// Every series of one breaker, family by family in exposition order.
pub fn series() -> impl Iterator<Item = Series> + Clone {
    Family::ALL.iter().flat_map(|family| family.series())
}

/// Every series of one breaker with its value in `reading`, in the order of [`series`].
pub fn samples(reading: &Reading) -> impl Iterator<Item = (Series, Value)> + '_ {
    series().map(move |series| (series, series.value(reading)))
}

/// One series of a family: its label values (besides `breaker`) are fixed by the core's
/// tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Series {
    /// The family.
    pub family: Family,
    /// Its position in the family (a state's, class's, reject reason's or route's).
    index: u8,
}

impl Series {
    /// The value of the label at `position` in [`Family::labels`].
    pub fn label_value(&self, position: usize) -> Option<&'static str> {
        let i = usize::from(self.index);
        match (self.family, position) {
            (Family::State, 0) => State::ALL.get(i).map(|s| s.name()),
            (Family::Outcomes, 0) => COUNTED_CLASSES.get(i).map(|c| c.name()),
            (Family::Rejections | Family::ShadowRejections, 0) => {
                RejectReason::ALL.get(i).map(|r| r.name())
            }
            (Family::Transitions, position) => ROUTES.get(i).and_then(|route| match position {
                0 => Some(route.from.name()),
                1 => Some(route.to().name()),
                2 => Some(route.reason.name()),
                _ => None,
            }),
            _ => None,
        }
    }

    /// The labels besides `breaker`, as (name, value) pairs.
    pub fn labels(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        let names = self.family.labels();
        names
            .iter()
            .enumerate()
            .filter_map(|(position, name)| Some((*name, self.label_value(position)?)))
    }

    /// The series' value in `reading`.
    pub fn value(&self, reading: &Reading) -> Value {
        let (m, fleet) = (&reading.metrics, &reading.fleet);
        let i = usize::from(self.index);
        let count = |n: Option<u64>| Value::Count(n.unwrap_or(0));
        match self.family {
            Family::State => count(State::ALL.get(i).map(|state| u64::from(*state == m.state))),
            Family::CallsAdmitted => Value::Count(m.admitted_total),
            Family::Outcomes => count(COUNTED_CLASSES.get(i).map(|class| match class {
                Class::Success => m.successes_total,
                Class::Fault => m.faults_total,
                Class::Neutral => 0,
            })),
            Family::StaleOutcomes => Value::Count(m.stale_total),
            Family::Rejections => count(m.rejected_total.get(i).copied()),
            Family::ShadowRejections => count(m.shadow_rejected_total.get(i).copied()),
            Family::Transitions => count(m.transitions_by_route.get(i).copied()),
            Family::WindowCalls => Value::Count(u64::from(m.window.calls)),
            Family::WindowFaults => Value::Count(u64::from(m.window.faults)),
            Family::WindowSlowCalls => Value::Count(u64::from(m.window.slow)),
            Family::InFlightCalls => Value::Count(u64::from(m.in_flight)),
            Family::HungCalls => Value::Count(u64::from(m.hung)),
            Family::InFlightProbes => Value::Count(u64::from(m.probes_out)),
            Family::TimeInState => Value::Seconds(m.time_in_state),
            Family::CooldownRemaining => Value::Seconds(m.cooldown_remaining),
            Family::FleetMember => Value::Count(u64::from(fleet.enabled)),
            Family::FleetDegraded => Value::Count(u64::from(fleet.degraded)),
            Family::FleetGeneration => Value::Count(fleet.generation),
            Family::FleetLeaseHeld => Value::Count(u64::from(fleet.lease_held)),
            Family::FleetStaleEvents => Value::Count(fleet.stale_events),
        }
    }
}

/// A sample's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// A whole number (a count, or 0/1).
    Count(u64),
    /// A duration, exposed in seconds.
    Seconds(Nanos),
}

impl Value {
    /// The value as Prometheus carries it: a float, in seconds for a duration. Computed
    /// here so every host exposes the same number.
    #[allow(clippy::cast_precision_loss)] // counts past 2^53 are a million years away
    pub fn as_f64(self) -> f64 {
        match self {
            Self::Count(n) => n as f64,
            Self::Seconds(ns) => ns as f64 / 1e9,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects,
        clippy::unwrap_used
    )]
    extern crate std;
    use super::*;
    use crate::Breaker;
    use std::vec::Vec;

    #[test]
    fn names_follow_prometheus_conventions() {
        for family in Family::ALL {
            let name = family.name();
            assert!(name.starts_with("tripgate_"), "{name}");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{name}"
            );
            assert_eq!(
                name.ends_with("_total"),
                family.kind() == MetricType::Counter,
                "{name}: counters, and only counters, end in _total"
            );
            if let Some(unit) = family.unit() {
                assert!(
                    family.stem().len() < name.len(),
                    "{name} ends in its unit {unit}"
                );
            }
            assert!(family.labels().len() <= MAX_LABELS);
            assert!(
                !family.help().contains(['"', '\\', '\n']),
                "{name}: help must need no escaping"
            );
        }
        assert_eq!(Family::Rejections.stem(), "tripgate_rejections");
        assert_eq!(Family::TimeInState.stem(), "tripgate_time_in_state");
        assert_eq!(Family::State.stem(), "tripgate_state");
    }

    #[test]
    fn a_reading_is_the_snapshot_and_the_fleet_status_of_one_instant() {
        use crate::{Config, Outcome, SECOND};
        let config = Config {
            fleet_quorum: Some(1),
            ..Config::default()
        };
        let mut b = Breaker::new(config, 0).unwrap();
        for _ in 0..5 {
            if let Ok(permit) = b.acquire(0).decision {
                b.record(permit, Outcome::Timeout, 0);
            }
        }
        b.fleet_degraded(false, 0);
        // Past the cooldown the breaker reads half-open without a call: the fleet status
        // (wants the lease) must come from that same projected state.
        for now in [SECOND, 20 * SECOND] {
            let r = b.reading(now);
            assert_eq!(r.metrics, b.metrics(now));
            assert_eq!(r.fleet, b.fleet_status(now));
        }
        assert_eq!(b.reading(20 * SECOND).metrics.state, State::HalfOpen);
        // A member wants the lease once a caller was turned away for the want of it.
        assert!(!b.reading(20 * SECOND).fleet.wants_lease);
        let turned_away = b.acquire(20 * SECOND).decision.unwrap_err();
        assert_eq!(turned_away.reason, crate::RejectReason::ProbingElsewhere);
        let r = b.reading(20 * SECOND);
        assert_eq!(r.fleet, b.fleet_status(20 * SECOND));
        assert!(r.fleet.wants_lease);
    }

    #[test]
    fn every_series_has_every_label_and_a_distinct_label_set() {
        let all: Vec<Series> = series().collect();
        assert_eq!(all.len(), SERIES);
        for s in &all {
            assert_eq!(s.labels().count(), s.family.labels().len(), "{s:?}");
        }
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                if a.family == b.family {
                    let (la, lb): (Vec<_>, Vec<_>) = (a.labels().collect(), b.labels().collect());
                    assert_ne!(la, lb, "two series of {} share labels", a.family);
                }
            }
        }
    }
}
