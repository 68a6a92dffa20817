//! The instance's breakers by key, for the hot path's functions, which take a number in
//! place of a borrowed `breaker` handle (a borrow is the costliest part of a small call in
//! wasmtime). A key is a slot index with the slot's generation above it, so a key kept
//! after its breaker was dropped names nothing, even once the slot holds another breaker.

use alloc::vec::Vec;
use core::cell::RefCell;

use crate::Shared;

/// Bits of a key that hold the slot's index: a million breakers per instance.
const INDEX_BITS: u32 = 20;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;

/// The key of a breaker made when a million are alive in the instance: it names nothing,
/// so only the functions that take the breaker's handle reach that breaker.
pub(crate) const NO_KEY: u32 = u32::MAX;

/// Generations a slot counts through before its keys repeat.
const GENERATIONS: u32 = (u32::MAX >> INDEX_BITS) - 1;

struct Slot {
    generation: u32,
    breaker: Option<Shared>,
}

/// The instance's breakers. A component instance runs on one thread, so one `RefCell`
/// is the whole of its synchronisation.
pub(crate) struct Keys(RefCell<Vec<Slot>>);

// SAFETY: a component instance is single-threaded (no `atomics` target feature), so the
// static is never touched from two threads; host builds of this crate only test it.
unsafe impl Sync for Keys {}

pub(crate) static KEYS: Keys = Keys(RefCell::new(Vec::new()));

impl Keys {
    /// Files `breaker` under a fresh key; [`NO_KEY`] when every index is taken.
    pub(crate) fn insert(&self, breaker: Shared) -> u32 {
        self.file(breaker).unwrap_or(NO_KEY)
    }

    fn file(&self, breaker: Shared) -> Option<u32> {
        let mut slots = self.0.borrow_mut();
        let index = match slots.iter().position(|slot| slot.breaker.is_none()) {
            Some(index) => index,
            None if slots.len() <= INDEX_MASK as usize => {
                slots.push(Slot {
                    generation: 0,
                    breaker: None,
                });
                slots.len() - 1
            }
            None => return None,
        };
        let slot = slots.get_mut(index)?;
        slot.breaker = Some(breaker);
        Some(u32::try_from(index).ok()? | slot.generation << INDEX_BITS)
    }

    /// The breaker `key` names, if it is still filed.
    #[inline]
    pub(crate) fn get(&self, key: u32) -> Option<Shared> {
        if key == NO_KEY {
            return None;
        }
        let slots = self.0.borrow();
        let slot = slots.get(usize::try_from(key & INDEX_MASK).ok()?)?;
        if slot.generation != key >> INDEX_BITS {
            return None;
        }
        slot.breaker.clone()
    }

    /// Unfiles the breaker `key` names; the slot's next key differs from every earlier one
    /// (until its generation wraps, after 4,094 breakers in that one slot).
    pub(crate) fn remove(&self, key: u32) {
        if key == NO_KEY {
            return;
        }
        let mut slots = self.0.borrow_mut();
        let Some(slot) = usize::try_from(key & INDEX_MASK)
            .ok()
            .and_then(|index| slots.get_mut(index))
        else {
            return;
        };
        if slot.generation == key >> INDEX_BITS {
            slot.breaker = None;
            // Wrapping one short of the top generation keeps every key apart from NO_KEY.
            slot.generation = (slot.generation + 1) % GENERATIONS;
        }
    }
}
