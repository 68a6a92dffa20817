//! # tripgate: a circuit breaker for Rust services
//!
//! The native core (`tripgate-core`) as a breaker threads can share: it owns a fast clock
//! and the core's state behind a lock held for a few nanoseconds, and every decision is the
//! core's, the same the component and the npm package make.
//!
//! ```
//! use std::time::Duration;
//! use tripgate::{Breaker, CallError, Config, Status};
//!
//! let breaker = Breaker::new(Config { failure_threshold: 3, ..Config::default() }).unwrap();
//!
//! // One step: run a closure with a budget, classify its result, fall back when the
//! // breaker rejects the call or counts it as a fault.
//! let status = breaker
//!     .call(Duration::from_secs(2), || Status(503)) // ... make the call ...
//!     .unwrap_or_else(|error| match error {
//!         CallError::Failed(status) => status,  // a fault, counted: here is the answer
//!         _ => Status(200),                     // rejected: serve a fallback
//!     });
//! assert_eq!(status, Status(503));
//!
//! // Or two: acquire a permit, make the call, record its outcome. A permit dropped
//! // without an outcome is recorded as `cancelled`.
//! if let Ok(permit) = breaker.acquire() {
//!     permit.record(tripgate::Outcome::Success);
//! };
//! ```
//!
//! * [`Breaker`]: `Send + Sync`, an RAII [`Permit`] per call, [`Breaker::call`] and
//!   (feature `tokio`) `Breaker::call_async` with classification ([`Classify`], the
//!   core's rules for statuses and `io::Error`s), a timeout and a [`CallError`] to fall
//!   back on; transition listeners ([`Breaker::on_transition`]); export and import.
//! * [`Registry`]: named breakers, one per upstream.
//! * [`CoarseClock`] (the default): a millisecond-fresh reading of the CPU's time-stamp
//!   counter (via `quanta`) kept by a ticker thread, one atomic load; [`QuantaClock`]: the
//!   counter read each time, for exact call durations. A closed breaker admits without reading any clock.
//! * `prometheus` (feature `prometheus`): a `prometheus-client` collector over a breaker
//!   or a registry; `trace` (feature `tracing`): transitions as `tracing` events.
//! * `tower::CircuitBreakerLayer` (feature `tower`): the breaker around any tower service
//!   whose responses are `http::Response`s, hyper clients and servers included.
//!
//! Tests hand breakers a `FakeClock` ([`Breaker::with_clock`] with an `Arc<FakeClock>`).

#![deny(missing_docs)]

mod breaker;
mod call;
mod host;
#[cfg(feature = "tower")]
pub mod tower;

pub use breaker::{Breaker, OwnedPermit, Permit};
pub use tripgate_core::retry::{RetryError, RetryField, RetryPolicy};
pub use tripgate_core::{
    Class, Config, ConfigError, GrpcSet, Metrics, Nanos, Outcome, Reason, Reconfigured,
    RejectReason, Rejection, SnapshotError, State, StatusSet, Transition, Transitions, Verdict,
    MILLISECOND, SECOND,
};
/// `prometheus-client` collectors over a breaker or a registry (feature `prometheus`).
#[cfg(feature = "prometheus")]
pub use tripgate_host::prometheus;
/// Transitions as `tracing` events (feature `tracing`).
#[cfg(feature = "tracing")]
pub use tripgate_host::trace;
/// Why a guarded call gives no good value, as every Rust host gives it (the native
/// breaker itself never fails, so its `Host` case is `Infallible` and needs no arm).
pub use tripgate_host::CallError;
pub use tripgate_host::Retries;
pub use tripgate_host::{
    error_outcome, Classify, Clock, CoarseClock, FakeClock, MonotonicClock, QuantaClock, Status,
    COARSE_TICK,
};

/// Named breakers, one per upstream, all reading one clock:
/// `Registry::new(CoarseClock::new(), config)`.
pub type Registry<C = CoarseClock> = tripgate_host::Registry<Breaker<C>>;
