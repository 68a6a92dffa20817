//! Transitions as `tracing` events (feature `tracing`), target `tripgate`, with the fields
//! `breaker`, `from`, `to`, `reason` and `epoch`; `WARN` when a breaker stops traffic
//! (open, isolated), `INFO` otherwise. The same events as the native breaker's.
//!
//! Breakers made by a [`Registry`](crate::Registry) emit them from the start (their
//! transition listener). For a breaker of your own, install [`listener`]:
//! `breaker.on_transition(tripgate_wasmtime::trace::listener("payments"))`; a listener of
//! yours replaces it, so call [`transition`] from yours to keep the events.

pub use tripgate_core::trace::{listener, transition, TARGET};
