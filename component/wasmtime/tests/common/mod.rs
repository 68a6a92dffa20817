//! Shared by the host-demo tests: one compiled component per test binary, fake clocks,
//! an instance on the bare bindings.

#![allow(dead_code)]

use std::sync::{Arc, OnceLock};

use tripgate_wasmtime::bindings::Tripgate;
use tripgate_wasmtime::{Clock, FakeClock, Runtime, COMPONENT};
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, Store};

/// The component, compiled once per test binary.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::new().expect("compile the embedded component"))
}

/// A runtime on a fake clock starting at `start`, and the clock.
pub fn fake(start: u64) -> (Runtime, Arc<FakeClock>) {
    let clock = Arc::new(FakeClock::new(start));
    let runtime = runtime().with_clock(Arc::clone(&clock) as Arc<dyn Clock + Send + Sync>);
    (runtime, clock)
}

/// A fresh instance of the component on the bare bindings (`bindgen!`'s, no library
/// around them), on an engine of its own.
pub fn bare() -> (Store<()>, Tripgate) {
    let engine = Engine::default();
    let component = Component::new(&engine, COMPONENT).expect("compile the component");
    let mut store = Store::new(&engine, ());
    let tripgate = Tripgate::instantiate(&mut store, &component, &Linker::new(&engine))
        .expect("instantiate the component");
    (store, tripgate)
}
