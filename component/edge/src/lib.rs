//! tripgate-edge: the tripgate http-guard component served for real.
//!
//! [`GUARD`] is the composed component: the `wasi:http` handler of
//! `component/http-guard` with the shipped tripgate component plugged into its
//! `tripgate:breaker/circuit-breaker` import by wac-graph (build.rs). [`BARE`] is the
//! same handler built without the breaker and the store, the baseline of the
//! measurements. [`server::Server`] serves either on a TCP address with a fresh instance
//! per request and a key-value store shared by all instances ([`kv::KeyValue`]).

pub mod client;
pub mod clock;
pub mod kv;
pub mod server;
pub mod spin;

pub use clock::FakeClock;
pub use kv::{KeyValue, KvStats};
pub use server::{Handler, Options, Runtime, Server};

/// The composed guard component (wac-graph: the tripgate component plugged into the
/// guard).
pub const GUARD: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/guard.wasm"));

/// The handler without the breaker and the store (the guard's `bare` feature).
pub const BARE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bare.wasm"));
