//! Prometheus metrics (feature `prometheus`): a `prometheus-client` collector over one
//! breaker or a whole [`Registry`], with the families every tripgate host exposes
//! (`tripgate_core::exposition`: the same names, labels and values as the native breaker
//! and the npm package).
//!
//! ```no_run
//! use std::sync::Arc;
//! use tripgate_wasmtime::prometheus::{self, client};
//! use tripgate_wasmtime::{Config, Registry, Runtime};
//!
//! let breakers = Arc::new(Registry::new(Runtime::new()?, Config::default()));
//! breakers.get("payments")?;
//! let mut metrics = client::registry::Registry::default();
//! metrics.register_collector(Box::new(prometheus::registry(Arc::clone(&breakers))));
//! let mut text = String::new();
//! client::encoding::prometheus_text::encode(&mut text, &metrics)?;
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! A scrape takes each breaker's guest lock once, for one [`Breaker::reading`] (the
//! guest's `metrics` and `fleet-status`), before it encodes anything; the call path does
//! no metric work. A breaker whose guest fails to answer (a trap) is left out of that
//! scrape rather than failing it: its series go missing, which `absent()` alerts on, and
//! the other breakers are still exposed.

use std::sync::Arc;

pub use tripgate_core::prometheus::{client, encode, Collector};

use crate::{Breaker, Registry};

/// A collector for one breaker, labelled `breaker="name"`.
pub fn breaker(name: impl Into<String>, breaker: Breaker) -> Collector {
    let name = name.into();
    Collector::new(move || match breaker.reading() {
        Ok(reading) => vec![(name.clone(), reading)],
        Err(_) => Vec::new(),
    })
}

/// A collector for every breaker in `registry` at each scrape (breakers added later are
/// scraped too), each labelled with its name.
pub fn registry(registry: Arc<Registry>) -> Collector {
    Collector::new(move || registry.readings().read)
}
