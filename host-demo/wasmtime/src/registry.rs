//! Named breakers, one per upstream.

use std::collections::BTreeMap;
use std::sync::RwLock;

use anyhow::Result;

use tripgate_core::exposition::Reading;

use crate::{Breaker, Config, Metrics, Runtime};

/// What [`Registry::readings`] found.
#[derive(Debug, Default)]
pub struct Readings {
    /// The breakers read, by name.
    pub read: Vec<(String, Reading)>,
    /// The breakers whose guest failed to answer, by name, with the error.
    pub failed: Vec<(String, anyhow::Error)>,
}

/// Breakers by name (one per upstream: `"payments"`, `"identity"`). Each breaker lives in
/// an instance of its own, so a hot upstream's breaker never waits on another's lock.
/// `Send + Sync`; share it in an `Arc`. With the feature `tracing`, its breakers emit
/// `tracing` events for their transitions, named (see [`trace`](crate::trace)).
#[derive(Debug)]
pub struct Registry {
    runtime: Runtime,
    default: Config,
    breakers: RwLock<BTreeMap<String, Breaker>>,
}

impl Registry {
    /// An empty registry whose breakers are made from `runtime` with `default` unless
    /// told otherwise.
    pub fn new(runtime: Runtime, default: Config) -> Self {
        Self {
            runtime,
            default,
            breakers: RwLock::new(BTreeMap::new()),
        }
    }

    /// The breaker named `name`, created with the default config on first use.
    pub fn get(&self, name: &str) -> Result<Breaker> {
        let default = self.default;
        self.get_or_create(name, &default)
    }

    /// The breaker named `name`, created with `config` on first use (an existing breaker
    /// keeps its config).
    pub fn get_or_create(&self, name: &str, config: &Config) -> Result<Breaker> {
        if let Some(breaker) = self.read().get(name) {
            return Ok(breaker.clone());
        }
        let mut breakers = self
            .breakers
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(breaker) = breakers.get(name) {
            return Ok(breaker.clone());
        }
        let breaker = self
            .runtime
            .breaker(config)
            .map_err(|e| e.context(format!("creating breaker {name:?}")))?;
        // A named breaker logs its transitions (`on_transition` replaces this listener).
        #[cfg(feature = "tracing")]
        breaker.on_transition(crate::trace::listener(name));
        breakers.insert(name.to_string(), breaker.clone());
        Ok(breaker)
    }

    /// Removes a breaker; clones already handed out keep working.
    pub fn remove(&self, name: &str) -> Option<Breaker> {
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
    pub fn metrics(&self) -> Result<BTreeMap<String, Metrics>> {
        let breakers: Vec<(String, Breaker)> = self
            .read()
            .iter()
            .map(|(name, breaker)| (name.clone(), breaker.clone()))
            .collect();
        breakers
            .into_iter()
            .map(|(name, breaker)| Ok((name, breaker.metrics()?)))
            .collect()
    }

    /// Every breaker's [`reading`](Breaker::reading), by name, one breaker at a time
    /// (the registry's lock is not held while they are read). A breaker whose guest
    /// fails to answer is in [`Readings::failed`] instead, with the error.
    pub fn readings(&self) -> Readings {
        let breakers: Vec<(String, Breaker)> = self
            .read()
            .iter()
            .map(|(name, breaker)| (name.clone(), breaker.clone()))
            .collect();
        let (mut read, mut failed) = (Vec::new(), Vec::new());
        for (name, breaker) in breakers {
            match breaker.reading() {
                Ok(reading) => read.push((name, reading)),
                Err(error) => failed.push((name, error)),
            }
        }
        Readings { read, failed }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Breaker>> {
        self.breakers
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
