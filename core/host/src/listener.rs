//! Where a thread-safe host keeps its transition listener: both Rust hosts tell it the
//! transitions a call caused after the call has released the breaker, so the listener may
//! use the breaker itself.
//!
//! A listener is the user's code, run inside the breaker's calls (`acquire`, a record, a
//! permit's drop). Its panic is caught here and counted ([`ListenerSlot::panics`]; with the
//! feature `tracing`, also an `ERROR` event): it never unwinds into the call that caused
//! the transition, so it can neither leak that call's permit nor, when the call is a
//! permit dropped while another panic unwinds, abort the process.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tripgate_core::Transition;

/// A transition listener.
pub type Listener = Arc<dyn Fn(&Transition) + Send + Sync>;

/// One listener, replaceable while other threads tell it transitions.
#[derive(Default)]
pub struct ListenerSlot {
    listener: RwLock<Option<Listener>>,
    panics: AtomicU64,
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
    /// lock is released before the listener runs, so the listener may replace itself. A
    /// listener that panics is counted and its panic goes no further; the next transition
    /// is told all the same.
    #[inline]
    pub fn tell(&self, transitions: &[Transition]) {
        if !transitions.is_empty() {
            self.tell_each(transitions);
        }
    }

    /// How many times the listener panicked.
    pub fn panics(&self) -> u64 {
        self.panics.load(Ordering::Relaxed)
    }

    #[cold]
    #[inline(never)]
    fn tell_each(&self, transitions: &[Transition]) {
        let listener = self
            .listener
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        let Some(listener) = listener else {
            return;
        };
        for transition in transitions {
            // The listener sees only a shared reference and the slot keeps no state it
            // could leave half-changed, so nothing is observed broken after its panic.
            if catch_unwind(AssertUnwindSafe(|| listener(transition))).is_err() {
                self.panics.fetch_add(1, Ordering::Relaxed);
                #[cfg(feature = "tracing")]
                tracing::event!(
                    target: "tripgate",
                    tracing::Level::ERROR,
                    from = transition.from.name(),
                    to = transition.to.name(),
                    reason = transition.reason.name(),
                    "a transition listener panicked; the breaker carries on"
                );
            }
        }
    }
}

impl core::fmt::Debug for ListenerSlot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ListenerSlot")
            .field("panics", &self.panics())
            .finish_non_exhaustive()
    }
}
