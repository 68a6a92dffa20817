//! Transitions as `tracing` events (feature `tracing`): target `tripgate`, fields
//! `breaker`, `from`, `to`, `reason`, `epoch`. The hosts install [`listener`] as a
//! transition listener, so an event costs nothing on a call that changes no state.

use std::string::String;

use tripgate_core::{State, Transition};

/// The target every event has (`RUST_LOG=tripgate=info` with `tracing-subscriber`).
pub const TARGET: &str = "tripgate";

/// Emits one event for `transition` of the breaker named `breaker`: at `WARN` when it
/// stops traffic (entering open or isolated), at `INFO` otherwise.
pub fn transition(breaker: &str, transition: &Transition) {
    // `event!` needs its level at compile time: one call site per level.
    macro_rules! emit {
        ($level:expr) => {
            tracing::event!(
                target: "tripgate",
                $level,
                breaker,
                from = transition.from.name(),
                to = transition.to.name(),
                reason = transition.reason.name(),
                epoch = transition.epoch,
                "circuit breaker {breaker}: {} -> {} ({})",
                transition.from,
                transition.to,
                transition.reason,
            )
        };
    }
    if matches!(transition.to, State::Open | State::Isolated) {
        emit!(tracing::Level::WARN);
    } else {
        emit!(tracing::Level::INFO);
    }
}

/// A transition listener that emits [`transition`] events for the breaker named `breaker`.
pub fn listener(breaker: impl Into<String>) -> impl Fn(&Transition) + Send + Sync + 'static {
    let breaker = breaker.into();
    move |t| transition(&breaker, t)
}
