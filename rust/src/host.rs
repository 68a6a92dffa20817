//! The native breaker as the shared host machinery sees it: a [`HostBreaker`] (for the
//! guarded call, the registry and the exporters) and a fleet [`Member`].

use std::convert::Infallible;
use std::sync::Arc;

use tripgate_core::exposition::Reading;
use tripgate_core::fleet::protocol::View;
use tripgate_core::{
    Announcement, Class, Config, ConfigError, FleetApplied, FleetEvent, Nanos, Outcome,
    Reconfigured, Rejection,
};
use tripgate_host::fleet::{Member, MemberError};
use tripgate_host::{AlreadyWatched, Clock, HostBreaker, ListenerSlot, MakeBreaker, Watcher};

use crate::{Breaker, Permit};

impl<C: Clock> HostBreaker for Breaker<C> {
    type Error = Infallible;
    type Permit<'a>
        = Permit<'a, C>
    where
        C: 'a;

    fn now(&self) -> Nanos {
        self.clock().now()
    }

    fn admit(&self) -> Result<Result<Permit<'_, C>, Rejection>, Infallible> {
        Ok(self.acquire())
    }

    fn settle(&self, permit: Permit<'_, C>, outcome: Outcome) -> Result<Class, Infallible> {
        Ok(permit.record(outcome).class)
    }

    fn settle_after(
        &self,
        permit: Permit<'_, C>,
        outcome: Outcome,
        retry_after: Nanos,
    ) -> Result<Class, Infallible> {
        let retry_after = std::time::Duration::from_nanos(retry_after);
        Ok(permit.record_with_retry_after(outcome, retry_after).class)
    }

    fn sleep(&self, duration: std::time::Duration) {
        self.clock().sleep(duration);
    }

    fn reading(&self) -> Result<Reading, Infallible> {
        Ok(Breaker::reading(self))
    }

    fn listeners(&self) -> &ListenerSlot {
        self.listener_slot()
    }
}

impl<C: Clock + Clone> MakeBreaker for Breaker<C> {
    type Maker = C;
    type MakeError = ConfigError;

    fn make(clock: &C, config: &Config) -> Result<Self, ConfigError> {
        Breaker::with_clock(*config, clock.clone())
    }

    type Reconfigured = Reconfigured;

    fn reconfigure(&self, config: &Config) -> Result<Reconfigured, ConfigError> {
        Breaker::reconfigure(self, *config)
    }
}

impl<C: Clock + Send + Sync + 'static> Member for Breaker<C> {
    fn view(&self) -> Result<View, MemberError> {
        Ok(self.fleet_view())
    }
    fn take_announcement(&self) -> Result<Option<Announcement>, MemberError> {
        Ok(self.fleet_take_announcement())
    }
    fn apply(&self, event: FleetEvent) -> Result<FleetApplied, MemberError> {
        Ok(self.fleet_apply(event).0)
    }
    fn votes(&self, votes: &[(u64, u64)]) -> Result<bool, MemberError> {
        Ok(self.fleet_votes(votes))
    }
    fn store(&self, reachable: bool, lease: Option<u64>) -> Result<(), MemberError> {
        self.fleet_store(reachable, lease);
        Ok(())
    }
    fn cooldown(&self) -> u64 {
        self.config().cooldown
    }
    fn probe_timeout(&self) -> u64 {
        self.config().probe_timeout
    }
    fn watch(&self, watcher: Arc<Watcher>) -> Result<(), AlreadyWatched> {
        self.listener_slot().watch(watcher)
    }
    fn unwatch(&self) {
        self.listener_slot().unwatch();
    }
}
