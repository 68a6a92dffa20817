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
pub mod kv_draft;
mod outbound;
pub mod server;
pub mod spin;

pub use clock::FakeClock;
pub use kv::{KeyValue, KvStats};
pub use kv_draft::DraftStore;
pub use server::{EngineKind, Handler, Options, Runtime, Server};

/// The composed guard component (wac-graph: the tripgate component plugged into the
/// guard).
pub const GUARD: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/guard.wasm"));

/// The composed guard built for `wasi:keyvalue@0.2.0-draft` (the guard's `draft`
/// feature: no compare-and-swap, writes conditional on a version counter).
pub const GUARD_DRAFT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/guard-draft.wasm"));

/// The handler without the breaker and the store (the guard's `bare` feature).
pub const BARE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bare.wasm"));

/// The slots one instance of a component takes from wasmtime's pooling allocator: linear
/// memories and tables, counted by build.rs from the component's bytes as the allocator
/// counts them (each module instantiation's own memories and tables). The server sizes its
/// pool from these, and checks them against wasmtime's own count when it compiles the
/// component ([`server::Runtime::new`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    pub memories: u32,
    pub tables: u32,
}

include!(concat!(env!("OUT_DIR"), "/footprint.rs"));
