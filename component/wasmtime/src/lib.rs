//! # tripgate-wasmtime: tripgate's component in wasmtime
//!
//! Loads the tripgate component (built from `component/` and embedded in this crate at
//! build time) in wasmtime and gives Rust services a breaker they can share between
//! threads:
//!
//! ```no_run
//! use tripgate_wasmtime::{Config, Outcome, Runtime};
//! use std::time::Duration;
//!
//! # fn main() -> anyhow::Result<()> {
//! // Compile the component once per process; breakers are cheap after that.
//! let runtime = Runtime::new()?;
//! let breaker = runtime.breaker(&Config { failure_threshold: 3, ..Config::default() })?;
//!
//! // Two steps: acquire a permit, make the call, record its outcome.
//! match breaker.acquire()?.decision {
//!     Ok(permit) => {
//!         let status = 503; // ... make the call ...
//!         permit.record(Outcome::Status(status))?;
//!     }
//!     Err(rejection) => println!("not now: retry in {} ns", rejection.retry_after),
//! }
//!
//! // Or one: run a closure with a timeout, classify its result, fall back when rejected
//! // or failed.
//! let body = breaker
//!     .call(Duration::from_secs(2), || std::fs::read_to_string("/etc/hostname"))
//!     .unwrap_or_else(|_| Ok(String::from("fallback")));
//! # Ok(())
//! # }
//! ```
//!
//! * [`Runtime`]: the engine and the compiled component, loaded once and shared (clone
//!   it freely).
//! * [`Instance`]: one instance of the component (a wasmtime `Store` behind a lock) that
//!   holds any number of breakers. [`Runtime::breaker`] gives each breaker its own
//!   instance, so breakers never contend for a lock.
//! * [`Breaker`]: `Send + Sync` and cheap to clone. [`Permit`] releases itself as
//!   `cancelled` when dropped without an outcome.
//! * [`Breaker::call`] / `Breaker::call_async` (feature `tokio`): the guarded call, with
//!   a per-call timeout, classification by the core's rules ([`Classify`]) and a
//!   [`CallError`] to fall back on.
//! * [`Registry`]: named breakers, one per upstream.
//!
//! Time comes from a [`Clock`]: [`CoarseClock`] by default (a millisecond-fresh reading of
//! the CPU's counter, one atomic load: the breaker needs bucket and millisecond precision,
//! and an `Instant::now()` per call would be a tenth of a guarded pair), [`QuantaClock`]
//! or [`MonotonicClock`] for exact call durations, a [`FakeClock`] in tests
//! ([`Runtime::with_clock`]). Every decision is made inside the component by
//! `tripgate-core`; this crate only moves values across the boundary.

#![deny(missing_docs)]

mod breaker;
mod call;
mod config;
mod convert;
mod engine;
mod guest;
mod host;
mod instance;
mod runtime;

pub use breaker::{
    Admission, Breaker, Permit, RawAdmission, RawPermit, Reconfigured, RecordError, Recorded,
};
pub use call::CallError;
pub use config::ConfigError;
pub use convert::{core_fleet_status, core_metrics, core_rejection, core_state, core_transition};
pub use engine::{MAX_BREAKERS_PER_INSTANCE, MEMORY_LIMIT};
pub use guest::SNAPSHOT_PERIOD;
pub use instance::Instance;
pub use runtime::Runtime;
/// The core this host runs inside the component, for its outcome and classification types.
pub use tripgate_core;
pub use tripgate_core::retry::{RetryError, RetryField, RetryPolicy};
pub use tripgate_core::{Config, GrpcSet, StatusSet, MILLISECOND, SECOND};
/// `prometheus-client` collectors over a breaker or a registry (feature `prometheus`).
#[cfg(feature = "prometheus")]
pub use tripgate_host::prometheus;
/// Transitions as `tracing` events (feature `tracing`).
#[cfg(feature = "tracing")]
pub use tripgate_host::trace;
pub use tripgate_host::{stay_away, Retries};
pub use tripgate_host::{
    Classify, Clock, CoarseClock, FakeClock, MonotonicClock, QuantaClock, Status,
};
/// What [`Registry::readings`] found.
pub type Readings = tripgate_host::Readings<anyhow::Error>;

/// Named breakers, one per upstream, each in an instance of its own (so a hot upstream's
/// breaker never waits on another's lock): `Registry::new(runtime, config)`.
pub type Registry = tripgate_host::Registry<Breaker>;

/// The code `bindgen!` generates from `wit/breaker.wit` (its docs are the WIT's).
#[allow(missing_docs)]
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "tripgate",
        additional_derives: [PartialEq],
    });
}

/// The WIT interface's types, as `bindgen!` names them.
pub use bindings::exports::tripgate::breaker::circuit_breaker as wit;
/// What the breaker reports: the core's own types, as the native breaker and every other
/// host report them.
pub use tripgate_core::{
    Announcement, AnnouncementKind, Class, FleetApplied, FleetEvent, FleetEventKind, FleetStatus,
    Metrics, Reason, RejectReason, Rejection, State, Tally, Transition,
};
/// The outcomes `record` takes: the WIT's, unvalidated (an invalid status is the
/// component's to refuse); the core's `Outcome` converts into it.
pub use wit::{Outcome, SnapshotError};

/// The tripgate component this crate was built with (`wit/breaker.wit`'s `tripgate`
/// world, no imports), for hosts that want the bytes themselves.
pub const COMPONENT: &[u8] = include_bytes!("../tripgate.wasm");
