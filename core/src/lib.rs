//! # tripgate-core
//!
//! A circuit breaker as a pure state machine: no clock, no allocation, no I/O, no
//! `unsafe`, no panics. Every operation takes `now`, nanoseconds on the host's monotonic
//! clock, so the same breaker runs unchanged inside a WebAssembly component, a wasmtime
//! host, a JS package or a test with a fake clock, and gives the same decisions in each.
//!
//! ```
//! use tripgate_core::{Breaker, Class, Config, Outcome, RejectReason, State, SECOND};
//!
//! let mut breaker = Breaker::new(Config::default(), 0).unwrap();
//!
//! // A call: acquire a permit, make the call, record its outcome.
//! let permit = breaker.acquire(0).decision.expect("closed breakers admit");
//! let recorded = breaker.record(permit, Outcome::status(404).unwrap(), 1_000);
//! assert_eq!(recorded.class, Class::Success); // the upstream answered: it is alive
//!
//! // Five 503s in the window trip it; the call that trips it reports the transition.
//! for t in 1..=5 {
//!     let permit = breaker.acquire(t * SECOND).decision.unwrap();
//!     let recorded = breaker.record(permit, Outcome::status(503).unwrap(), t * SECOND);
//!     if let Some(transition) = recorded.transitions.last() {
//!         assert_eq!((transition.from, transition.to), (State::Closed, State::Open));
//!     }
//! }
//!
//! // Open: callers are turned away at once, with how long to wait.
//! let rejection = breaker.acquire(6 * SECOND).decision.unwrap_err();
//! assert_eq!(rejection.reason, RejectReason::Open);
//! assert_eq!(rejection.retry_after, 14 * SECOND);
//! ```
//!
//! The modules read top-down: [`config`](Config) and [`outcome`](Outcome) say what the
//! breaker is told, [`Breaker`] is the state machine, and the window, in-flight and probe
//! modules hold its fixed-size memory. `SPEC.md`'s rules each have a named test in
//! `tests/spec.rs`.

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unreachable,
    clippy::todo,
    clippy::unimplemented
)]

#[cfg(feature = "alloc")]
extern crate alloc;

mod table;

mod codec;
mod config;
pub mod errors;
pub mod exposition;
pub mod fleet;
#[cfg(feature = "alloc")]
mod handles;
mod inflight;
mod metrics;
mod outcome;
mod permit;
mod phase;
mod probes;
mod rejection;
pub mod retry;
pub mod retry_after;
mod snapshot;
mod state;
mod time;
mod transition;
mod window;
mod words;

mod breaker;

pub use breaker::{Admission, Breaker, Reconfigured, Recorded, Verdict};
pub use config::{
    Config, ConfigError, Field, FieldKind, Rule, MAX_BACKOFF_FACTOR, MAX_BUCKETS, MAX_PROBES,
    MAX_QUORUM, MAX_WINDOW_CALLS, UNCAPPED_BACKOFF_BOUND,
};
pub use errors::{ErrorName, ErrorRule};
pub use fleet::{
    Announcement, AnnouncementKind, FleetApplied, FleetEvent, FleetEventKind, FleetStatus,
};
#[cfg(feature = "alloc")]
pub use handles::{PermitTable, HANDLE_BITS, HANDLE_LIMIT, MAX_OUTSTANDING};
pub use metrics::{MetricField, MetricKind, MetricValue, Metrics, REJECT_REASONS};
pub use outcome::{
    Class, GrpcCode, GrpcSet, HttpStatus, Outcome, OutcomeError, OutcomeKind, StatusSet, MAX_CAUSES,
};
pub use permit::{MalformedPermit, Permit, RawPermit};
pub use rejection::{RejectReason, Rejection};
pub use snapshot::{SnapshotError, SnapshotErrorKind, MAX_EXPORT_LEN, MAX_IMPORT_EPOCH};
pub use state::State;
pub use time::{Nanos, MILLISECOND, SECOND};
pub use transition::{
    Reason, Route, Transition, Transitions, MAX_TRANSITIONS, ROUTES, ROUTE_COUNT,
};
pub use window::Tally;
pub use words::Words;

/// The key the component's `breaker.key()` gives a breaker it cannot file (2²⁰ alive in
/// the instance, or every slot retired): it names no breaker, so the keyed hot path
/// answers "unknown" for it (`wit/breaker.wit`).
pub const NO_KEY: u32 = u32::MAX;
