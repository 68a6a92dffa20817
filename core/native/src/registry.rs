//! Named breakers, one per upstream.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard};

use tripgate_core::{Clock, Config, ConfigError, Metrics};

use crate::{Breaker, CoarseClock};

/// Breakers by name (one per upstream: `"payments"`, `"identity"`), all reading one
/// clock. Each breaker has its own lock, so a hot upstream's breaker never waits on
/// another's. `Send + Sync`; share it in an `Arc`. Look a breaker up once and keep the
/// `Arc`: the lookup takes a read lock, the breaker's calls do not. With the feature
/// `tracing`, its breakers emit `tracing` events for their transitions, named (see the
/// `trace` module).
pub struct Registry<C: Clock + Clone = CoarseClock> {
    clock: C,
    default: Config,
    breakers: RwLock<BTreeMap<String, Arc<Breaker<C>>>>,
}

impl<C: Clock + Clone> std::fmt::Debug for Registry<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("names", &self.names())
            .finish_non_exhaustive()
    }
}

impl Registry<CoarseClock> {
    /// An empty registry whose breakers take `default` unless told otherwise.
    pub fn new(default: Config) -> Self {
        Self::with_clock(default, CoarseClock::new())
    }
}

impl<C: Clock + Clone> Registry<C> {
    /// An empty registry whose breakers read `clock`.
    pub fn with_clock(default: Config, clock: C) -> Self {
        Self {
            clock,
            default,
            breakers: RwLock::new(BTreeMap::new()),
        }
    }

    /// The breaker named `name`, created with the default config on first use.
    pub fn get(&self, name: &str) -> Result<Arc<Breaker<C>>, ConfigError> {
        let default = self.default;
        self.get_or_create(name, &default)
    }

    /// The breaker named `name`, created with `config` on first use (an existing breaker
    /// keeps its config). A bad config is an error and registers nothing.
    pub fn get_or_create(
        &self,
        name: &str,
        config: &Config,
    ) -> Result<Arc<Breaker<C>>, ConfigError> {
        if let Some(breaker) = self.read().get(name) {
            return Ok(Arc::clone(breaker));
        }
        let mut breakers = self
            .breakers
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Another thread may have created it between the two locks.
        if let Some(breaker) = breakers.get(name) {
            return Ok(Arc::clone(breaker));
        }
        let breaker = Arc::new(Breaker::with_clock(*config, self.clock.clone())?);
        // A named breaker logs its transitions (`on_transition` replaces this listener).
        #[cfg(feature = "tracing")]
        breaker.on_transition(crate::trace::listener(name));
        breakers.insert(name.to_string(), Arc::clone(&breaker));
        Ok(breaker)
    }

    /// Removes a breaker; `Arc`s already handed out keep working.
    pub fn remove(&self, name: &str) -> Option<Arc<Breaker<C>>> {
        self.breakers
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(name)
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// Every breaker's metrics, by name (for an exporter's scrape).
    pub fn metrics(&self) -> BTreeMap<String, Metrics> {
        self.read()
            .iter()
            .map(|(name, breaker)| (name.clone(), breaker.metrics()))
            .collect()
    }

    /// Every breaker's [`reading`](Breaker::reading), by name: one hold of each
    /// breaker's lock, one at a time (a scrape never holds two).
    pub fn readings(&self) -> Vec<(String, tripgate_core::exposition::Reading)> {
        // The breakers are cloned out first, so the registry's read lock is not held
        // while they are read.
        let breakers: Vec<(String, Arc<Breaker<C>>)> = self
            .read()
            .iter()
            .map(|(name, breaker)| (name.clone(), Arc::clone(breaker)))
            .collect();
        breakers
            .into_iter()
            .map(|(name, breaker)| (name, breaker.reading()))
            .collect()
    }

    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, Arc<Breaker<C>>>> {
        self.breakers
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
