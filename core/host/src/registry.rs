//! Named breakers, one per upstream, for any host.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock, RwLockReadGuard};

use tripgate_core::exposition::Reading;
use tripgate_core::Config;

use crate::MakeBreaker;

/// Breakers by name (one per upstream: `"payments"`, `"identity"`), made by one
/// [`MakeBreaker::Maker`]. Each breaker has its own lock, so a hot upstream's breaker
/// never waits on another's. `Send + Sync`; share it in an `Arc`. Look a breaker up once
/// and keep the `Arc`: the lookup takes a read lock, the breaker's calls do not. With the
/// feature `tracing`, its breakers emit `tracing` events for their transitions, named
/// (see the `trace` module).
pub struct Registry<B: MakeBreaker> {
    maker: B::Maker,
    default: Config,
    breakers: RwLock<BTreeMap<String, Arc<B>>>,
}

/// What [`Registry::readings`] found.
#[derive(Debug)]
pub struct Readings<E> {
    /// The breakers read, by name.
    pub read: Vec<(String, Reading)>,
    /// The breakers that failed to answer, by name, with the error.
    pub failed: Vec<(String, E)>,
}

impl<B: MakeBreaker> fmt::Debug for Registry<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("names", &self.names())
            .finish_non_exhaustive()
    }
}

impl<B: MakeBreaker> Registry<B> {
    /// An empty registry whose breakers `maker` makes (the native breaker's: a clock; the
    /// component's: a `Runtime`), with `default` unless told otherwise.
    pub fn new(maker: B::Maker, default: Config) -> Self {
        Self {
            maker,
            default,
            breakers: RwLock::new(BTreeMap::new()),
        }
    }

    /// What makes this registry's breakers.
    pub fn maker(&self) -> &B::Maker {
        &self.maker
    }

    /// The breaker named `name`, created with the default config on first use.
    pub fn get(&self, name: &str) -> Result<Arc<B>, B::MakeError> {
        let default = self.default;
        self.get_or_create(name, &default)
    }

    /// The breaker named `name`, created with `config` on first use (an existing breaker
    /// keeps its config). A bad config is an error and registers nothing.
    pub fn get_or_create(&self, name: &str, config: &Config) -> Result<Arc<B>, B::MakeError> {
        self.get_or_make(name, config).map(|(breaker, _)| breaker)
    }

    /// [`Self::get_or_create`], and whether the breaker was made now.
    fn get_or_make(&self, name: &str, config: &Config) -> Result<(Arc<B>, bool), B::MakeError> {
        if let Some(breaker) = self.read().get(name) {
            return Ok((Arc::clone(breaker), false));
        }
        let mut breakers = self
            .breakers
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Another thread may have created it between the two locks.
        if let Some(breaker) = breakers.get(name) {
            return Ok((Arc::clone(breaker), false));
        }
        let breaker = Arc::new(B::make(&self.maker, config)?);
        // A named breaker logs its transitions (`on_transition` replaces this listener).
        #[cfg(feature = "tracing")]
        breaker.listeners().set(crate::trace::listener(name));
        breakers.insert(name.to_string(), Arc::clone(&breaker));
        Ok((breaker, true))
    }

    /// Puts `config` in force on the breaker named `name`, keeping its state (the core's
    /// `Breaker::reconfigure`): `Some` with what it did, or `None` when there was no such
    /// breaker and one is now made with `config`. A bad config is an error and changes
    /// nothing. A configuration reload calls it for each name it lists.
    pub fn reconfigure(
        &self,
        name: &str,
        config: &Config,
    ) -> Result<Option<B::Reconfigured>, B::MakeError> {
        // Made now with `config`, or made already (perhaps by another thread between the
        // lookup and here): then reconfigured.
        match self.get_or_make(name, config)? {
            (_, true) => Ok(None),
            (breaker, false) => breaker.reconfigure(config).map(Some),
        }
    }

    /// Removes a breaker; `Arc`s already handed out keep working.
    pub fn remove(&self, name: &str) -> Option<Arc<B>> {
        self.breakers
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(name)
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// Every breaker, by name, sorted.
    pub fn breakers(&self) -> Vec<(String, Arc<B>)> {
        self.read()
            .iter()
            .map(|(name, breaker)| (name.clone(), Arc::clone(breaker)))
            .collect()
    }

    /// Every breaker's [`reading`](crate::HostBreaker::reading), by name: one hold of each
    /// breaker, one at a time, and never while the registry's own lock is held. A breaker
    /// that fails to answer is in [`Readings::failed`], with the error.
    pub fn readings(&self) -> Readings<B::Error> {
        let (mut read, mut failed) = (Vec::new(), Vec::new());
        for (name, breaker) in self.breakers() {
            match breaker.reading() {
                Ok(reading) => read.push((name, reading)),
                Err(error) => failed.push((name, error)),
            }
        }
        Readings { read, failed }
    }

    fn read(&self) -> RwLockReadGuard<'_, BTreeMap<String, Arc<B>>> {
        // A thread that panicked while holding the lock left a map that is never
        // half-updated (every change is one insert or remove).
        self.breakers
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
