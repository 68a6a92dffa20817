//! What a member's adapter has seen: its link to the store and every message it ignored,
//! by reason. Counters are atomics shared by the background task and the handle.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use crate::wire::Ignored;

/// Messages (and stored events) ignored, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IgnoredCounts {
    /// Not a `tripgate1` line of the right shape.
    pub garbage: u64,
    /// For another fleet.
    pub other_fleet: u64,
    /// At or below the last generation applied (late or replayed).
    pub stale: u64,
    /// A wrong mac (a shared key is configured).
    pub forged: u64,
    /// No mac (a shared key is configured).
    pub unsigned: u64,
}

/// The adapter's state, from [`Fleet::status`](crate::Fleet::status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// This member's id (as the wire writes it: `{:016x}`).
    pub member_id: u64,
    /// Connected, subscribed and reconciled: the breaker follows the fleet.
    pub connected: bool,
    /// The store is unreachable or too slow: the breaker decides on its own.
    pub degraded: bool,
    /// Sessions begun (the first connection and every reconnection).
    pub connects: u64,
    /// Sessions lost (a command failed or timed out, or the subscription ended).
    pub disconnects: u64,
    /// When the last reconcile that began a session finished (wall clock, for
    /// measuring how fast a fleet resynchronises).
    pub last_resync: Option<SystemTime>,
    /// Events handed to the breaker that it applied (from messages or reconciles).
    pub applied: u64,
    /// Events this member published.
    pub published: u64,
    /// Probe leases this member took.
    pub leases: u64,
    /// Ignored messages, by reason.
    pub ignored: IgnoredCounts,
}

#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) member_id: u64,
    connected: AtomicBool,
    degraded: AtomicBool,
    connects: AtomicU64,
    disconnects: AtomicU64,
    last_resync: Mutex<Option<SystemTime>>,
    last_error: Mutex<Option<String>>,
    applied: AtomicU64,
    published: AtomicU64,
    leases: AtomicU64,
    garbage: AtomicU64,
    other_fleet: AtomicU64,
    stale: AtomicU64,
    forged: AtomicU64,
    unsigned: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Shared {
    pub(crate) fn new(member_id: u64) -> Self {
        Self {
            member_id,
            ..Self::default()
        }
    }

    pub(crate) fn session_began(&self) {
        bump(&self.connects);
        self.connected.store(true, Ordering::Relaxed);
        self.degraded.store(false, Ordering::Relaxed);
        *self
            .last_resync
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(SystemTime::now());
    }

    pub(crate) fn failed(&self, error: String) {
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

    pub(crate) fn session_lost(&self) {
        if self.connected.swap(false, Ordering::Relaxed) {
            bump(&self.disconnects);
        }
        self.degraded.store(true, Ordering::Relaxed);
    }

    pub(crate) fn ignored(&self, why: Ignored) {
        bump(match why {
            Ignored::Garbage => &self.garbage,
            Ignored::OtherFleet => &self.other_fleet,
            Ignored::Unsigned => &self.unsigned,
            Ignored::Forged => &self.forged,
        });
    }

    pub(crate) fn stale(&self) {
        bump(&self.stale);
    }

    pub(crate) fn applied(&self) {
        bump(&self.applied);
    }

    pub(crate) fn published(&self) {
        bump(&self.published);
    }

    pub(crate) fn leased(&self) {
        bump(&self.leases);
    }

    pub(crate) fn snapshot(&self) -> Status {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Status {
            member_id: self.member_id,
            connected: self.connected.load(Ordering::Relaxed),
            degraded: self.degraded.load(Ordering::Relaxed),
            connects: get(&self.connects),
            disconnects: get(&self.disconnects),
            last_resync: *self
                .last_resync
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
            applied: get(&self.applied),
            published: get(&self.published),
            leases: get(&self.leases),
            ignored: IgnoredCounts {
                garbage: get(&self.garbage),
                other_fleet: get(&self.other_fleet),
                stale: get(&self.stale),
                forged: get(&self.forged),
                unsigned: get(&self.unsigned),
            },
        }
    }
}
