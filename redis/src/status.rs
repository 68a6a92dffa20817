//! What a member's adapter has seen: its link to the store, its lease, and what its
//! protocol counted (the core's [`Counts`]). The driver writes it after each step; a
//! [`Fleet`](crate::Fleet) handle reads it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use tripgate_core::fleet::protocol::Counts;
use tripgate_core::fleet::wire::Ignored;

/// A member's state, from [`Fleet::status`](crate::Fleet::status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// This process's member id (as the wire writes it: `{:016x}`).
    pub member_id: u64,
    /// The store answers, the fleet's channel is subscribed and its keys were read back:
    /// the breaker follows the fleet.
    pub connected: bool,
    /// The store is unreachable or too slow: the breaker decides on its own.
    pub degraded: bool,
    /// This member holds the fleet's probe lease.
    pub lease_held: bool,
    /// Sessions the process began (its first connection and every reconnection).
    pub connects: u64,
    /// Sessions the process lost (a command failed or timed out, the connection dropped).
    pub disconnects: u64,
    /// What the member protocol counted: messages, events applied and published,
    /// reconciles, leases, repairs, refusals, and what it ignored by reason.
    pub counts: Counts,
}

impl Status {
    /// Messages, stored values and votes ignored for `why`.
    pub fn ignored(&self, why: Ignored) -> u64 {
        self.counts
            .ignored
            .get(usize::from(why.code()))
            .copied()
            .unwrap_or(0)
    }
}

/// The process's session, shared by its members.
#[derive(Default)]
pub(crate) struct Session {
    connects: AtomicU64,
    disconnects: AtomicU64,
    up: AtomicBool,
    last_error: Mutex<Option<String>>,
    warning: Mutex<Option<String>>,
}

impl Session {
    /// A session began, on a store about which the core has `warning`, if anything.
    pub(crate) fn began(&self, warning: Option<String>) {
        self.connects.fetch_add(1, Ordering::Relaxed);
        self.up.store(true, Ordering::Relaxed);
        *self.warning.lock().unwrap_or_else(|p| p.into_inner()) = warning;
    }

    pub(crate) fn warning(&self) -> Option<String> {
        self.warning
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    pub(crate) fn lost(&self, error: String) {
        if self.up.swap(false, Ordering::Relaxed) {
            self.disconnects.fetch_add(1, Ordering::Relaxed);
        }
        *self
            .last_error
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(error);
    }

    pub(crate) fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    pub(crate) fn connects(&self) -> (u64, u64) {
        (
            self.connects.load(Ordering::Relaxed),
            self.disconnects.load(Ordering::Relaxed),
        )
    }
}

/// One member's part, written by the driver.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MemberState {
    pub(crate) connected: bool,
    pub(crate) lease_held: bool,
    pub(crate) counts: Counts,
}
