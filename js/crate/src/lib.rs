//! # tripgate-wasm
//!
//! The wasm-bindgen layer of the `tripgate` npm package. It only translates: every
//! decision is `tripgate-core`'s, and every table (states, reasons, reject reasons,
//! classes, outcome kinds, config fields) is the core's, handed to JS once by
//! [`tables()`]. Everything on the hot path crosses the boundary as a number, so a guarded
//! call allocates no JS object (a number-returning export costs ~8 ns from Node, a class
//! instance ~220 ns).
//!
//! The modules: [`time`](mod@time) (clock readings and durations), [`config`](mod@config)
//! (JS options to the core's [`Config`](tripgate_core::Config)), [`outcome`](mod@outcome)
//! (outcome codes; permits live in the core's [`PermitTable`](tripgate_core::PermitTable)),
//! [`breaker`](mod@breaker) (the exported breaker), [`fleet`](mod@fleet) (fleet mode's
//! pass-through to the core), [`retry_after`](mod@retry_after) (the core's reading of an
//! answer's `Retry-After` and gRPC pushback), [`retry`](mod@retry) (the core's retry
//! policy and the budget a breaker's callers share) and [`tables`](mod@tables).
//!
//! ## Return codes
//!
//! - [`Breaker::acquire`]: a permit handle (0 ≤ handle < 2³⁰), or `-(1 + code)` for a
//!   rejection, `code` being the core's [`RejectReason`](tripgate_core::RejectReason) code.
//!   When the call caused transitions, [`TRANSITIONED`] is added to a permit or
//!   subtracted from a rejection (read them with [`Breaker::transitions`]). A call that
//!   only shadow mode admitted (SPEC § Shadow mode) returns [`SHADOWED`] instead: its
//!   handle (with [`TRANSITIONED`] added likewise) is read with [`Breaker::shadow_permit`],
//!   and JS hands it out as `handle + 0.5`, so that the number itself says it is a shadow
//!   permit while the common path still moves one small integer.
//! - [`Breaker::record`] (and [`Breaker::record_after`], with the stay-away the answer
//!   asked for): `class | slow << 2 | stale << 3 | transitions << 4` (`class` the
//!   core's [`Class`](tripgate_core::Class) code), or [`BAD_OUTCOME`] / [`NOT_A_PERMIT`]
//!   (nothing changed). A permit is a handle, or a shadow permit's `handle + 0.5`.
//! - Outcomes: an HTTP status as itself, [`KIND_BASE`]` + code` for the kinds that carry no
//!   number (the core's [`OutcomeKind`](tripgate_core::OutcomeKind) code: success, timeout,
//!   connection-error, failure, cancelled, ignored), [`GRPC_BASE`]` + code` for gRPC.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod breaker;
pub mod config;
pub mod exposition;
pub mod fleet;
pub mod fleet_protocol;
pub mod outcome;
pub mod retry;
pub mod retry_after;
pub mod tables;
pub mod time;

pub use breaker::Breaker;
pub use config::check_config;
pub use exposition::exposition_table;
pub use outcome::{GRPC_BASE, KIND_BASE};
pub use retry::{retry_policy, RetryBudget};
pub use tables::{reading_limit_ms, tables};

/// Added to a permit handle (subtracted from a rejection code) returned by `acquire` when
/// the call caused transitions. Above every handle, so the sum stays an `i32`.
pub const TRANSITIONED: i32 = 1 << tripgate_core::HANDLE_BITS;
/// `acquire_closed`: the breaker is not closed (or hang detection is on); call `acquire`
/// with a clock reading. Between the rejection codes with and without [`TRANSITIONED`],
/// and a V8 small integer on every build.
pub const NEED_CLOCK: i32 = -TRANSITIONED;
/// `acquire`: shadow mode admitted a call the breaker would have turned away; its permit
/// is [`Breaker::shadow_permit`]. Between [`NEED_CLOCK`] and the rejection codes without
/// [`TRANSITIONED`], which it can be confused with neither.
pub const SHADOWED: i32 = NEED_CLOCK + 1;
/// `record`: the outcome is not valid (status outside 100–599, gRPC code above 16).
pub const BAD_OUTCOME: i32 = -1;
/// `record`: the first argument is not a permit handle (negative, fractional, too big).
pub const NOT_A_PERMIT: i32 = -2;
