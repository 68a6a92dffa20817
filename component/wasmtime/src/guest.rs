//! One instance of the component: its store behind a lock, the breakers seated in it, and
//! what happens when the guest traps.
//!
//! The component does not trap on any input, and the library keeps load below every limit
//! of the store (breakers per instance here, tickets in the component). Should the guest
//! trap anyway, the instance can no longer be entered, so the library replaces it: a new
//! instance in the same store slot, each breaker made again with its config and its last
//! snapshot imported, at the elapsed time since. A trap costs the call that trapped (its
//! caller gets the error) and what the breaker learned since its last snapshot: one is
//! taken after every call that causes a transition and at least every
//! [`SNAPSHOT_PERIOD`] of calls. Permits out in the old instance are stale in the new one
//! (a permit remembers the instance's era; the library records one of an older era as a
//! ticket that names nothing).

use std::sync::Arc;

use anyhow::{anyhow, Result};
use tripgate_core::{Nanos, NO_KEY, SECOND};
use tripgate_host::lock::Guard;
use tripgate_host::Lock;
use wasmtime::component::ResourceAny;
use wasmtime::Store;

use crate::engine::{HostState, RuntimeShared, MAX_BREAKERS_PER_INSTANCE};
use crate::{bindings, wit, ConfigError};

/// How often, at most, a busy breaker's state is copied out for a replacement instance.
pub const SNAPSHOT_PERIOD: Nanos = SECOND;

/// A breaker's place in the instance: its handle and key there, and what it takes to make
/// it again elsewhere.
pub(crate) struct Seat {
    pub(crate) resource: ResourceAny,
    /// The resource's key, which the hot path's functions take in its place.
    pub(crate) key: u32,
    config: wit::Config,
    /// The last export and the instant it was taken.
    snapshot: Option<(Vec<u8>, Nanos)>,
    /// When a call should take the next snapshot.
    due: Nanos,
}

impl Seat {
    /// The config the breaker is made with again in a replacement instance: the one it
    /// was made or last reconfigured with.
    pub(crate) fn config(&self) -> &wit::Config {
        &self.config
    }
}

/// What the lock guards: the store, the instance's exports and the seats.
pub(crate) struct Guest {
    pub(crate) store: Store<HostState>,
    bindings: bindings::Tripgate,
    seats: Vec<Option<Seat>>,
    free: Vec<usize>,
    live: usize,
    replaced: u64,
}

impl Guest {
    /// The breaker resource's functions and the store, borrowed apart.
    pub(crate) fn breakers(&mut self) -> (wit::GuestBreaker<'_>, &mut Store<HostState>) {
        let api = self.bindings.tripgate_breaker_circuit_breaker().breaker();
        (api, &mut self.store)
    }

    /// The interface's own functions (the keyed hot path) and the store, borrowed apart.
    pub(crate) fn hot(&mut self) -> (&wit::Guest, &mut Store<HostState>) {
        (
            self.bindings.tripgate_breaker_circuit_breaker(),
            &mut self.store,
        )
    }

    /// Breakers alive in the instance.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// How many times the instance was replaced: a ticket issued under another count
    /// belongs to a dead instance.
    #[inline]
    pub(crate) fn era(&self) -> u64 {
        self.replaced
    }

    /// The seat of a breaker of this instance.
    #[inline]
    pub(crate) fn seat(&self, seat: usize) -> Result<&Seat> {
        match self.seats.get(seat) {
            Some(Some(seat)) => Ok(seat),
            _ => Err(lost()),
        }
    }

    /// The config a breaker is made with again in a replacement instance, after a
    /// `reconfigure`.
    pub(crate) fn set_config(&mut self, seat: usize, config: wit::Config) -> Result<()> {
        match self.seats.get_mut(seat) {
            Some(Some(seat)) => {
                seat.config = config;
                Ok(())
            }
            _ => Err(lost()),
        }
    }

    /// Copies the breaker's state out when a transition happened or the period is up, for
    /// a replacement instance.
    #[inline]
    pub(crate) fn keep(
        &mut self,
        seat: usize,
        now: Nanos,
        transitioned: bool,
    ) -> wasmtime::Result<()> {
        let due = self.seats.get(seat).and_then(Option::as_ref).map(|s| s.due);
        if transitioned || due.is_some_and(|due| now >= due) {
            self.snapshot(seat, now)?;
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn snapshot(&mut self, seat: usize, now: Nanos) -> wasmtime::Result<()> {
        let Some(Some(Seat { resource, .. })) = self.seats.get(seat) else {
            return Ok(());
        };
        let resource = *resource;
        let (api, store) = self.breakers();
        let exported = api.call_export_state(store, resource, now)?;
        if let Some(Some(seat)) = self.seats.get_mut(seat) {
            // An export error (none is expected) keeps the older snapshot.
            if let Ok(bytes) = exported {
                seat.snapshot = Some((bytes, now));
            }
            seat.due = now.saturating_add(SNAPSHOT_PERIOD);
        }
        Ok(())
    }

    /// Makes a breaker in the component; its seat, or why not (a bad config, a full
    /// instance). The outer error is the guest's trap.
    pub(crate) fn create(
        &mut self,
        config: &wit::Config,
        now: Nanos,
    ) -> wasmtime::Result<Result<usize>> {
        if self.live >= MAX_BREAKERS_PER_INSTANCE {
            return Ok(Err(anyhow!(
                "the instance holds {MAX_BREAKERS_PER_INSTANCE} breakers, its limit: make \
                 another instance (Runtime::breaker gives each breaker its own)"
            )));
        }
        let (resource, key) = match self.make(config, now)? {
            Ok(made) => made,
            Err(refused) => return Ok(Err(refused)),
        };
        let seat = Seat {
            resource,
            key,
            config: config.clone(),
            snapshot: None,
            due: now.saturating_add(SNAPSHOT_PERIOD),
        };
        let index = match self.free.pop() {
            Some(index) => {
                if let Some(place) = self.seats.get_mut(index) {
                    *place = Some(seat);
                }
                index
            }
            None => {
                self.seats.push(Some(seat));
                self.seats.len() - 1
            }
        };
        self.live += 1;
        Ok(Ok(index))
    }

    /// A breaker resource and its key, made in the component, or why not; the outer
    /// error is the guest's trap.
    fn make(
        &mut self,
        config: &wit::Config,
        now: Nanos,
    ) -> wasmtime::Result<Result<(ResourceAny, u32)>> {
        let (api, store) = self.breakers();
        let resource = match api.call_create(&mut *store, config, now)? {
            Ok(resource) => resource,
            Err(refused) => return Ok(Err(ConfigError::from(refused).into())),
        };
        let key = api.call_key(&mut *store, resource)?;
        if key == NO_KEY {
            // The hot path this library takes would answer "no such breaker" for ever.
            let _ = resource.resource_drop(&mut *store);
            return Ok(Err(anyhow!(
                "the instance has no key left for another breaker: use another instance"
            )));
        }
        Ok(Ok((resource, key)))
    }

    /// Gives a breaker's seat back; its handle is dropped in the component.
    fn unseat(&mut self, seat: usize) {
        if let Some(place) = self.seats.get_mut(seat) {
            if let Some(Seat { resource, .. }) = place.take() {
                let _ = resource.resource_drop(&mut self.store);
                self.live -= 1;
                self.free.push(seat);
            }
        }
    }

    /// A new instance in place of this one, each breaker made again and its snapshot
    /// imported (see the module docs). A breaker that cannot be made again loses its seat,
    /// and its calls fail from then on.
    #[cold]
    #[inline(never)]
    fn replace(&mut self, runtime: &RuntimeShared, now: Nanos) -> Result<()> {
        let (store, bindings) = runtime.instance()?;
        self.store = store;
        self.bindings = bindings;
        self.replaced += 1;
        for index in 0..self.seats.len() {
            let Some(Some(seat)) = self.seats.get(index) else {
                continue;
            };
            let (config, snapshot) = (seat.config.clone(), seat.snapshot.clone());
            let remade = match self.make(&config, now) {
                Ok(Ok((resource, key))) => match &snapshot {
                    Some((bytes, at)) => {
                        let (api, store) = self.breakers();
                        let elapsed = now.saturating_sub(*at);
                        // A snapshot that does not import leaves the breaker as made: closed.
                        api.call_import_state(store, resource, bytes, elapsed, now)
                            .map(|_| (resource, key))
                            .map_err(anyhow::Error::from)
                    }
                    None => Ok((resource, key)),
                },
                Ok(Err(refused)) => Err(refused),
                Err(trap) => Err(trap.into()),
            };
            match (remade, self.seats.get_mut(index)) {
                (Ok((resource, key)), Some(Some(seat))) => {
                    seat.resource = resource;
                    seat.key = key;
                    seat.due = now.saturating_add(SNAPSHOT_PERIOD);
                }
                (_, Some(place)) => {
                    *place = None;
                    self.live -= 1;
                    self.free.push(index);
                }
                (_, None) => {}
            }
        }
        Ok(())
    }
}

/// The error of a breaker whose seat is gone: its instance was replaced and the breaker
/// could not be made again there.
fn lost() -> anyhow::Error {
    anyhow!("the breaker was lost when its instance was replaced after a trap")
}

/// An instance's guest behind its lock, with the runtime that can make it again.
pub(crate) struct InstanceShared {
    /// `tripgate-host`'s lock, not a `Mutex`: its unlock is a plain store, where a
    /// `Mutex`'s is a second full barrier around every component call.
    guest: Lock<Guest>,
    runtime: Arc<RuntimeShared>,
}

impl InstanceShared {
    /// A fresh instance of the runtime's component, with no breaker yet.
    pub(crate) fn new(runtime: Arc<RuntimeShared>) -> Result<Self> {
        let (store, bindings) = runtime.instance()?;
        Ok(Self {
            guest: Lock::new(Guest {
                store,
                bindings,
                seats: Vec::new(),
                free: Vec::new(),
                live: 0,
                replaced: 0,
            }),
            runtime,
        })
    }

    /// The guest, also after a thread panicked while holding it: every guest call is
    /// atomic from the host's view, so the state is never half-updated.
    #[inline]
    pub(crate) fn lock(&self) -> Guard<'_, Guest> {
        self.guest.lock()
    }

    /// The clock the instance's breakers read.
    #[inline]
    pub(crate) fn now(&self) -> Nanos {
        self.runtime.clock.now()
    }

    /// Waits on the runtime's clock (a fake one moves forward instead).
    pub(crate) fn sleep(&self, duration: std::time::Duration) {
        self.runtime.clock.sleep(duration);
    }

    /// The error of a guest call that failed: the guest trapped, so the instance is
    /// replaced (in the same hold of the lock) before the error goes back to the caller.
    #[cold]
    #[inline(never)]
    pub(crate) fn trapped(&self, guest: &mut Guest, error: wasmtime::Error) -> anyhow::Error {
        let now = self.now();
        let error = anyhow::Error::from(error);
        match guest.replace(&self.runtime, now) {
            Ok(()) => error.context("the component trapped; its instance was replaced"),
            Err(again) => error.context(format!(
                "the component trapped, and replacing its instance failed: {again:#}"
            )),
        }
    }

    /// Gives a dropped breaker's seat back.
    pub(crate) fn unseat(&self, seat: usize) {
        self.lock().unseat(seat);
    }
}
