//! The conformance suite every Rust host's breaker runs (`tripgate_vectors::conformance`),
//! on the component in wasmtime.

mod common;

use std::sync::Arc;

use tripgate_vectors::conformance::Host;
use tripgate_wasmtime::{Breaker, Clock, Config, FakeClock};

struct Component;

impl Host for Component {
    type Breaker = Breaker;

    fn breaker(&self, config: &Config, clock: Arc<FakeClock>) -> Breaker {
        common::runtime()
            .with_clock(clock as Arc<dyn Clock + Send + Sync>)
            .breaker(config)
            .expect("a valid config")
    }
}

tripgate_vectors::conformance_tests!(Component);
