//! The core's tables, handed to JS once when the package installs the module.
//!
//! Every name JS shows (states, reasons, reject reasons, classes, outcome kinds, config
//! fields with their JS option names and kinds) and every code it passes back comes from
//! here, so a case added to the core (and the WIT) reaches JS with no edit under `js/`.
//!
//! They cross as one JSON text that JS parses once: building JS arrays and objects through
//! js-sys cost ~5 KB of module for the same result (and writing it with `push_str` alone,
//! ~0.6 KB more than with `write!`, whose machinery the config messages link anyway).

use core::fmt::Write;

use tripgate_core::{
    errors, AnnouncementKind, Class, Field, FleetApplied, FleetEventKind, GrpcCode, HttpStatus,
    MetricField, OutcomeKind, Reason, RejectReason, State, MAX_CAUSES, MAX_TRANSITIONS,
};
use wasm_bindgen::prelude::*;

use crate::breaker::{METRICS_FIXED, METRICS_LEN, TRANSITION_WIDTH};
use crate::fleet::{BAD_EVENT, FLEET_STATUS_LEN};
use crate::retry;
use crate::time::READING_LIMIT_MS;
use crate::{BAD_OUTCOME, GRPC_BASE, KIND_BASE, NEED_CLOCK, NOT_A_PERMIT, SHADOWED, TRANSITIONED};
use tripgate_core::retry::Stop;
use tripgate_core::{retry_after, HANDLE_LIMIT, MAX_OUTSTANDING};

/// Writes `"key":[...]` of quoted strings. Every name is kebab- or camel-case ASCII, so
/// none needs escaping.
fn list<T: Copy>(out: &mut String, key: &str, all: &[T], item: impl Fn(&mut String, T)) {
    let _ = write!(out, "\"{key}\":[");
    for (i, &case) in all.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        item(out, case);
    }
    out.push_str("],");
}

fn name(out: &mut String, name: &str) {
    let _ = write!(out, "\"{name}\"");
}

/// The tables as JSON: `states`, `reasons`, `rejectReasons`, `classes`, `outcomeKinds`,
/// `fleetEventKinds`, `fleetApplied`, `announcementKinds` (names, index = code),
/// `metricFields` (`[name, kind]` in the order [`crate::breaker::Breaker::metrics`] writes
/// them), `errorRules` (the core's error table, in order: `[name, text, outcome kind]`), `fields`
/// (`{ name, option, kind }` by code), `retryFields` (a retry policy's settings, the same
/// way, in the order [`crate::retry`] takes them), `retryStops` (why retries stop, by the
/// code [`crate::retry::RetryBudget::next`] returns), `retryAfterStatuses` (the HTTP statuses whose
/// `Retry-After` the breaker honours: the core's `retry_after::applies`), and the numbers
/// of the wasm interface (`codes`,
/// limits and layouts; the reading limit is [`reading_limit_ms`]), among them
/// `maxCauses`: how deep the classifier follows an error's `cause` ([`MAX_CAUSES`], the
/// depth every host walks).
#[wasm_bindgen]
pub fn tables() -> String {
    let mut out = String::from("{");
    list(&mut out, "states", State::ALL, |o, c| name(o, c.name()));
    list(&mut out, "reasons", Reason::ALL, |o, c| name(o, c.name()));
    list(&mut out, "rejectReasons", RejectReason::ALL, |o, c| {
        name(o, c.name())
    });
    list(&mut out, "classes", Class::ALL, |o, c| name(o, c.name()));
    list(&mut out, "outcomeKinds", OutcomeKind::ALL, |o, c| {
        name(o, c.name())
    });
    list(&mut out, "fleetEventKinds", FleetEventKind::ALL, |o, c| {
        name(o, c.name())
    });
    list(&mut out, "fleetApplied", FleetApplied::ALL, |o, c| {
        name(o, c.name())
    });
    list(
        &mut out,
        "announcementKinds",
        AnnouncementKind::ALL,
        |o, c| name(o, c.name()),
    );
    list(&mut out, "metricFields", MetricField::ALL, |o, f| {
        let _ = write!(o, "[\"{}\",\"{}\"]", f.name(), f.kind().name());
    });
    list(&mut out, "errorRules", errors::RULES, |o, r| {
        let _ = write!(
            o,
            "[\"{}\",\"{}\",\"{}\"]",
            r.name.name(),
            r.text,
            r.outcome.kind().name()
        );
    });
    list(&mut out, "fields", Field::ALL, |o, f| {
        let _ = write!(
            o,
            "{{\"name\":\"{}\",\"option\":\"{}\",\"kind\":\"{}\"}}",
            f.name(),
            f.js_name(),
            f.kind().name()
        );
    });
    list(&mut out, "retryFields", &retry::SETTINGS, |o, s| {
        let _ = write!(
            o,
            "{{\"name\":\"{}\",\"option\":\"{}\",\"kind\":\"{}\"}}",
            s.name,
            s.option,
            s.kind.name()
        );
    });
    list(&mut out, "retryStops", Stop::ALL, |o, c| name(o, c.name()));
    out.push_str("\"retryAfterStatuses\":[");
    let statuses = (HttpStatus::MIN..=HttpStatus::MAX).filter(|&s| retry_after::applies(s));
    for (i, status) in statuses.enumerate() {
        let _ = write!(out, "{}{status}", if i > 0 { "," } else { "" });
    }
    out.push_str("],");
    let _ = write!(
        out,
        "\"codes\":{{\"transitioned\":{TRANSITIONED},\"needClock\":{NEED_CLOCK},\
         \"shadowed\":{SHADOWED},\
         \"badOutcome\":{BAD_OUTCOME},\"notAPermit\":{NOT_A_PERMIT},\
         \"kindBase\":{KIND_BASE},\"grpcBase\":{GRPC_BASE},\"badEvent\":{BAD_EVENT}}},\
         \"handleLimit\":{HANDLE_LIMIT},\"maxOutstanding\":{MAX_OUTSTANDING},\
         \"statusMin\":{},\"statusMax\":{},\"grpcMax\":{},\"maxCauses\":{MAX_CAUSES},\
         \"maxTransitions\":{MAX_TRANSITIONS},\"transitionWidth\":{TRANSITION_WIDTH},\
         \"metricsFixed\":{METRICS_FIXED},\"metricsLen\":{METRICS_LEN},\
         \"fleetStatusLen\":{FLEET_STATUS_LEN}}}",
        HttpStatus::MIN,
        HttpStatus::MAX,
        GrpcCode::MAX,
    );
    out
}

/// The first clock reading (ms) that is not observed (see [`crate::time`]). An export of
/// its own: writing a float into the JSON would pull in float formatting (~20 KB).
#[wasm_bindgen]
pub fn reading_limit_ms() -> f64 {
    READING_LIMIT_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_are_json_shaped() {
        let json = tables();
        assert!(
            json.starts_with("{\"states\":[\"closed\",\"open\","),
            "{json}"
        );
        assert!(json
            .contains("{\"name\":\"cooldown\",\"option\":\"cooldownMs\",\"kind\":\"duration\"}"));
        assert!(json.contains("\"needClock\":-1073741824,\"shadowed\":-1073741823,"));
        assert!(json.contains("\"retryAfterStatuses\":[429,503],"), "{json}");
        assert!(json.contains(
            "\"retryFields\":[{\"name\":\"max-attempts\",\"option\":\"maxAttempts\",\"kind\":\"count\"},"
        ));
        assert!(json.contains("{\"name\":\"seed\",\"option\":\"seed\",\"kind\":\"seed\"}],"));
        assert!(
            json.contains("\"retryStops\":[\"answered\",\"attempts\",\"budget\",\"stay-away\"],")
        );
        assert!(json.contains("\"grpcMax\":16,\"maxCauses\":8,"), "{json}");
        assert!(
            json.ends_with("\"metricsLen\":31,\"fleetStatusLen\":6}"),
            "{json}"
        );
        assert!(
            json.contains("\"fleetApplied\":[\"applied\",\"stale\",\"held\",\"not-in-fleet\"],")
        );
        let fields = json.matches("\"option\":").count();
        assert_eq!(fields, Field::ALL.len() + retry::SETTINGS.len());
    }
}
