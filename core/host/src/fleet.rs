//! What a fleet adapter (`tripgate-redis`) needs of a breaker: the fleet functions every
//! host exposes, so one adapter drives a breaker of any host, and [`MemberLink`], which
//! hands them to the core's member protocol
//! ([`Protocol`](tripgate_core::fleet::protocol::Protocol)).

use std::sync::Arc;

use tripgate_core::fleet::protocol::{Link, View};
use tripgate_core::{Announcement, FleetApplied, FleetEvent, FleetStatus, Nanos, State};

use crate::listener::{AlreadyWatched, Watcher};

/// A breaker's failure to answer (the component can fail to be called; the native
/// breaker cannot).
pub type MemberError = Box<dyn std::error::Error + Send + Sync>;

/// A breaker in fleet mode, as the adapter drives it from its background task. Every
/// method is a local, in-memory call on the breaker; none waits on the store.
pub trait Member: Send + Sync + 'static {
    /// State, fleet status, probes out, remaining cooldown and calls admitted, at once.
    fn view(&self) -> Result<View, MemberError>;
    /// The announcement the last transition left, taken once.
    fn take_announcement(&self) -> Result<Option<Announcement>, MemberError>;
    /// Applies an event from the fleet (the core fences it by generation).
    fn apply(&self, event: FleetEvent) -> Result<FleetApplied, MemberError>;
    /// The store's trip votes (member id, age in ns): whether they reach the quorum.
    fn votes(&self, votes: &[(u64, u64)]) -> Result<bool, MemberError>;
    /// The store is reachable or not, and the probe lease held for so many ns, if any.
    fn store(&self, reachable: bool, lease: Option<u64>) -> Result<(), MemberError>;
    /// The configured cooldown (the votes' window), in ns.
    fn cooldown(&self) -> u64;
    /// The configured probe timeout (the lease's length), in ns.
    fn probe_timeout(&self) -> u64;
    /// Wakes `watcher` whenever the breaker needs the store; refused if the breaker has a
    /// watcher already (it joined a fleet, and may not join twice).
    fn watch(&self, watcher: Arc<Watcher>) -> Result<(), AlreadyWatched>;
    /// Removes the watcher: the adapter left.
    fn unwatch(&self);
}

impl<M: Member> Member for Arc<M> {
    fn view(&self) -> Result<View, MemberError> {
        (**self).view()
    }
    fn take_announcement(&self) -> Result<Option<Announcement>, MemberError> {
        (**self).take_announcement()
    }
    fn apply(&self, event: FleetEvent) -> Result<FleetApplied, MemberError> {
        (**self).apply(event)
    }
    fn votes(&self, votes: &[(u64, u64)]) -> Result<bool, MemberError> {
        (**self).votes(votes)
    }
    fn store(&self, reachable: bool, lease: Option<u64>) -> Result<(), MemberError> {
        (**self).store(reachable, lease)
    }
    fn cooldown(&self) -> u64 {
        (**self).cooldown()
    }
    fn probe_timeout(&self) -> u64 {
        (**self).probe_timeout()
    }
    fn watch(&self, watcher: Arc<Watcher>) -> Result<(), AlreadyWatched> {
        (**self).watch(watcher)
    }
    fn unwatch(&self) {
        (**self).unwatch()
    }
}

/// A [`Member`] as the core's protocol reaches its breaker. The protocol's calls cannot
/// fail; a breaker that does (a component that trapped and could not be replaced) is
/// answered with what changes nothing, and its first error is kept for the adapter, which
/// then stops driving that member.
pub struct MemberLink<'a, M: ?Sized> {
    member: &'a M,
    error: Option<MemberError>,
}

impl<'a, M: Member + ?Sized> MemberLink<'a, M> {
    /// The link to `member`.
    pub fn new(member: &'a M) -> Self {
        Self {
            member,
            error: None,
        }
    }

    /// The first error the breaker answered with, if any.
    pub fn into_error(self) -> Option<MemberError> {
        self.error
    }

    fn kept<T>(&mut self, answer: Result<T, MemberError>, otherwise: T) -> T {
        answer.unwrap_or_else(|e| {
            self.error.get_or_insert(e);
            otherwise
        })
    }
}

impl<M: Member + ?Sized> Link for MemberLink<'_, M> {
    fn view(&mut self) -> View {
        let answer = self.member.view();
        self.kept(answer, broken_view())
    }
    fn take_announcement(&mut self) -> Option<Announcement> {
        let answer = self.member.take_announcement();
        self.kept(answer, None)
    }
    fn apply(&mut self, event: FleetEvent) -> FleetApplied {
        let answer = self.member.apply(event);
        self.kept(answer, FleetApplied::NotInFleet)
    }
    fn votes(&mut self, votes: &[(u64, Nanos)]) -> bool {
        let answer = self.member.votes(votes);
        self.kept(answer, false)
    }
    fn store(&mut self, reachable: bool, lease: Option<Nanos>) {
        let answer = self.member.store(reachable, lease);
        self.kept(answer, ());
    }
}

/// What a breaker that cannot answer looks like to the protocol: closed, asking for
/// nothing.
fn broken_view() -> View {
    View {
        state: State::Closed,
        status: FleetStatus::default(),
        probes_out: 0,
        cooldown_remaining: 0,
        admitted: 0,
    }
}
