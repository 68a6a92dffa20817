//! Benchmarks only: `cargo bench -p tripgate-wasmtime-bench` (see `benches/`), and what the
//! bench and the examples share.

use tripgate_wasmtime::bindings::Tripgate;
use tripgate_wasmtime::{wit, COMPONENT};
use wasmtime::component::{Component, Linker, ResourceAny};
use wasmtime::{Engine, Store};

/// A bare store with one breaker (default config, created at 0): the generated bindings
/// and nothing else, the floor the host library is measured against.
pub struct Bare {
    pub store: Store<()>,
    pub tripgate: Tripgate,
    /// The breaker's handle.
    pub me: ResourceAny,
    /// The breaker's key, for the keyed hot path.
    pub key: u32,
}

impl Bare {
    pub fn new(engine: &Engine) -> Self {
        let component = Component::new(engine, COMPONENT).unwrap();
        let mut store = Store::new(engine, ());
        let tripgate = Tripgate::instantiate(&mut store, &component, &Linker::new(engine)).unwrap();
        let api = tripgate.tripgate_breaker_circuit_breaker().breaker();
        let me = api
            .call_create(&mut store, &wit::Config::default(), 0)
            .unwrap()
            .unwrap();
        let key = api.call_key(&mut store, me).unwrap();
        Self {
            store,
            tripgate,
            me,
            key,
        }
    }
}
