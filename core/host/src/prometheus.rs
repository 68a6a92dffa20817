//! Prometheus metrics (feature `prometheus`): the families of
//! [`exposition`](tripgate_core::exposition) for the `prometheus-client` crate, a
//! [`Collector`] over any source of named readings, and collectors over one breaker or a
//! whole [`Registry`] of any host.
//!
//! A scrape takes each breaker's snapshot once (the host's `metrics()`, one short hold of
//! its lock) before writing anything, and nothing here runs on a call's path.

use std::fmt;
use std::sync::Arc;

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType as ClientType;
use prometheus_client::registry::Unit;

use tripgate_core::exposition::{Family, MetricType, Reading, Value, BREAKER_LABEL, MAX_LABELS};

use crate::{HostBreaker, MakeBreaker, Registry};

/// Writes every family, with the series of every breaker in `breakers` (name, reading),
/// into `encoder`: the Prometheus text format or OpenMetrics, whichever encoder the
/// registry was asked for. Nothing is written for no breakers.
pub fn encode<N: AsRef<str>>(
    encoder: &mut DescriptorEncoder<'_>,
    breakers: &[(N, Reading)],
) -> fmt::Result {
    if breakers.is_empty() {
        return Ok(());
    }
    for &family in Family::ALL {
        let unit = family.unit().map(|unit| match unit {
            "seconds" => Unit::Seconds,
            other => Unit::Other(other.to_string()),
        });
        let kind = match family.kind() {
            MetricType::Counter => ClientType::Counter,
            MetricType::Gauge => ClientType::Gauge,
        };
        let mut metric =
            encoder.encode_descriptor(family.stem(), family.help(), unit.as_ref(), kind)?;
        for (name, reading) in breakers {
            for series in family.series() {
                let mut labels = [(BREAKER_LABEL, name.as_ref()); 1 + MAX_LABELS];
                let mut len: usize = 1;
                for (slot, pair) in labels.iter_mut().skip(1).zip(series.labels()) {
                    *slot = pair;
                    len = len.saturating_add(1);
                }
                let labels = labels.get(..len).unwrap_or_default();
                let mut sample = metric.encode_family(&labels)?;
                match (family.kind(), series.value(reading)) {
                    (MetricType::Counter, value) => {
                        let count = match value {
                            Value::Count(n) => n,
                            // No counter is a duration; were one added, whole seconds.
                            Value::Seconds(ns) => ns / 1_000_000_000,
                        };
                        sample.encode_counter::<NoLabelSet, _, u64>(&count, None)?;
                    }
                    (MetricType::Gauge, Value::Count(n)) => sample.encode_gauge(&n)?,
                    (MetricType::Gauge, value) => sample.encode_gauge(&value.as_f64())?,
                }
            }
        }
    }
    Ok(())
}

/// What a [`Collector`] asks for on each scrape: every breaker's name and reading.
type Snapshots = dyn Fn() -> Vec<(String, Reading)> + Send + Sync;

/// A `prometheus-client` collector: register it with
/// `registry.register_collector(Box::new(collector))`. [`breaker`] and [`registry`] build
/// one over a host's breakers.
pub struct Collector {
    snapshots: Box<Snapshots>,
}

impl Collector {
    /// A collector that calls `snapshots` once per scrape.
    pub fn new(snapshots: impl Fn() -> Vec<(String, Reading)> + Send + Sync + 'static) -> Self {
        Self {
            snapshots: Box::new(snapshots),
        }
    }
}

impl fmt::Debug for Collector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Collector").finish_non_exhaustive()
    }
}

impl prometheus_client::collector::Collector for Collector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        encode(&mut encoder, &(self.snapshots)())
    }
}

/// A collector for one breaker (an `Arc` of one, or a breaker that is a handle already),
/// labelled `breaker="name"`. A breaker that fails to answer is left out of that scrape.
pub fn breaker<B: HostBreaker + Send + Sync + 'static>(
    name: impl Into<String>,
    breaker: B,
) -> Collector {
    let name = name.into();
    Collector::new(move || match breaker.reading() {
        Ok(reading) => vec![(name.clone(), reading)],
        Err(_) => Vec::new(),
    })
}

/// A collector for every breaker in `registry` at each scrape (breakers added later are
/// scraped too), each labelled with its name.
pub fn registry<B>(registry: Arc<Registry<B>>) -> Collector
where
    B: MakeBreaker + Send + Sync + 'static,
    B::Maker: Send + Sync,
{
    Collector::new(move || registry.readings().read)
}

/// The `prometheus-client` this build encodes for (hosts re-export it, so a service
/// registers collectors with the same version).
pub use prometheus_client as client;
