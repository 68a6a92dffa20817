//! The families of [`exposition`](crate::exposition) for the `prometheus-client` crate
//! (feature `prometheus`): the encoding both Rust hosts share, and a [`Collector`] over
//! any source of named snapshots.
//!
//! A scrape takes each breaker's snapshot once (the host's `metrics()`, one short hold of
//! its lock) before writing anything, and nothing here runs on a call's path.

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType as ClientType;
use prometheus_client::registry::Unit;

use crate::exposition::{Family, MetricType, Reading, Value, BREAKER_LABEL, MAX_LABELS};

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
/// `registry.register_collector(Box::new(collector))`. The hosts build one over a breaker
/// or a registry of theirs (`tripgate::prometheus`, `tripgate_wasmtime::prometheus`).
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

/// The `prometheus-client` this build encodes for (hosts re-export it, so a service
/// registers collectors with the same version).
pub use prometheus_client as client;
