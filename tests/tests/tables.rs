//! The WIT and the core list every shared enumeration's cases in the same order.
//!
//! The component turns core codes into WIT cases by position (`from_repr`), and the
//! wasmtime host turns WIT cases back into core codes the same way, so a case added to
//! one and not the other, or in another place, would mistranslate. This reads
//! `wit/breaker.wit` with wit-parser and compares.

use std::path::Path;

use tripgate_core::{
    Class, Field, OutcomeKind, Reason, RejectReason, SnapshotErrorKind, State, ROUTES,
};
use wit_parser::{Resolve, TypeDefKind};

fn wit_cases(resolve: &Resolve, name: &str) -> Vec<String> {
    let (_, iface) = resolve
        .interfaces
        .iter()
        .find(|(_, i)| i.name.as_deref() == Some("circuit-breaker"))
        .expect("the circuit-breaker interface");
    let id = iface.types[name];
    match &resolve.types[id].kind {
        TypeDefKind::Enum(e) => e.cases.iter().map(|c| c.name.clone()).collect(),
        TypeDefKind::Variant(v) => v.cases.iter().map(|c| c.name.clone()).collect(),
        other => panic!("{name} is a {other:?}, not an enum or variant"),
    }
}

fn core_cases<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> Vec<String> {
    all.iter().map(|&case| name(case).to_string()).collect()
}

#[test]
fn every_wit_enum_lists_the_core_table_in_code_order() {
    let mut resolve = Resolve::default();
    resolve
        .push_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit"))
        .expect("parse wit/");
    let pairs = [
        ("state", core_cases(State::ALL, State::name)),
        ("reason", core_cases(Reason::ALL, Reason::name)),
        (
            "reject-reason",
            core_cases(RejectReason::ALL, RejectReason::name),
        ),
        ("class", core_cases(Class::ALL, Class::name)),
        ("config-field", core_cases(Field::ALL, Field::name)),
        (
            "snapshot-error-kind",
            core_cases(SnapshotErrorKind::ALL, SnapshotErrorKind::name),
        ),
        ("outcome", core_cases(OutcomeKind::ALL, OutcomeKind::name)),
    ];
    for (wit_name, core) in pairs {
        assert_eq!(wit_cases(&resolve, wit_name), core, "WIT `{wit_name}`");
    }
}

/// `metrics.transitions-by-route` is a list of counts by position, so its docs, which
/// name each position's route, must list the core's `ROUTES` in order: the component
/// writes the counts in that order and the wasmtime host reads them back by it.
#[test]
fn the_wit_names_the_routes_of_the_transition_counts_in_core_order() {
    let mut resolve = Resolve::default();
    resolve
        .push_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit"))
        .expect("parse wit/");
    let (_, iface) = resolve
        .interfaces
        .iter()
        .find(|(_, i)| i.name.as_deref() == Some("circuit-breaker"))
        .expect("the circuit-breaker interface");
    let TypeDefKind::Record(record) = &resolve.types[iface.types["metrics"]].kind else {
        panic!("metrics is a record");
    };
    let field = record
        .fields
        .iter()
        .find(|f| f.name == "transitions-by-route")
        .expect("metrics.transitions-by-route");
    let docs = field.docs.contents.as_deref().unwrap_or_default();
    let listed: Vec<String> = docs
        .split(|c: char| c.is_whitespace() || c == ',' || c == ':')
        .filter(|word| word.contains('/'))
        .map(|word| word.trim_end_matches('.').to_string())
        .collect();
    let core: Vec<String> = ROUTES
        .iter()
        .map(|r| format!("{}/{}", r.from.name(), r.reason.name()))
        .collect();
    assert_eq!(listed, core);
}

#[test]
fn codes_are_positions_and_names_round_trip() {
    for (i, state) in State::ALL.iter().enumerate() {
        assert_eq!(usize::from(state.code()), i);
        assert_eq!(State::from_code(state.code()), Some(*state));
        assert_eq!(State::from_name(state.name()), Some(*state));
    }
    for reason in Reason::ALL {
        assert_eq!(Reason::from_code(reason.code()), Some(*reason));
        assert_eq!(Reason::from_name(reason.name()), Some(*reason));
    }
    assert_eq!(Reason::from_code(Reason::ALL.len() as u8), None);
    for field in Field::ALL {
        assert_eq!(Field::from_name(field.name()), Some(*field));
        assert!(!field.js_name().contains('-'), "{}", field.js_name());
    }
}
