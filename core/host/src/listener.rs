//! Where a thread-safe host keeps its transition listener (feature `std`): both Rust hosts
//! tell it the transitions a call caused after the call has released the breaker, so the
//! listener may use the breaker itself.

use std::sync::{Arc, RwLock};

use tripgate_core::Transition;

/// A transition listener.
pub type Listener = Arc<dyn Fn(&Transition) + Send + Sync>;

/// One listener, replaceable while other threads tell it transitions.
#[derive(Default)]
pub struct ListenerSlot {
    listener: RwLock<Option<Listener>>,
}

impl ListenerSlot {
    /// A slot with no listener.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the listener.
    pub fn set(&self, listener: impl Fn(&Transition) + Send + Sync + 'static) {
        // A listener that panicked poisons nothing worth keeping: the slot holds a pointer.
        *self
            .listener
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(Arc::new(listener));
    }

    /// Calls the listener, if any, with each of `transitions`, oldest first. The slot's
    /// lock is released before the listener runs, so the listener may replace itself.
    #[inline]
    pub fn tell(&self, transitions: &[Transition]) {
        if !transitions.is_empty() {
            self.tell_each(transitions);
        }
    }

    #[cold]
    #[inline(never)]
    fn tell_each(&self, transitions: &[Transition]) {
        let listener = self
            .listener
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        if let Some(listener) = listener {
            transitions.iter().for_each(|t| listener(t));
        }
    }
}

impl core::fmt::Debug for ListenerSlot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ListenerSlot").finish_non_exhaustive()
    }
}
