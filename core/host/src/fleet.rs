//! What a fleet adapter (`tripgate-redis`) needs of a breaker: the fleet functions every
//! host exposes, so one adapter drives a breaker of any host.

use tripgate_core::{Announcement, FleetApplied, FleetEvent, FleetStatus, State};

/// A breaker's failure to answer (the component can fail to be called; the native
/// breaker cannot).
pub type MemberError = Box<dyn std::error::Error + Send + Sync>;

/// What the adapter reads of the breaker besides its fleet status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    /// The effective state.
    pub state: State,
    /// Remaining cooldown when open, in ns.
    pub cooldown_remaining: u64,
    /// Probes out (a lease is renewed only while its round has some).
    pub probes_out: u8,
}

/// A breaker in fleet mode, as the adapter drives it from its background task. Every
/// method is a local, in-memory call on the breaker; none waits on the store.
pub trait Member: Send + Sync + 'static {
    /// Applies an event from the fleet (the core fences it by generation).
    fn apply(&self, event: FleetEvent) -> Result<FleetApplied, MemberError>;
    /// The store's trip votes (member id, age in ns): whether they reach the quorum.
    fn votes(&self, votes: &[(u64, u64)]) -> Result<bool, MemberError>;
    /// The store is reachable or not, and the probe lease held for so many ns, if any.
    fn store(&self, reachable: bool, lease: Option<u64>) -> Result<(), MemberError>;
    /// The announcement the last transition left, taken once.
    fn take_announcement(&self) -> Result<Option<Announcement>, MemberError>;
    /// The fleet part of the breaker's state.
    fn status(&self) -> Result<FleetStatus, MemberError>;
    /// State, remaining cooldown and probes out.
    fn view(&self) -> Result<View, MemberError>;
    /// The configured cooldown (the votes' window), in ns.
    fn cooldown(&self) -> u64;
    /// The configured probe timeout (the lease's length), in ns.
    fn probe_timeout(&self) -> u64;
}

impl<M: Member> Member for std::sync::Arc<M> {
    fn apply(&self, event: FleetEvent) -> Result<FleetApplied, MemberError> {
        (**self).apply(event)
    }
    fn votes(&self, votes: &[(u64, u64)]) -> Result<bool, MemberError> {
        (**self).votes(votes)
    }
    fn store(&self, reachable: bool, lease: Option<u64>) -> Result<(), MemberError> {
        (**self).store(reachable, lease)
    }
    fn take_announcement(&self) -> Result<Option<Announcement>, MemberError> {
        (**self).take_announcement()
    }
    fn status(&self) -> Result<FleetStatus, MemberError> {
        (**self).status()
    }
    fn view(&self) -> Result<View, MemberError> {
        (**self).view()
    }
    fn cooldown(&self) -> u64 {
        (**self).cooldown()
    }
    fn probe_timeout(&self) -> u64 {
        (**self).probe_timeout()
    }
}
