//! # tripgate-host: what every std host of tripgate shares
//!
//! `tripgate-core` is the breaker as a pure state machine: it takes `now` and never
//! reads a clock, locks nothing and allocates nothing. A host that runs on an operating
//! system needs more around it, and this crate is that machinery, written once for both
//! Rust hosts (the native `tripgate` breaker and `tripgate-wasmtime`, which runs the
//! core inside the component) and for the fleet adapter (`tripgate-redis`):
//!
//! * clocks ([`clock`]): the [`Clock`] a breaker reads, [`FakeClock`] for tests,
//!   [`MonotonicClock`], and the fast [`CoarseClock`] (the default) and [`QuantaClock`];
//! * [`Lock`], the breaker's lock: one atomic read-modify-write to take, a store to give
//!   back (the only `unsafe` of the project's Rust hosts);
//! * [`ListenerSlot`], where a breaker keeps its transition listener;
//! * [`HostBreaker`], what a host's breaker offers the shared code, and on it: the guarded
//!   call ([`call::guarded`], [`CallError`], classification by [`Classify`] and
//!   [`error_outcome`]) and the [`Registry`] of named breakers;
//! * [`fleet::Member`], what a fleet adapter drives on a breaker;
//! * `prometheus` (feature `prometheus`): `prometheus-client` collectors over any host's
//!   breakers; `trace` (feature `tracing`): transitions as `tracing` events.
//!
//! Every decision stays the core's: nothing here looks at a breaker's state.

#![deny(missing_docs)]
#![deny(unsafe_code)]

mod breaker;
pub mod call;
mod classify;
pub mod clock;
mod coarse;
mod errno;
pub mod fleet;
mod listener;
#[allow(unsafe_code)]
pub mod lock;
#[cfg(feature = "prometheus")]
pub mod prometheus;
mod registry;
pub mod retry;
pub mod stay_away;
#[cfg(feature = "tracing")]
pub mod trace;

pub use breaker::{HostBreaker, MakeBreaker};
pub use call::CallError;
pub use classify::{error_outcome, Classify, Judged, Status};
pub use clock::{Clock, FakeClock, MonotonicClock};
pub use coarse::{CoarseClock, QuantaClock, COARSE_TICK};
pub use errno::code as errno_code;
pub use listener::{AlreadyWatched, Listener, ListenerSlot, Watcher};
pub use lock::Lock;
pub use registry::{Readings, Registry};
pub use retry::Retries;
pub use tripgate_core::MAX_CAUSES;
