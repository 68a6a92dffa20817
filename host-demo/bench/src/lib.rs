//! Benchmarks only: `cargo bench -p tripgate-wasmtime-bench` (see `benches/`), and what the
//! bench and the examples share.

use tripgate_wasmtime::bindings::Tripgate;
use tripgate_wasmtime::{wit, Runtime, COMPONENT};
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
    /// The embedded component compiled anew for `engine` (to compare engine settings).
    pub fn new(engine: &Engine) -> Self {
        Self::of(engine, &Component::new(engine, COMPONENT).unwrap())
    }

    /// Another instance of the component `runtime` compiled: the same machine code the
    /// library runs, so that a comparison with the library is not also one of where two
    /// compilations landed in memory.
    pub fn sharing(runtime: &Runtime) -> Self {
        Self::of(runtime.engine(), runtime.component())
    }

    fn of(engine: &Engine, component: &Component) -> Self {
        let mut store = Store::new(engine, ());
        let tripgate = Tripgate::instantiate(&mut store, component, &Linker::new(engine)).unwrap();
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
