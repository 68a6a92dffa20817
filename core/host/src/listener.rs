//! Where a thread-safe host keeps its transition listener: both Rust hosts tell it the
//! transitions a call caused after the call has released the breaker, so the listener may
//! use the breaker itself.
//!
//! The slot also keeps the breaker's [`Watcher`], the fleet adapter's wake-up: the adapter
//! sleeps until the breaker needs the store (a transition, a caller turned away for the want
//! of the probe lease, a probe's outcome) instead of polling it.
//!
//! A listener is the user's code, run inside the breaker's calls (`acquire`, a record, a
//! permit's drop). Its panic is caught here and counted ([`ListenerSlot::panics`]; with the
//! feature `tracing`, also an `ERROR` event): it never unwinds into the call that caused
//! the transition, so it can neither leak that call's permit nor, when the call is a
//! permit dropped while another panic unwinds, abort the process.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tripgate_core::{RejectReason, Transition};

/// A transition listener.
pub type Listener = Arc<dyn Fn(&Transition) + Send + Sync>;

/// One listener, replaceable while other threads tell it transitions, and the fleet
/// adapter's watcher.
#[derive(Default)]
pub struct ListenerSlot {
    listener: RwLock<Option<Listener>>,
    panics: AtomicU64,
    watcher: RwLock<Option<Arc<Watcher>>>,
    /// A watcher is set: read on its own, so a breaker outside fleet mode pays one load.
    watched: AtomicBool,
}

/// How a fleet adapter is woken when its breaker needs the store. The wake function runs
/// inside the breaker's calls (never with the breaker's lock held), so it must only
/// schedule the adapter (set a flag, send to a channel), and it must not panic.
pub struct Watcher {
    wake: Box<dyn Fn() + Send + Sync>,
    /// Whether the next `probing-elsewhere` rejection is news: once one has woken the
    /// adapter, the breaker keeps asking for the lease until a lease or a transition
    /// answers it, so the rest are not, and a busy caller does not spin the adapter.
    ask_is_news: AtomicBool,
}

impl Watcher {
    /// A watcher calling `wake`.
    pub fn new(wake: impl Fn() + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Self {
            wake: Box::new(wake),
            ask_is_news: AtomicBool::new(true),
        })
    }

    /// The breaker no longer asks for the lease (the adapter saw it stop): the next
    /// caller turned away for the want of it wakes the adapter again. Whether an ask had
    /// woken it since the last rearm (if so, another may have come after the adapter
    /// looked: it should look again).
    pub fn rearm(&self) -> bool {
        !self.ask_is_news.swap(true, Ordering::AcqRel)
    }

    fn wake(&self) {
        // Whatever the adapter's function does, the breaker's caller goes on.
        let _ = catch_unwind(AssertUnwindSafe(|| (self.wake)()));
    }
}

impl core::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Watcher").finish_non_exhaustive()
    }
}

/// A breaker already has a fleet adapter's watcher: it is a member of a fleet already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlreadyWatched;

impl core::fmt::Display for AlreadyWatched {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("the breaker is a fleet member already (it joined once)")
    }
}

impl std::error::Error for AlreadyWatched {}

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
    /// The watcher, if any, is woken after the listener.
    #[inline]
    pub fn tell(&self, transitions: &[Transition]) {
        if !transitions.is_empty() {
            self.tell_each(transitions);
            if self.watched.load(Ordering::Relaxed) {
                self.wake_watcher(false);
            }
        }
    }

    /// How many times the listener panicked.
    pub fn panics(&self) -> u64 {
        self.panics.load(Ordering::Relaxed)
    }

    /// Sets the fleet adapter's watcher; refused if one is set (a breaker joins one fleet
    /// once).
    pub fn watch(&self, watcher: Arc<Watcher>) -> Result<(), AlreadyWatched> {
        let mut slot = self
            .watcher
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if slot.is_some() {
            return Err(AlreadyWatched);
        }
        *slot = Some(watcher);
        self.watched.store(true, Ordering::Release);
        Ok(())
    }

    /// Removes the watcher (the adapter left).
    pub fn unwatch(&self) {
        let mut slot = self
            .watcher
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.watched.store(false, Ordering::Release);
        *slot = None;
    }

    /// A call was turned away: one for the want of the fleet's probe lease wakes the
    /// adapter, if it is news.
    #[inline]
    pub fn turned_away(&self, reason: RejectReason) {
        if reason == RejectReason::ProbingElsewhere && self.watched.load(Ordering::Relaxed) {
            self.wake_watcher(true);
        }
    }

    /// A probe's outcome was recorded: the adapter may give the lease back.
    #[inline]
    pub fn probe_recorded(&self) {
        if self.watched.load(Ordering::Relaxed) {
            self.wake_watcher(false);
        }
    }

    #[cold]
    #[inline(never)]
    fn wake_watcher(&self, ask: bool) {
        let watcher = self
            .watcher
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        if let Some(watcher) = watcher {
            if !ask || watcher.ask_is_news.swap(false, Ordering::AcqRel) {
                watcher.wake();
            }
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
