//! # tripgate-wasmtime: tripgate's component in wasmtime
//!
//! Loads the tripgate component (built from `component/` and embedded in this crate at
//! build time) in wasmtime and gives Rust services a breaker they can share between
//! threads:
//!
//! ```no_run
//! use tripgate_wasmtime::{Config, Outcome, Runtime};
//! use std::time::Duration;
//!
//! # fn main() -> anyhow::Result<()> {
//! // Compile the component once per process; breakers are cheap after that.
//! let runtime = Runtime::new()?;
//! let breaker = runtime.breaker(&Config { failure_threshold: 3, ..Config::default() })?;
//!
//! // Two steps: acquire a permit, make the call, record its outcome.
//! match breaker.acquire()?.decision {
//!     Ok(permit) => {
//!         let status = 503; // ... make the call ...
//!         permit.record(Outcome::Status(status))?;
//!     }
//!     Err(rejection) => println!("not now: retry in {} ns", rejection.retry_after),
//! }
//!
//! // Or one: run a closure with a timeout, classify its result, fall back when rejected
//! // or failed.
//! let body = breaker
//!     .call(Duration::from_secs(2), || std::fs::read_to_string("/etc/hostname"))
//!     .unwrap_or_else(|_| Ok(String::from("fallback")));
//! # Ok(())
//! # }
//! ```
//!
//! * [`Runtime`]: the engine and the compiled component, loaded once and shared (clone
//!   it freely).
//! * [`Instance`]: one instance of the component (a wasmtime `Store` behind a lock) that
//!   holds any number of breakers. [`Runtime::breaker`] gives each breaker its own
//!   instance, so breakers never contend for a lock.
//! * [`Breaker`]: `Send + Sync` and cheap to clone. [`Permit`] releases itself as
//!   `cancelled` when dropped without an outcome.
//! * [`Breaker::call`] / `Breaker::call_async` (feature `tokio`): the guarded call, with
//!   a per-call timeout, classification by the core's rules ([`Classify`]) and a
//!   [`CallError`] to fall back on.
//! * [`Registry`]: named breakers, one per upstream.
//!
//! Time comes from a [`Clock`]: [`CoarseClock`] by default (a millisecond-fresh reading of
//! the CPU's counter, one atomic load: the breaker needs bucket and millisecond precision,
//! and an `Instant::now()` per call would be a tenth of a guarded pair), [`QuantaClock`]
//! or [`MonotonicClock`] for exact call durations, a [`FakeClock`] in tests
//! ([`Runtime::with_clock`]). Every decision is made inside the component by
//! `tripgate-core`; this crate only moves values across the boundary.

#![deny(missing_docs)]

mod call;
mod config;
mod host;

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use tripgate_core::NO_KEY;
use tripgate_host::lock::Guard;
use tripgate_host::{ListenerSlot, Lock};
use wasmtime::component::{Component, Linker, ResourceAny};
use wasmtime::{Engine, ResourceLimiter, Store};

pub use call::CallError;
pub use config::ConfigError;
/// The core this host runs inside the component, for its outcome and classification types.
pub use tripgate_core;
pub use tripgate_core::{Config, GrpcSet, StatusSet, MILLISECOND, SECOND};
/// `prometheus-client` collectors over a breaker or a registry (feature `prometheus`).
#[cfg(feature = "prometheus")]
pub use tripgate_host::prometheus;
/// Transitions as `tracing` events (feature `tracing`).
#[cfg(feature = "tracing")]
pub use tripgate_host::trace;
pub use tripgate_host::{
    Classify, Clock, CoarseClock, FakeClock, MonotonicClock, QuantaClock, Status,
};
/// What [`Registry::readings`] found.
pub type Readings = tripgate_host::Readings<anyhow::Error>;

/// Named breakers, one per upstream, each in an instance of its own (so a hot upstream's
/// breaker never waits on another's lock): `Registry::new(runtime, config)`.
pub type Registry = tripgate_host::Registry<Breaker>;

/// The code `bindgen!` generates from `wit/breaker.wit` (its docs are the WIT's).
#[allow(missing_docs)]
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "tripgate",
        additional_derives: [PartialEq],
    });
}

/// The WIT interface's types, as `bindgen!` names them.
pub use bindings::exports::tripgate::breaker::circuit_breaker as wit;
/// What the breaker reports: the core's own types, as the native breaker and every other
/// host report them.
pub use tripgate_core::{
    Announcement, AnnouncementKind, Class, FleetApplied, FleetEvent, FleetEventKind, FleetStatus,
    Metrics, Reason, RejectReason, Rejection, State, Tally, Transition,
};
/// The outcomes `record` takes: the WIT's, unvalidated (an invalid status is the
/// component's to refuse); the core's `Outcome` converts into it.
pub use wit::{Outcome, SnapshotError};

/// The tripgate component this crate was built with (`wit/breaker.wit`'s `tripgate`
/// world, no imports), for hosts that want the bytes themselves.
pub const COMPONENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/tripgate_component.wasm"));

/// The wasmtime engine and the compiled component, shared by every instance. Cloning is
/// a reference-count increment.
#[derive(Clone)]
pub struct Runtime {
    shared: Arc<RuntimeShared>,
}

struct RuntimeShared {
    engine: Engine,
    pre: bindings::TripgatePre<HostState>,
    clock: Arc<dyn Clock + Send + Sync>,
    memory_limit: usize,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime").finish_non_exhaustive()
    }
}

impl Runtime {
    /// Compiles the embedded [`COMPONENT`].
    pub fn new() -> Result<Self> {
        Self::from_bytes(COMPONENT)
    }

    /// Loads and compiles a build of the component from `path` (one you built or
    /// received yourself; it must export the same world).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path)
            .with_context(|| format!("reading the tripgate component at {}", path.display()))?;
        Self::from_bytes(&bytes)
    }

    /// Compiles the component from its bytes. The world imports nothing, so the linker
    /// is empty: no WASI.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let engine = Engine::default();
        let component = Component::new(&engine, bytes)
            .map_err(anyhow::Error::from)
            .context("compiling the tripgate component")?;
        let linker = Linker::<HostState>::new(&engine);
        let pre = bindings::TripgatePre::new(linker.instantiate_pre(&component)?)?;
        Ok(Self {
            shared: Arc::new(RuntimeShared {
                engine,
                pre,
                clock: Arc::new(CoarseClock::new()),
                memory_limit: 256 << 20,
            }),
        })
    }

    /// The same compiled component with another clock for the instances made from the
    /// result (tests pass an `Arc<FakeClock>`).
    pub fn with_clock(&self, clock: Arc<dyn Clock + Send + Sync>) -> Self {
        Self {
            shared: Arc::new(RuntimeShared {
                engine: self.shared.engine.clone(),
                pre: self.shared.pre.clone(),
                clock,
                memory_limit: self.shared.memory_limit,
            }),
        }
    }

    /// The clock breakers made from this runtime read.
    pub fn clock(&self) -> &Arc<dyn Clock + Send + Sync> {
        &self.shared.clock
    }

    /// The engine the component was compiled with.
    pub fn engine(&self) -> &Engine {
        &self.shared.engine
    }

    /// The compiled component: a host that also drives the bare bindings
    /// ([`bindings::Tripgate`]) beside the library instantiates it again without compiling
    /// it again, and runs the same machine code.
    pub fn component(&self) -> &Component {
        self.shared.pre.instance_pre().component()
    }

    /// A fresh instance of the component, for any number of breakers that share its
    /// memory and its lock.
    pub fn instantiate(&self) -> Result<Instance> {
        let mut store = Store::new(
            &self.shared.engine,
            HostState {
                memory_bytes: 0,
                memory_limit: self.shared.memory_limit,
            },
        );
        store.limiter(|state| state);
        let bindings = self.shared.pre.instantiate(&mut store)?;
        Ok(Instance {
            shared: Arc::new(InstanceShared {
                guest: Lock::new(Guest { store, bindings }),
                clock: Arc::clone(&self.shared.clock),
            }),
        })
    }

    /// A breaker in an instance of its own.
    pub fn breaker(&self, config: &Config) -> Result<Breaker> {
        self.instantiate()?.breaker(config)
    }
}

/// The store's data: tracks the instance's linear memory so tests can count bytes, and
/// caps it so a runaway guest cannot take the host's memory.
struct HostState {
    memory_bytes: usize,
    memory_limit: usize,
}

impl ResourceLimiter for HostState {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = desired <= self.memory_limit;
        if allowed {
            self.memory_bytes = desired;
        }
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
    }
}

/// What the lock guards: the store and the instance's exports.
struct Guest {
    store: Store<HostState>,
    bindings: bindings::Tripgate,
}

impl Guest {
    /// The breaker resource's functions and the store, borrowed apart.
    fn breakers(&mut self) -> (wit::GuestBreaker<'_>, &mut Store<HostState>) {
        let api = self.bindings.tripgate_breaker_circuit_breaker().breaker();
        (api, &mut self.store)
    }

    /// The interface's own functions (the keyed hot path) and the store, borrowed apart.
    fn hot(&mut self) -> (&wit::Guest, &mut Store<HostState>) {
        (
            self.bindings.tripgate_breaker_circuit_breaker(),
            &mut self.store,
        )
    }
}

struct InstanceShared {
    /// The core crate's lock, not a `Mutex`: its unlock is a plain store, where a
    /// `Mutex`'s is a second full barrier around every component call.
    guest: Lock<Guest>,
    clock: Arc<dyn Clock + Send + Sync>,
}

impl InstanceShared {
    /// The guest, also after a thread panicked while holding it: every guest call is
    /// atomic from the host's view, so the state is never half-updated.
    #[inline]
    fn lock(&self) -> Guard<'_, Guest> {
        self.guest.lock()
    }
}

/// One instance of the component. Clone it to share; breakers made from it share its
/// memory and its lock.
#[derive(Clone)]
pub struct Instance {
    shared: Arc<InstanceShared>,
}

impl fmt::Debug for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Instance").finish_non_exhaustive()
    }
}

impl Instance {
    /// A new breaker in this instance, created now. A bad config is a [`ConfigError`]
    /// naming the field (`failure-threshold must be >= 1`).
    pub fn breaker(&self, config: &Config) -> Result<Breaker> {
        self.breaker_from_wit(&config::to_wit(config))
    }

    /// A new breaker from the WIT `config` record, whose fields are all optional
    /// (`None` takes the default): for configs read from files or other hosts.
    pub fn breaker_from_wit(&self, wit_config: &wit::Config) -> Result<Breaker> {
        let now = self.shared.clock.now();
        let (created, key) = {
            let mut guest = self.shared.lock();
            let (api, store) = guest.breakers();
            match api.call_create(&mut *store, wit_config, now)? {
                Ok(resource) => (Ok(resource), api.call_key(store, resource)?),
                Err(error) => (Err(error), 0),
            }
        };
        let resource = created.map_err(ConfigError::from)?;
        if key == NO_KEY {
            // The hot path this library takes would answer "no such breaker" for ever.
            let mut guest = self.shared.lock();
            let _ = resource.resource_drop(&mut guest.store);
            return Err(anyhow!(
                "the instance has no key left for another breaker (2^20 alive): use another instance"
            ));
        }
        // The durations a fleet adapter needs (the lease's length, the votes' window),
        // resolved as the component resolves them: unset fields take the core's defaults.
        let defaults = Config::default();
        Ok(Breaker {
            shared: Arc::new(BreakerShared {
                instance: Arc::clone(&self.shared),
                resource,
                key,
                listener: ListenerSlot::new(),
                cooldown: wit_config.cooldown.unwrap_or(defaults.cooldown),
                probe_timeout: wit_config.probe_timeout.unwrap_or(defaults.probe_timeout),
            }),
        })
    }

    /// Bytes of linear memory the instance has grown to.
    pub fn memory_bytes(&self) -> usize {
        self.shared.lock().store.data().memory_bytes
    }
}

struct BreakerShared {
    instance: Arc<InstanceShared>,
    resource: ResourceAny,
    /// The resource's key, which the hot path's functions take in its place.
    key: u32,
    listener: ListenerSlot,
    cooldown: u64,
    probe_timeout: u64,
}

impl BreakerShared {
    #[inline]
    fn now(&self) -> u64 {
        self.instance.clock.now()
    }

    /// Tells the listener, if any, about `transitions` (after the guest's lock is released,
    /// so the listener may call the breaker).
    fn notify(&self, transitions: &[Transition]) {
        self.listener.tell(transitions);
    }

    /// Runs `f` on the locked guest with this breaker's resource.
    fn with<T>(
        &self,
        f: impl FnOnce(
            &wit::GuestBreaker<'_>,
            &mut Store<HostState>,
            ResourceAny,
        ) -> wasmtime::Result<T>,
    ) -> Result<T> {
        let mut guest = self.instance.lock();
        let (api, store) = guest.breakers();
        Ok(f(&api, store, self.resource)?)
    }

    /// Records a ticket's outcome through `record-keyed`, reading the transitions it
    /// counted in the same hold of the guest.
    #[inline]
    fn judge(&self, ticket: u64, outcome: Outcome) -> Result<Recorded> {
        let now = self.now();
        let mut guest = self.instance.lock();
        let (api, store) = guest.hot();
        let judged = match api.call_record_keyed(store, self.key, ticket, outcome, now)? {
            Ok(judged) => judged,
            Err(refused) => return Err(RecordError::of(refused).into()),
        };
        let transitions = self.counted(
            guest,
            u8::from(judged.notes.contains(wit::OutcomeNotes::TRANSITIONED)),
        )?;
        Ok(Recorded {
            class: core_case(Class::from_code, judged.class as u8),
            slow: judged.notes.contains(wit::OutcomeNotes::SLOW),
            stale: judged.notes.contains(wit::OutcomeNotes::STALE),
            transitions,
        })
    }

    /// Admits through `acquire-keyed`: the ticket, or the rejection, with the transitions
    /// the call caused.
    #[inline]
    fn admit(&self) -> Result<(Result<wit::Ticketed, Rejection>, Vec<Transition>)> {
        let now = self.now();
        let mut guest = self.instance.lock();
        let (api, store) = guest.hot();
        let (decision, count) = match api.call_acquire_keyed(store, self.key, now)? {
            wit::KeyedAdmission::Admitted(admitted) => {
                let count = u8::from(admitted.notes.contains(wit::AdmissionNotes::TRANSITIONED));
                (Ok(admitted), count)
            }
            wit::KeyedAdmission::Rejected(rejected) => {
                let count = u8::from(rejected.transitioned);
                (Err(core_rejection(&rejected.rejection)), count)
            }
            wit::KeyedAdmission::UnknownKey => return Err(unknown_key(self.key)),
        };
        match self.counted(guest, count) {
            Ok(transitions) => Ok((decision, transitions)),
            Err(error) => {
                // The transitions could not be read: give an admitted ticket back rather
                // than leave it out.
                if let Ok(admitted) = decision {
                    let _ = self.judge(admitted.ticket, Outcome::Ignored);
                }
                Err(error)
            }
        }
    }

    /// The `count` transitions a hot-path call said it caused, with the guest released: in
    /// the common case none, so no second call and no list.
    #[inline]
    fn counted(&self, guest: Guard<'_, Guest>, count: u8) -> Result<Vec<Transition>> {
        if count == 0 {
            drop(guest);
            Ok(Vec::new())
        } else {
            self.told(guest)
        }
    }

    /// The transitions a hot-path call said it counted, read in the same hold of the guest
    /// (so they are exactly that call's) and told to the listener once the guest is
    /// released. The common call counts none and never comes here: no second call, no list.
    #[cold]
    #[inline(never)]
    fn told(&self, mut guest: Guard<'_, Guest>) -> Result<Vec<Transition>> {
        let transitions = self.listed(&mut guest);
        drop(guest);
        let transitions = transitions?;
        self.notify(&transitions);
        Ok(transitions)
    }

    #[cold]
    fn listed(&self, guest: &mut Guest) -> Result<Vec<Transition>> {
        let (api, store) = guest.breakers();
        let listed = api.call_last_transitions(store, self.resource)?;
        Ok(listed.iter().map(core_transition).collect())
    }
}

/// The error for a hot-path answer that says the breaker's key names nothing: the
/// library holds the breaker's handle, so only a mismatched component build gives it.
fn unknown_key(key: u32) -> anyhow::Error {
    anyhow!("the component has no breaker under key {key} (a mismatched build?)")
}

impl Drop for BreakerShared {
    fn drop(&mut self) {
        let mut guest = self.instance.lock();
        // Permits still out keep the guest's breaker alive until they are dropped too.
        let _ = self.resource.resource_drop(&mut guest.store);
    }
}

/// A circuit breaker inside the component. `Send + Sync`; clones share one breaker.
#[derive(Clone)]
pub struct Breaker {
    shared: Arc<BreakerShared>,
}

impl fmt::Debug for Breaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Breaker").finish_non_exhaustive()
    }
}

/// What [`Breaker::acquire`] decided.
#[derive(Debug)]
#[must_use = "an admitted call's permit must be recorded"]
pub struct Admission {
    /// A permit, or why not.
    pub decision: Result<Permit, Rejection>,
    /// Transitions this call caused, oldest first.
    pub transitions: Vec<Transition>,
}

/// A permit as a plain number: a *ticket* naming the permit in the breaker's table of
/// outstanding permits (the WIT's keyed hot path). It is `Copy`: nothing stops a copy or a
/// forgotten outcome, so record it once; a ticket recorded twice, or issued by another
/// breaker, records a stale outcome that counts nothing. Tickets of ended epochs that were
/// never recorded are dropped as the table fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RawPermit {
    /// The ticket.
    pub ticket: u64,
    /// Whether this call is a half-open probe.
    pub probe: bool,
}

/// What [`Breaker::acquire_raw`] decided.
#[derive(Debug)]
pub struct RawAdmission {
    /// A raw permit, or why not.
    pub decision: Result<RawPermit, Rejection>,
    /// Transitions this call caused, oldest first.
    pub transitions: Vec<Transition>,
}

/// What recording an outcome did.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// How the breaker classified the outcome.
    pub class: Class,
    /// A success slower than `slow-call-duration`.
    pub slow: bool,
    /// The permit was from an earlier epoch (or named no permit out): nothing was counted.
    pub stale: bool,
    /// Transitions this call caused, oldest first.
    pub transitions: Vec<Transition>,
}

/// An outcome the breaker refused. Nothing was counted, and the permit is still out.
/// The `Display` text is the core's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// An HTTP status outside 100–599, or a gRPC code above 16.
    Outcome(tripgate_core::OutcomeError),
    /// The component has no breaker under this breaker's key (a mismatched build: the
    /// library holds the breaker's handle, so its key stays valid).
    UnknownBreaker,
    /// The component refused a permit of another breaker (a mismatched build: the keyed
    /// path records another breaker's ticket as stale).
    ForeignPermit,
}

impl RecordError {
    fn of(refused: wit::RecordError) -> Self {
        use tripgate_core::OutcomeError as E;
        match refused {
            wit::RecordError::InvalidStatus(code) => Self::Outcome(E::Status(code)),
            wit::RecordError::InvalidGrpcCode(code) => Self::Outcome(E::GrpcCode(code)),
            wit::RecordError::UnknownKey => Self::UnknownBreaker,
            wit::RecordError::ForeignPermit => Self::ForeignPermit,
        }
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Outcome(error) => write!(f, "{error}"),
            Self::UnknownBreaker => f.write_str("the component has no breaker under this key"),
            Self::ForeignPermit => f.write_str("the permit was issued by another breaker"),
        }
    }
}

impl std::error::Error for RecordError {}

impl Breaker {
    fn now(&self) -> u64 {
        self.shared.now()
    }

    /// Runs `f` on the locked guest with this breaker's resource and the clock's `now`.
    fn with<T>(
        &self,
        f: impl FnOnce(
            &wit::GuestBreaker<'_>,
            &mut Store<HostState>,
            ResourceAny,
            u64,
        ) -> wasmtime::Result<T>,
    ) -> Result<T> {
        let now = self.now();
        self.shared.with(|api, store, me| f(api, store, me, now))
    }

    /// Admits a call or turns it away, at the clock's `now`.
    #[inline]
    pub fn acquire(&self) -> Result<Admission> {
        let (decision, transitions) = self.shared.admit()?;
        Ok(Admission {
            decision: decision.map(|admitted| Permit {
                breaker: Arc::clone(&self.shared),
                ticket: Some(admitted.ticket),
                probe: admitted.notes.contains(wit::AdmissionNotes::PROBE),
            }),
            transitions,
        })
    }

    /// [`Self::acquire`] with a plain-number permit (see [`RawPermit`]): nothing is
    /// recorded for it when it is dropped.
    #[inline]
    pub fn acquire_raw(&self) -> Result<RawAdmission> {
        let (decision, transitions) = self.shared.admit()?;
        Ok(RawAdmission {
            decision: decision.map(|admitted| RawPermit {
                ticket: admitted.ticket,
                probe: admitted.notes.contains(wit::AdmissionNotes::PROBE),
            }),
            transitions,
        })
    }

    /// Records a raw permit's outcome. An invalid outcome is a [`RecordError`] and the
    /// raw permit stays out.
    pub fn record_raw(&self, permit: RawPermit, outcome: impl Into<Outcome>) -> Result<Recorded> {
        self.shared.judge(permit.ticket, outcome.into())
    }

    /// The effective state now.
    pub fn state(&self) -> Result<State> {
        self.with(|api, store, me, now| api.call_state(store, me, now))
            .map(core_state)
    }

    /// Counters and state now.
    pub fn metrics(&self) -> Result<Metrics> {
        self.with(|api, store, me, now| api.call_metrics(store, me, now))
            .map(|m| core_metrics(&m))
    }

    /// [`Self::metrics`] and [`Self::fleet_status`] now, in one hold of the guest's lock
    /// (two guest calls at one reading of the clock): what the exposition reads
    /// (`tripgate_core::exposition`).
    pub fn reading(&self) -> Result<tripgate_core::exposition::Reading> {
        let (m, s) = self.with(|api, store, me, now| {
            let m = api.call_metrics(&mut *store, me, now)?;
            Ok((m, api.call_fleet_status(store, me, now)?))
        })?;
        Ok(tripgate_core::exposition::Reading {
            metrics: core_metrics(&m),
            fleet: core_fleet_status(&s),
        })
    }

    /// Forces the breaker open until [`Self::release`].
    pub fn isolate(&self) -> Result<Vec<Transition>> {
        self.manual(|api, store, me, now| api.call_isolate(store, me, now))
    }

    /// Closes an isolated or disabled breaker.
    pub fn release(&self) -> Result<Vec<Transition>> {
        self.manual(|api, store, me, now| api.call_release(store, me, now))
    }

    /// Admits everything and never trips, still measuring, until [`Self::release`].
    pub fn disable(&self) -> Result<Vec<Transition>> {
        self.manual(|api, store, me, now| api.call_disable(store, me, now))
    }

    /// Back to closed with an empty window; every permit out becomes stale.
    pub fn reset(&self) -> Result<Vec<Transition>> {
        self.manual(|api, store, me, now| api.call_reset(store, me, now))
    }

    /// A manual operation, its transitions told to the listener.
    fn manual(
        &self,
        op: impl FnOnce(
            &wit::GuestBreaker<'_>,
            &mut Store<HostState>,
            ResourceAny,
            u64,
        ) -> wasmtime::Result<Vec<wit::Transition>>,
    ) -> Result<Vec<Transition>> {
        let transitions: Vec<Transition> = self.with(op)?.iter().map(core_transition).collect();
        self.shared.notify(&transitions);
        Ok(transitions)
    }

    /// Fleet mode (`fleet-quorum` set; a fleet adapter drives these in the background):
    /// applies an event from the fleet (see `wit/breaker.wit`'s `fleet-apply`).
    pub fn fleet_apply(&self, event: FleetEvent) -> Result<(FleetApplied, Vec<Transition>)> {
        let kind = match event.kind {
            FleetEventKind::Open => wit::FleetEventKind::Open,
            FleetEventKind::Close => wit::FleetEventKind::Close,
        };
        let wit_event = wit::FleetEvent {
            generation: event.generation,
            kind,
            remaining: event.remaining,
        };
        let applying =
            self.with(|api, store, me, now| api.call_fleet_apply(store, me, wit_event, now))?;
        let transitions: Vec<Transition> =
            applying.transitions.iter().map(core_transition).collect();
        self.shared.notify(&transitions);
        Ok((
            core_case(FleetApplied::from_code, applying.applied as u8),
            transitions,
        ))
    }

    /// Fleet mode: the store's trip votes (member id, age in ns); whether they reach the
    /// quorum, so that the fleet opens.
    pub fn fleet_votes(&self, votes: &[(u64, u64)]) -> Result<bool> {
        let votes: Vec<wit::FleetVote> = votes
            .iter()
            .map(|&(member, age)| wit::FleetVote { member, age })
            .collect();
        self.with(|api, store, me, now| api.call_fleet_votes(store, me, &votes, now))
    }

    /// Fleet mode: whether the store is reachable, and the probe lease if this member
    /// holds it (for so many ns from now).
    pub fn fleet_store(&self, reachable: bool, lease: Option<u64>) -> Result<()> {
        self.with(|api, store, me, now| api.call_fleet_store(store, me, reachable, lease, now))
    }

    /// Fleet mode: what the last transition that needs telling asks the adapter to
    /// publish (taken once).
    pub fn fleet_take_announcement(&self) -> Result<Option<Announcement>> {
        let taken = self.with(|api, store, me, _| api.call_fleet_take_announcement(store, me))?;
        Ok(taken.map(|a| Announcement {
            kind: core_case(AnnouncementKind::from_code, a.kind as u8),
            remaining: a.remaining,
        }))
    }

    /// The configured `cooldown` (before backoff), in ns: a fleet's votes count within one.
    pub fn cooldown(&self) -> u64 {
        self.shared.cooldown
    }

    /// The configured `probe-timeout`, in ns: the length of a fleet's probe lease.
    pub fn probe_timeout(&self) -> u64 {
        self.shared.probe_timeout
    }

    /// Fleet mode: the breaker's fleet state now.
    pub fn fleet_status(&self) -> Result<FleetStatus> {
        let s = self.with(|api, store, me, now| api.call_fleet_status(store, me, now))?;
        Ok(core_fleet_status(&s))
    }

    /// Calls `listener` with every transition this breaker reports from now on, from
    /// whichever call caused it (`acquire`, a record, a dropped permit, a manual
    /// operation, `call`), after the call: no polling, and the listener may use the
    /// breaker (a listener that owns a clone of the breaker keeps it alive). Replaces any
    /// earlier listener. For logs, events and metrics exporters.
    pub fn on_transition(&self, listener: impl Fn(&Transition) + Send + Sync + 'static) {
        self.shared.listener.set(listener);
    }

    /// The state as compact bytes, instants relative to now.
    pub fn export_state(&self) -> Result<Vec<u8>> {
        Ok(self.with(|api, store, me, now| api.call_export_state(store, me, now))??)
    }

    /// Replaces the state with exported bytes; `elapsed` ns passed since the export. Bad
    /// bytes are a [`SnapshotError`] and change nothing.
    pub fn import_state(&self, bytes: &[u8], elapsed: u64) -> Result<()> {
        Ok(self
            .with(|api, store, me, now| api.call_import_state(store, me, bytes, elapsed, now))??)
    }
}

/// Admission for one call. Record it once with [`Permit::record`]; dropping it instead
/// records it as `cancelled` (counts as nothing).
pub struct Permit {
    breaker: Arc<BreakerShared>,
    /// `None` once recorded.
    ticket: Option<u64>,
    probe: bool,
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("ticket", &self.ticket)
            .field("probe", &self.probe)
            .finish_non_exhaustive()
    }
}

impl Permit {
    /// Whether this call is a half-open probe.
    pub fn is_probe(&self) -> bool {
        self.probe
    }

    /// Hands the permit back with its call's outcome, at the clock's `now`. An invalid
    /// outcome is a [`RecordError`]; the permit is then released as `cancelled`.
    #[inline]
    pub fn record(mut self, outcome: impl Into<Outcome>) -> Result<Recorded> {
        let Some(ticket) = self.ticket else {
            return Err(anyhow!("permit already recorded"));
        };
        let recorded = self.breaker.judge(ticket, outcome.into());
        if recorded.is_ok() {
            self.ticket = None;
        }
        // Refused: `Drop` releases it as `cancelled`.
        recorded
    }
}

impl Drop for Permit {
    /// Records `cancelled` at the clock's `now`.
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            let _ = self.breaker.judge(ticket, Outcome::Cancelled);
        }
    }
}

/// The core's case for a WIT enum value: a WIT enum's discriminant is its position, and
/// `wit/breaker.wit` lists each such enum in the core's code order (the `tables` test reads
/// the WIT and checks it), so no second table is kept here.
fn core_case<T>(from_code: fn(u8) -> Option<T>, code: u8) -> T {
    match from_code(code) {
        Some(case) => case,
        None => panic!("wit/breaker.wit and tripgate-core list different cases"),
    }
}

/// The core's state for the WIT one.
pub fn core_state(state: wit::State) -> State {
    core_case(State::from_code, state as u8)
}

/// The core's transition for the WIT one.
pub fn core_transition(t: &wit::Transition) -> Transition {
    Transition {
        from: core_state(t.from),
        to: core_state(t.to),
        reason: core_case(Reason::from_code, t.reason as u8),
        at: t.at,
        epoch: t.epoch,
    }
}

/// The core's rejection for the WIT one.
pub fn core_rejection(r: &wit::Rejection) -> Rejection {
    Rejection {
        state: core_state(r.state),
        reason: core_case(RejectReason::from_code, r.reason as u8),
        retry_after: r.retry_after,
    }
}

/// The core's fleet status for the WIT record.
pub fn core_fleet_status(s: &wit::FleetStatus) -> FleetStatus {
    FleetStatus {
        enabled: s.enabled,
        generation: s.generation,
        degraded: s.degraded,
        lease_held: s.lease_held,
        wants_lease: s.wants_lease,
        stale_events: s.stale_events,
    }
}

/// The core's metrics for the WIT record.
pub fn core_metrics(m: &wit::Metrics) -> Metrics {
    let mut rejected_total = [0; tripgate_core::REJECT_REASONS];
    for (reason, count) in [
        (RejectReason::Open, m.rejected_open),
        (RejectReason::Probing, m.rejected_probing),
        (RejectReason::Isolated, m.rejected_isolated),
        (RejectReason::Saturated, m.rejected_saturated),
        (RejectReason::ProbingElsewhere, m.rejected_probing_elsewhere),
    ] {
        if let Some(slot) = rejected_total.get_mut(usize::from(reason.code())) {
            *slot = count;
        }
    }
    // In the order of the core's ROUTES (the `tables` test checks the WIT lists it).
    let mut transitions_by_route = [0; tripgate_core::ROUTE_COUNT];
    for (slot, count) in transitions_by_route.iter_mut().zip(&m.transitions_by_route) {
        *slot = *count;
    }
    Metrics {
        state: core_state(m.state),
        epoch: m.epoch,
        window: Tally {
            calls: m.window.calls,
            faults: m.window.faults,
            slow: m.window.slow,
        },
        in_flight: m.in_flight,
        hung: m.hung,
        probes_out: m.probes_out,
        admitted_total: m.admitted_total,
        rejected_total,
        successes_total: m.successes_total,
        faults_total: m.faults_total,
        stale_total: m.stale_total,
        transitions_total: m.transitions_total,
        transitions_by_route,
        time_in_state: m.time_in_state,
        cooldown_remaining: m.cooldown_remaining,
        last_transition: m.last_transition.as_ref().map(core_transition),
    }
}
