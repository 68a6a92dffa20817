//! Shared by the host-demo tests: one compiled component per test binary, fake clocks.

#![allow(dead_code)]

use std::sync::{Arc, OnceLock};

use tripgate_wasmtime::{Clock, FakeClock, Runtime};

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
