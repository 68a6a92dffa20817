//! The engine, the compiled component, and the limits every instance runs under.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use tripgate_host::{Clock, CoarseClock};
use wasmtime::component::{Component, Linker};
use wasmtime::Engine;

use crate::engine::{HostState, RuntimeShared, MEMORY_LIMIT};
use crate::instance::Instance;
use crate::{bindings, Breaker, Config, COMPONENT};

/// The wasmtime engine and the compiled component, shared by every instance. Cloning is
/// a reference-count increment.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) shared: Arc<RuntimeShared>,
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

    /// A fresh instance of the component, for up to [`MAX_BREAKERS_PER_INSTANCE`](crate::MAX_BREAKERS_PER_INSTANCE)
    /// breakers that share its memory and its lock.
    pub fn instantiate(&self) -> Result<Instance> {
        Instance::new(Arc::clone(&self.shared))
    }

    /// A breaker in an instance of its own.
    pub fn breaker(&self, config: &Config) -> Result<Breaker> {
        self.instantiate()?.breaker(config)
    }
}
