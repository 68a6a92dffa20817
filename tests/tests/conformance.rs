//! The conformance suite every Rust host's breaker runs (`tripgate_vectors::conformance`),
//! on the native breaker (here, beside the other suites the native breaker runs, so that
//! its own package needs none of this crate).

use std::sync::Arc;

use tripgate::{Breaker, Config, FakeClock};
use tripgate_vectors::conformance::Host;

struct Native;

impl Host for Native {
    type Breaker = Breaker<Arc<FakeClock>>;

    fn breaker(&self, config: &Config, clock: Arc<FakeClock>) -> Self::Breaker {
        Breaker::with_clock(*config, clock).expect("a valid config")
    }
}

tripgate_vectors::conformance_tests!(Native);
