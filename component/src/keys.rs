//! The instance's breakers by key, for the hot path's functions, which take a number in
//! place of a borrowed `breaker` handle (a borrow is the costliest part of a small call in
//! wasmtime). A key is a slot index with the slot's generation above it. A slot whose
//! generations are used up is retired rather than wrapped, so a key never names a breaker
//! other than the one it was given for: once that breaker is dropped, the key names
//! nothing, for good. Free slots wait on a free list, so filing a breaker costs the same
//! however many are alive.

use alloc::vec::Vec;
use core::cell::RefCell;

use crate::Shared;

/// Bits of a key that hold the slot's index: a million slots per instance.
const INDEX_BITS: u32 = 20;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;

pub(crate) use tripgate_core::NO_KEY;

/// The generation that retires a slot. Below it, a key's top bits never reach
/// `NO_KEY`'s.
const RETIRED: u32 = u32::MAX >> INDEX_BITS;

struct Slot {
    generation: u32,
    breaker: Option<Shared>,
}

impl Slot {
    fn is_free(&self) -> bool {
        self.breaker.is_none() && self.generation < RETIRED
    }
}

/// The slots, and the free ones among them (each free slot's index once).
struct Table {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

/// The instance's breakers. A component instance runs on one thread, so one `RefCell`
/// is the whole of its synchronisation.
pub(crate) struct Keys(RefCell<Table>);

// A build with threads would need a lock here; none exists (the component is built for
// `wasm32-wasip2`, which has no `atomics` feature).
#[cfg(target_feature = "atomics")]
compile_error!("keys.rs assumes a single-threaded instance");

// SAFETY: a component instance is single-threaded (no `atomics` target feature, checked
// above), so the static is never touched from two threads. Host builds only type-check
// this crate (clippy); nothing runs it there.
unsafe impl Sync for Keys {}

pub(crate) static KEYS: Keys = Keys(RefCell::new(Table {
    slots: Vec::new(),
    free: Vec::new(),
}));

impl Keys {
    /// Files `breaker` under a fresh key; [`NO_KEY`] when no slot is free.
    pub(crate) fn insert(&self, breaker: Shared) -> u32 {
        self.file(breaker).unwrap_or(NO_KEY)
    }

    fn file(&self, breaker: Shared) -> Option<u32> {
        let mut table = self.0.borrow_mut();
        let index = match table.free.pop() {
            Some(index) => index,
            None if table.slots.len() <= INDEX_MASK as usize => {
                table.slots.push(Slot {
                    generation: 0,
                    breaker: None,
                });
                u32::try_from(table.slots.len() - 1).ok()?
            }
            None => return None,
        };
        let slot = table.slots.get_mut(usize::try_from(index).ok()?)?;
        slot.breaker = Some(breaker);
        Some(index | slot.generation << INDEX_BITS)
    }

    /// The breaker `key` names, if it is still filed.
    #[inline]
    pub(crate) fn get(&self, key: u32) -> Option<Shared> {
        if key == NO_KEY {
            return None;
        }
        let table = self.0.borrow();
        let slot = table.slots.get(usize::try_from(key & INDEX_MASK).ok()?)?;
        if slot.generation != key >> INDEX_BITS {
            return None;
        }
        slot.breaker.clone()
    }

    /// Unfiles the breaker `key` names. The slot's next key differs from every earlier
    /// one; after its last generation the slot is retired.
    pub(crate) fn remove(&self, key: u32) {
        if key == NO_KEY {
            return;
        }
        let mut table = self.0.borrow_mut();
        let index = key & INDEX_MASK;
        let Some(slot) = usize::try_from(index)
            .ok()
            .and_then(|i| table.slots.get_mut(i))
        else {
            return;
        };
        if slot.generation == key >> INDEX_BITS && slot.breaker.is_some() {
            slot.breaker = None;
            slot.generation += 1;
            if slot.is_free() {
                table.free.push(index);
            }
        }
    }
}
