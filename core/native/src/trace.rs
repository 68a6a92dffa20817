//! Transitions as `tracing` events (feature `tracing`), target `tripgate`, with the fields
//! `breaker`, `from`, `to`, `reason` and `epoch`; `WARN` when a breaker stops traffic
//! (open, isolated), `INFO` otherwise.
//!
//! Breakers made by a [`Registry`](crate::Registry) emit them from the start (their
//! transition listener). For a breaker of your own, install [`listener`]:
//! `breaker.on_transition(tripgate::trace::listener("payments"))`; a listener of yours
//! replaces it, so call [`transition`] from yours to keep the events.

pub use tripgate_core::trace::{listener, transition, TARGET};
