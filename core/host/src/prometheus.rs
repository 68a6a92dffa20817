//! Prometheus metrics (feature `prometheus`): the families of
//! [`exposition`](tripgate_core::exposition) for the `prometheus-client` crate, a
//! [`Collector`] over any source of named readings, and collectors over one breaker or a
//! whole [`Registry`] of any host.
//!
//! A scrape takes each breaker's snapshot once (the host's `metrics()`, one short hold of
//! its lock) before writing anything, and nothing here runs on a call's path.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

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

/// What a collector asks for on each scrape: breakers' names and readings.
type Source = Box<dyn Fn() -> Vec<(String, Reading)> + Send + Sync>;

/// Collectors that one scrape writes together: however many of them a prometheus-client
/// registry holds, the scrape writes each family once, with the series of every breaker
/// of every collector of the group (the first reading of a name wins). Every family then
/// appears once in the exposition, as the text format and OpenMetrics require: two
/// collectors that each wrote their own families would give two `HELP` lines for one
/// name, which promtool and Prometheus refuse.
///
/// [`breaker`] and [`registry`] make collectors of the process's default group, for the
/// usual single registry of a process. A second registry wants a group of its own:
/// `Exposition::new()`, then [`Exposition::breaker`] and [`Exposition::registry`].
#[derive(Clone, Default)]
pub struct Exposition {
    group: Arc<Group>,
}

#[derive(Default)]
struct Group {
    sources: Mutex<Vec<(u64, Arc<Source>)>>,
}

/// Numbers the groups and the collectors, for the scrape's bookkeeping.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// Per group, the collectors this thread's current scrape has met. A scrape runs one
    /// registry's collectors in turn on one thread: a collector met twice means a new
    /// scrape began.
    static MET: RefCell<HashMap<usize, HashSet<u64>>> = RefCell::new(HashMap::new());
}

impl fmt::Debug for Exposition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exposition")
            .field("collectors", &self.group.sources().len())
            .finish()
    }
}

impl Exposition {
    /// A group of its own, for a prometheus-client registry of its own.
    pub fn new() -> Self {
        Self::default()
    }

    /// A collector of this group that calls `snapshots` once per scrape.
    pub fn collector(
        &self,
        snapshots: impl Fn() -> Vec<(String, Reading)> + Send + Sync + 'static,
    ) -> Collector {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let source: Source = Box::new(snapshots);
        self.group.sources().push((id, Arc::new(source)));
        Collector {
            group: Arc::clone(&self.group),
            id,
        }
    }

    /// A collector of this group for one breaker (see [`breaker`]).
    pub fn breaker<B: HostBreaker + Send + Sync + 'static>(
        &self,
        name: impl Into<String>,
        breaker: B,
    ) -> Collector {
        let name = name.into();
        self.collector(move || match breaker.reading() {
            Ok(reading) => vec![(name.clone(), reading)],
            Err(_) => Vec::new(),
        })
    }

    /// A collector of this group for every breaker of `registry` (see [`registry`]).
    pub fn registry<B>(&self, registry: Arc<Registry<B>>) -> Collector
    where
        B: MakeBreaker + Send + Sync + 'static,
        B::Maker: Send + Sync,
    {
        self.collector(move || registry.readings().read)
    }
}

impl Group {
    fn sources(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Arc<Source>)>> {
        self.sources
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every collector's readings, one per name, read without holding the group's lock.
    fn readings(&self) -> Vec<(String, Reading)> {
        let sources: Vec<Arc<Source>> = self.sources().iter().map(|(_, s)| Arc::clone(s)).collect();
        let mut names = HashSet::new();
        let mut readings = Vec::new();
        for source in sources {
            for (name, reading) in source() {
                if names.insert(name.clone()) {
                    readings.push((name, reading));
                }
            }
        }
        readings
    }
}

/// A `prometheus-client` collector of an [`Exposition`] group: register it with
/// `registry.register_collector(Box::new(collector))`. Dropping it (as the registry does
/// when it is dropped) takes its breakers out of the group.
pub struct Collector {
    group: Arc<Group>,
    id: u64,
}

impl fmt::Debug for Collector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Collector").field("id", &self.id).finish()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.group.sources().retain(|(id, _)| *id != self.id);
    }
}

impl prometheus_client::collector::Collector for Collector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        let group = Arc::as_ptr(&self.group) as usize;
        let first = MET.with(|met| {
            let mut met = met.borrow_mut();
            let seen = met.entry(group).or_default();
            if !seen.insert(self.id) {
                // Met before: this is the next scrape.
                seen.clear();
                seen.insert(self.id);
            }
            seen.len() == 1
        });
        if first {
            encode(&mut encoder, &self.group.readings())
        } else {
            Ok(())
        }
    }
}

/// The process's default group, which [`breaker`] and [`registry`] make collectors of.
fn default_group() -> &'static Exposition {
    static DEFAULT: OnceLock<Exposition> = OnceLock::new();
    DEFAULT.get_or_init(Exposition::new)
}

/// A collector for one breaker (an `Arc` of one, or a breaker that is a handle already),
/// labelled `breaker="name"`, in the process's default [`Exposition`] group. A breaker that
/// fails to answer is left out of that scrape.
pub fn breaker<B: HostBreaker + Send + Sync + 'static>(
    name: impl Into<String>,
    breaker: B,
) -> Collector {
    default_group().breaker(name, breaker)
}

/// A collector for every breaker in `registry` at each scrape (breakers added later are
/// scraped too), each labelled with its name, in the process's default [`Exposition`]
/// group.
pub fn registry<B>(registry: Arc<Registry<B>>) -> Collector
where
    B: MakeBreaker + Send + Sync + 'static,
    B::Maker: Send + Sync,
{
    default_group().registry(registry)
}

/// The `prometheus-client` this build encodes for (hosts re-export it, so a service
/// registers collectors with the same version).
pub use prometheus_client as client;
