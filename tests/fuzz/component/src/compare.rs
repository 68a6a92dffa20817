//! The component's answers against the native mirror's, field by field.

use tripgate_core as core_api;
use tripgate_wasmtime::{core_state, core_transition, wit};

pub(crate) fn transitions(got: &[wit::Transition], want: &core_api::Transitions, what: &str) {
    let got: Vec<core_api::Transition> = got.iter().map(core_transition).collect();
    let want: Vec<core_api::Transition> = want.iter().copied().collect();
    assert_eq!(got, want, "{what}: transitions");
}

pub(crate) fn rejection(got: &wit::Rejection, want: &core_api::Rejection, what: &str) {
    assert_eq!(
        (
            core_state(got.state).code(),
            got.reason as u8,
            got.retry_after
        ),
        (want.state.code(), want.reason.code(), want.retry_after),
        "{what}: rejection"
    );
}

pub(crate) fn recorded(got: &wit::Recorded, want: &core_api::Recorded, what: &str) {
    assert_eq!(
        (got.class as u8, got.slow, got.stale),
        (want.class.code(), want.slow, want.stale),
        "{what}: recorded"
    );
    transitions(&got.transitions, &want.transitions, what);
}
