//! The engine, the compiled component, and the limits every instance runs under.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use tripgate_host::{Clock, CoarseClock};
use wasmtime::component::{Component, Linker};
use wasmtime::{Engine, ResourceLimiter, Store};

use crate::instance::Instance;
use crate::{bindings, Breaker, Config, COMPONENT};

/// Most breakers one [`Instance`] holds. Past it, [`Instance::breaker`] is an error and
/// asks for another instance ([`Runtime::breaker`] gives each breaker its own). Far below
/// the 2^20 keys the component has, and within what the store's limits are sized for.
pub const MAX_BREAKERS_PER_INSTANCE: usize = 16_384;

/// Bytes of linear memory one breaker takes in the component, with its permit table at
/// its smallest (measured: 2,621; `tests/footprint.rs`), rounded up.
const BREAKER_BYTES: usize = 3 << 10;

/// Bytes the component's ticket tables take at most, all its breakers together: 2^19
/// places of 24 bytes (`wit/breaker.wit`, `ticket`).
const TICKET_BYTES: usize = 12 << 20;

/// The linear memory an instance may grow to: what [`MAX_BREAKERS_PER_INSTANCE`] breakers
/// and a full ticket budget take, twice over for the allocator's slack (about 120 MiB).
/// The component enforces the ticket budget itself (`saturated` past it) and the library
/// the breaker limit, so load alone never reaches this; a guest bug that does traps, and
/// the library replaces the instance ([`Instance`]).
pub const MEMORY_LIMIT: usize = 2 * (MAX_BREAKERS_PER_INSTANCE * BREAKER_BYTES + TICKET_BYTES);

/// Handles the store may hold: one per breaker, plus the few a call borrows.
const HANDLE_LIMIT: usize = 2 * MAX_BREAKERS_PER_INSTANCE + 64;

/// The wasmtime engine and the compiled component, shared by every instance. Cloning is
/// a reference-count increment.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) shared: Arc<RuntimeShared>,
}

pub(crate) struct RuntimeShared {
    engine: Engine,
    pre: bindings::TripgatePre<HostState>,
    pub(crate) clock: Arc<dyn Clock + Send + Sync>,
    memory_limit: usize,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("memory_limit", &self.shared.memory_limit)
            .finish_non_exhaustive()
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
                memory_limit: MEMORY_LIMIT,
            }),
        })
    }

    /// The same compiled component with another clock for the instances made from the
    /// result (tests pass an `Arc<FakeClock>`).
    pub fn with_clock(&self, clock: Arc<dyn Clock + Send + Sync>) -> Self {
        self.with(|shared| shared.clock = clock)
    }

    /// The same compiled component whose instances may grow their linear memory to
    /// `bytes` instead of [`MEMORY_LIMIT`]. Below what the limits need, an instance can run
    /// out and trap; the library then replaces it, so this is how tests make a guest trap.
    pub fn with_memory_limit(&self, bytes: usize) -> Self {
        self.with(|shared| shared.memory_limit = bytes)
    }

    fn with(&self, change: impl FnOnce(&mut RuntimeShared)) -> Self {
        let mut shared = RuntimeShared {
            engine: self.shared.engine.clone(),
            pre: self.shared.pre.clone(),
            clock: Arc::clone(&self.shared.clock),
            memory_limit: self.shared.memory_limit,
        };
        change(&mut shared);
        Self {
            shared: Arc::new(shared),
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

    /// A fresh instance of the component, for up to [`MAX_BREAKERS_PER_INSTANCE`]
    /// breakers that share its memory and its lock.
    pub fn instantiate(&self) -> Result<Instance> {
        Instance::new(Arc::clone(&self.shared))
    }

    /// A breaker in an instance of its own.
    pub fn breaker(&self, config: &Config) -> Result<Breaker> {
        self.instantiate()?.breaker(config)
    }
}

impl RuntimeShared {
    /// A new store and instance of the component, under the runtime's limits.
    pub(crate) fn instance(&self) -> Result<(Store<HostState>, bindings::Tripgate)> {
        let mut store = Store::new(
            &self.engine,
            HostState {
                memory_bytes: 0,
                memory_limit: self.memory_limit,
            },
        );
        store.limiter(|state| state);
        store.set_max_component_handles(HANDLE_LIMIT);
        let bindings = self.pre.instantiate(&mut store)?;
        Ok((store, bindings))
    }
}

/// The store's data: tracks the instance's linear memory so tests can count bytes, and
/// caps it so that no guest, however wrong, takes the host's memory.
pub(crate) struct HostState {
    pub(crate) memory_bytes: usize,
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
