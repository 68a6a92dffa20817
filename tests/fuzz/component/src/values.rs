//! Arbitrary WIT values, and what the core makes of the same input (or the error the WIT
//! promises): outcomes with bad codes, configs with absent fields.

use arbitrary::{Result, Unstructured};
use tripgate_core as core_api;
use tripgate_fuzz::input;
use tripgate_wasmtime::wit;

/// The WIT outcome, possibly invalid, and the core's (or the error the WIT promises).
pub(crate) fn outcome(
    u: &mut Unstructured<'_>,
) -> Result<(wit::Outcome, Result<core_api::Outcome, wit::RecordError>)> {
    use wit::Outcome as W;
    let status = |code: u16| {
        core_api::Outcome::status(code).map_err(|_| wit::RecordError::InvalidStatus(code))
    };
    let grpc = |code: u8| {
        core_api::Outcome::grpc(code).map_err(|_| wit::RecordError::InvalidGrpcCode(code))
    };
    Ok(match u.int_in_range(0..=11)? {
        0 => (W::Success, Ok(core_api::Outcome::Success)),
        1..=3 => {
            let code = if u.ratio(1, 4)? {
                u.arbitrary()?
            } else {
                u.int_in_range(100..=599)?
            };
            (W::Status(code), status(code))
        }
        4 => {
            let code = *u.choose(&[0, 99, 100, 429, 503, 599, 600, u16::MAX])?;
            (W::Status(code), status(code))
        }
        5 => {
            let code = if u.ratio(1, 4)? {
                u.arbitrary()?
            } else {
                u.int_in_range(0..=17)?
            };
            (W::Grpc(code), grpc(code))
        }
        6 => (W::Timeout, Ok(core_api::Outcome::Timeout)),
        7 => (W::ConnectionError, Ok(core_api::Outcome::ConnectionError)),
        8 => (W::Failure, Ok(core_api::Outcome::Failure)),
        9 => (W::Cancelled, Ok(core_api::Outcome::Cancelled)),
        _ => (W::Ignored, Ok(core_api::Outcome::Ignored)),
    })
}

/// A WIT config, and what the core makes of it: absent fields take the defaults, and a
/// code list with a code out of range is refused naming that list, before any other rule.
pub(crate) fn config(
    u: &mut Unstructured<'_>,
) -> Result<(wit::Config, Result<core_api::Config, core_api::ConfigError>)> {
    let c = input::config(u)?;
    let d = core_api::Config::default();
    // Each field is sent, or left out when it has its default (the component fills it).
    macro_rules! field {
        ($name:ident) => {
            if c.$name == d.$name && u.arbitrary()? {
                None
            } else {
                Some(c.$name)
            }
        };
    }
    macro_rules! optional {
        ($name:ident) => {
            c.$name
        };
    }
    let lists = fault_lists(u, &c, &d)?;
    let expected = lists.refused.map_or(Ok(c), Err);
    let wit = wit::Config {
        failure_threshold: field!(failure_threshold),
        min_calls: field!(min_calls),
        failure_rate: optional!(failure_rate),
        slow_call_rate: optional!(slow_call_rate),
        slow_call_duration: optional!(slow_call_duration),
        window: field!(window),
        buckets: field!(buckets),
        window_calls: optional!(window_calls),
        cooldown: field!(cooldown),
        backoff_factor: if c.backoff_factor == d.backoff_factor && u.arbitrary()? {
            None
        } else {
            Some(c.backoff_factor)
        },
        max_cooldown: optional!(max_cooldown),
        jitter_percent: field!(jitter_percent),
        jitter_seed: field!(jitter_seed),
        max_in_flight: optional!(max_in_flight),
        half_open_max_probes: field!(half_open_max_probes),
        half_open_required_successes: field!(half_open_required_successes),
        half_open_success_rate: optional!(half_open_success_rate),
        probe_timeout: field!(probe_timeout),
        fault_statuses: lists.statuses,
        fault_grpc_codes: lists.grpc,
        fleet_quorum: optional!(fleet_quorum),
        shadow: field!(shadow),
    };
    let expected = expected.and_then(|c| c.validate().map(|()| c));
    Ok((wit, expected))
}

/// The WIT's fault code lists for a config, and the error the core gives for them.
struct FaultLists {
    statuses: Option<Vec<u16>>,
    grpc: Option<Vec<u8>>,
    /// The first list with a code out of range, as the core refuses it.
    refused: Option<core_api::ConfigError>,
}

/// The lists of `c` (left out now and then when they are the defaults), with a duplicate
/// or a code out of range now and then.
fn fault_lists(
    u: &mut Unstructured<'_>,
    c: &core_api::Config,
    d: &core_api::Config,
) -> Result<FaultLists> {
    let mut statuses: Option<Vec<u16>> = if c.fault_statuses == d.fault_statuses && u.arbitrary()? {
        None
    } else {
        Some(c.fault_statuses.iter().collect())
    };
    let mut grpc: Option<Vec<u8>> = if c.fault_grpc_codes == d.fault_grpc_codes && u.arbitrary()? {
        None
    } else {
        Some(c.fault_grpc_codes.iter().collect())
    };
    let mut refused = None;
    // Duplicates change nothing; a code out of range is refused.
    if let Some(list) = &mut statuses {
        if let (true, Some(&first)) = (u.ratio(1, 4)?, list.first()) {
            list.push(first);
        }
        if u.ratio(1, 12)? {
            let bad = *u.choose(&[0u16, 99, 600, u16::MAX])?;
            let at = u.int_in_range(0..=list.len())?;
            list.insert(at, bad);
            refused = Some(core_api::ConfigError {
                field: core_api::Field::FaultStatuses,
                rule: core_api::Rule::Between(100, 599),
            });
        }
    }
    if let Some(list) = &mut grpc {
        if u.ratio(1, 12)? {
            let bad = *u.choose(&[17u8, 200, u8::MAX])?;
            let at = u.int_in_range(0..=list.len())?;
            list.insert(at, bad);
            refused = refused.or(Some(core_api::ConfigError {
                field: core_api::Field::FaultGrpcCodes,
                rule: core_api::Rule::Between(0, 16),
            }));
        }
    }
    Ok(FaultLists {
        statuses,
        grpc,
        refused,
    })
}
