//! Values across the boundary: WIT records and variants into the core's types, and the
//! core's back into the WIT's. Enum cases map by position (`from_repr`), so the core's
//! tables stay the only ones.

use alloc::string::String;
use alloc::vec::Vec;

use tripgate_core as core_api;
use tripgate_core::{Field, GrpcCode, GrpcSet, HttpStatus, Outcome, OutcomeError, Rule, StatusSet};

use crate::wit;

// WIT to core.

pub(crate) fn core_config(c: wit::Config) -> Result<core_api::Config, wit::ConfigError> {
    let d = core_api::Config::default();
    Ok(core_api::Config {
        failure_threshold: c.failure_threshold.unwrap_or(d.failure_threshold),
        min_calls: c.min_calls.unwrap_or(d.min_calls),
        failure_rate: c.failure_rate.or(d.failure_rate),
        slow_call_rate: c.slow_call_rate.or(d.slow_call_rate),
        slow_call_duration: c.slow_call_duration.or(d.slow_call_duration),
        window: c.window.unwrap_or(d.window),
        buckets: c.buckets.unwrap_or(d.buckets),
        window_calls: c.window_calls.or(d.window_calls),
        cooldown: c.cooldown.unwrap_or(d.cooldown),
        backoff_factor: c.backoff_factor.unwrap_or(d.backoff_factor),
        max_cooldown: c.max_cooldown.or(d.max_cooldown),
        jitter_percent: c.jitter_percent.unwrap_or(d.jitter_percent),
        jitter_seed: c.jitter_seed.unwrap_or(d.jitter_seed),
        max_in_flight: c.max_in_flight.or(d.max_in_flight),
        half_open_max_probes: c.half_open_max_probes.unwrap_or(d.half_open_max_probes),
        half_open_required_successes: c
            .half_open_required_successes
            .unwrap_or(d.half_open_required_successes),
        half_open_success_rate: c.half_open_success_rate.or(d.half_open_success_rate),
        probe_timeout: c.probe_timeout.unwrap_or(d.probe_timeout),
        fleet_quorum: c.fleet_quorum.or(d.fleet_quorum),
        shadow: c.shadow.unwrap_or(d.shadow),
        fault_statuses: match c.fault_statuses {
            None => d.fault_statuses,
            Some(codes) => codes.into_iter().try_fold(StatusSet::EMPTY, |set, code| {
                HttpStatus::new(code).map(|_| set.with(code)).map_err(|_| {
                    let rule = Rule::Between(HttpStatus::MIN.into(), HttpStatus::MAX.into());
                    config_error_of(Field::FaultStatuses, rule)
                })
            })?,
        },
        fault_grpc_codes: match c.fault_grpc_codes {
            None => d.fault_grpc_codes,
            Some(codes) => codes.into_iter().try_fold(GrpcSet::EMPTY, |set, code| {
                GrpcCode::new(code).map(|_| set.with(code)).map_err(|_| {
                    let rule = Rule::Between(0, GrpcCode::MAX.into());
                    config_error_of(Field::FaultGrpcCodes, rule)
                })
            })?,
        },
    })
}

pub(crate) fn core_outcome(outcome: wit::Outcome) -> Result<Outcome, wit::RecordError> {
    use wit::Outcome as W;
    let outcome = match outcome {
        W::Success => Ok(Outcome::Success),
        W::Status(code) => Outcome::status(code),
        W::Grpc(code) => Outcome::grpc(code),
        W::Timeout => Ok(Outcome::Timeout),
        W::ConnectionError => Ok(Outcome::ConnectionError),
        W::Failure => Ok(Outcome::Failure),
        W::Cancelled => Ok(Outcome::Cancelled),
        W::Ignored => Ok(Outcome::Ignored),
    };
    outcome.map_err(|error| match error {
        OutcomeError::Status(code) => wit::RecordError::InvalidStatus(code),
        OutcomeError::GrpcCode(code) => wit::RecordError::InvalidGrpcCode(code),
    })
}

// Core to WIT.

/// The WIT enum case for a core table's code. `wit/breaker.wit` lists every such enum's
/// cases in the core's code order (the wasmtime host's `tables` test reads the WIT and
/// checks it), so the case at the code's position is the same case.
pub(crate) fn case<W>(from_repr: fn(u8) -> Option<W>, code: u8) -> W {
    match from_repr(code) {
        Some(case) => case,
        None => tables_disagree(),
    }
}

/// A build whose WIT and core tables disagree: trap loudly rather than report a wrong
/// value. Never reached by any input.
#[cold]
fn tables_disagree() -> ! {
    #[cfg(target_family = "wasm")]
    core::arch::wasm32::unreachable();
    #[cfg(not(target_family = "wasm"))]
    unreachable!("wit/breaker.wit and tripgate-core list different cases");
}

pub(crate) fn config_error(error: core_api::ConfigError) -> wit::ConfigError {
    config_error_of(error.field, error.rule)
}

/// A config error in the core's words: the rule (`must be >= 1`) and the message
/// (`failure-threshold must be >= 1`). Also for the code lists, whose invalid codes the
/// core's sets would drop and the component refuses.
fn config_error_of(field: Field, rule: Rule) -> wit::ConfigError {
    wit::ConfigError {
        field: case(wit::ConfigField::from_repr, field.code()),
        rule: text(|out| rule.describe(out)),
        message: text(|out| core_api::ConfigError { field, rule }.describe(out)),
    }
}

/// A message of the core's, built without `core::fmt` (see `tripgate_core::Words`).
fn text(describe: impl FnOnce(&mut Text) -> core::fmt::Result) -> String {
    let mut out = Text(String::new());
    // Writing into a `String` cannot fail.
    let _ = describe(&mut out);
    out.0
}

struct Text(String);

impl core_api::Words for Text {
    fn word(&mut self, text: &str) -> core::fmt::Result {
        self.0.push_str(text);
        Ok(())
    }
}

pub(crate) fn state(state: core_api::State) -> wit::State {
    case(wit::State::from_repr, state.code())
}

/// A count per rejection reason, read by `count`.
pub(crate) fn by_reason(count: impl Fn(core_api::RejectReason) -> u64) -> wit::ByReason {
    use core_api::RejectReason as R;
    wit::ByReason {
        open: count(R::Open),
        probing: count(R::Probing),
        isolated: count(R::Isolated),
        saturated: count(R::Saturated),
        probing_elsewhere: count(R::ProbingElsewhere),
    }
}

pub(crate) fn transition(t: &core_api::Transition) -> wit::Transition {
    wit::Transition {
        from: state(t.from),
        to: state(t.to),
        reason: case(wit::Reason::from_repr, t.reason.code()),
        at: t.at,
        epoch: t.epoch,
    }
}

pub(crate) fn transitions(ts: &core_api::Transitions) -> Vec<wit::Transition> {
    ts.iter().map(transition).collect()
}

pub(crate) fn rejection(r: core_api::Rejection) -> wit::Rejection {
    wit::Rejection {
        state: state(r.state),
        reason: case(wit::RejectReason::from_repr, r.reason.code()),
        retry_after: r.retry_after,
    }
}

pub(crate) fn snapshot_error(error: core_api::SnapshotError) -> wit::SnapshotError {
    wit::SnapshotError {
        kind: case(wit::SnapshotErrorKind::from_repr, error.kind().code()),
        message: text(|out| error.describe(out)),
    }
}
