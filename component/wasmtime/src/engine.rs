//! What every instance of the component runs under: the engine, the compiled component
//! ready to instantiate, the clock, and the store's limits. The public face of this is
//! [`Runtime`](crate::Runtime); instances ([`guest`](crate::guest)) are made from it.

use std::sync::Arc;

use anyhow::Result;
use tripgate_host::Clock;
use wasmtime::{Engine, ResourceLimiter, Store};

use crate::bindings;

/// Most breakers one [`Instance`](crate::Instance) holds. Past it, [`Instance::breaker`](crate::Instance::breaker) is an error and
/// asks for another instance ([`Runtime::breaker`](crate::Runtime::breaker) gives each breaker its own). Far below
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
/// the library replaces the instance ([`Instance`](crate::Instance)).
pub const MEMORY_LIMIT: usize = 2 * (MAX_BREAKERS_PER_INSTANCE * BREAKER_BYTES + TICKET_BYTES);

/// Handles the store may hold: one per breaker, plus the few a call borrows.
const HANDLE_LIMIT: usize = 2 * MAX_BREAKERS_PER_INSTANCE + 64;

/// The compiled component and what its instances are made with, shared by a
/// [`Runtime`](crate::Runtime)'s clones and every instance made from them.
pub(crate) struct RuntimeShared {
    pub(crate) engine: Engine,
    pub(crate) pre: bindings::TripgatePre<HostState>,
    pub(crate) clock: Arc<dyn Clock + Send + Sync>,
    pub(crate) memory_limit: usize,
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
    pub(crate) memory_limit: usize,
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
