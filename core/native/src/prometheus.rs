//! Prometheus metrics (feature `prometheus`): a `prometheus-client` collector over one
//! breaker or a whole [`Registry`], with the families every tripgate host exposes
//! (`tripgate_core::exposition`).
//!
//! ```
//! use std::sync::Arc;
//! use tripgate::prometheus::{self, client};
//! use tripgate::{Config, Registry};
//!
//! let breakers = Arc::new(Registry::new(Config::default()));
//! breakers.get("payments").unwrap();
//! let mut metrics = client::registry::Registry::default();
//! metrics.register_collector(Box::new(prometheus::registry(Arc::clone(&breakers))));
//!
//! let mut text = String::new();
//! client::encoding::prometheus_text::encode(&mut text, &metrics).unwrap();
//! assert!(text.contains("tripgate_state{breaker=\"payments\",state=\"closed\"} 1"));
//! ```
//!
//! `client` is the `prometheus-client` crate this build encodes for (0.26). A scrape
//! takes each breaker's lock once, for one [`Breaker::reading`] (a `metrics()` call and
//! the fleet status), before it encodes anything; the call path does no metric work.

use std::sync::Arc;

pub use tripgate_core::prometheus::{client, encode, Collector};
use tripgate_core::Clock;

use crate::{Breaker, Registry};

/// A collector for one breaker, labelled `breaker="name"`.
pub fn breaker<C>(name: impl Into<String>, breaker: Arc<Breaker<C>>) -> Collector
where
    C: Clock + Send + Sync + 'static,
{
    let name = name.into();
    Collector::new(move || vec![(name.clone(), breaker.reading())])
}

/// A collector for every breaker in `registry` at each scrape (breakers added later are
/// scraped too), each labelled with its name.
pub fn registry<C>(registry: Arc<Registry<C>>) -> Collector
where
    C: Clock + Clone + Send + Sync + 'static,
{
    Collector::new(move || registry.readings())
}
