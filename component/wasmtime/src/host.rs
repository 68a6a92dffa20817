//! The component's breaker as the shared host machinery sees it: a [`HostBreaker`] (for
//! the guarded call, the registry and the exporters) and a fleet [`Member`].

use std::sync::Arc;

use tripgate_core::exposition::Reading;
use tripgate_core::fleet::protocol::View;
use tripgate_core::{Announcement, Class, Config, FleetApplied, FleetEvent, Nanos, Rejection};
use tripgate_host::fleet::{Member, MemberError};
use tripgate_host::{AlreadyWatched, HostBreaker, ListenerSlot, MakeBreaker, Watcher};

use crate::{Breaker, Permit, Reconfigured, Runtime};

impl HostBreaker for Breaker {
    type Error = anyhow::Error;
    type Permit<'a> = Permit;

    fn now(&self) -> Nanos {
        self.shared.now()
    }

    fn admit(&self) -> anyhow::Result<Result<Permit, Rejection>> {
        Ok(self.acquire()?.decision)
    }

    fn settle(&self, permit: Permit, outcome: tripgate_core::Outcome) -> anyhow::Result<Class> {
        Ok(permit.record(outcome)?.class)
    }

    fn settle_after(
        &self,
        permit: Permit,
        outcome: tripgate_core::Outcome,
        retry_after: Nanos,
    ) -> anyhow::Result<Class> {
        let retry_after = std::time::Duration::from_nanos(retry_after);
        Ok(permit.record_with_retry_after(outcome, retry_after)?.class)
    }

    fn sleep(&self, duration: std::time::Duration) {
        Breaker::sleep(self, duration);
    }

    fn reading(&self) -> anyhow::Result<Reading> {
        Breaker::reading(self)
    }

    fn listeners(&self) -> &ListenerSlot {
        &self.shared.listener
    }
}

impl MakeBreaker for Breaker {
    type Maker = Runtime;
    type MakeError = anyhow::Error;

    fn make(runtime: &Runtime, config: &Config) -> anyhow::Result<Self> {
        runtime.breaker(config)
    }

    type Reconfigured = Reconfigured;

    fn reconfigure(&self, config: &Config) -> anyhow::Result<Reconfigured> {
        Breaker::reconfigure(self, config)
    }
}

impl Member for Breaker {
    fn view(&self) -> Result<View, MemberError> {
        let Reading { metrics, fleet } = self.reading()?;
        Ok(View {
            state: metrics.state,
            status: fleet,
            probes_out: metrics.probes_out,
            cooldown_remaining: metrics.cooldown_remaining,
            admitted: metrics.admitted_total,
        })
    }
    fn take_announcement(&self) -> Result<Option<Announcement>, MemberError> {
        Ok(self.fleet_take_announcement()?)
    }
    fn apply(&self, event: FleetEvent) -> Result<FleetApplied, MemberError> {
        Ok(self.fleet_apply(event)?.0)
    }
    fn votes(&self, votes: &[(u64, u64)]) -> Result<bool, MemberError> {
        Ok(self.fleet_votes(votes)?)
    }
    fn store(&self, reachable: bool, lease: Option<u64>) -> Result<(), MemberError> {
        Ok(self.fleet_store(reachable, lease)?)
    }
    fn cooldown(&self) -> u64 {
        Breaker::cooldown(self)
    }
    fn probe_timeout(&self) -> u64 {
        Breaker::probe_timeout(self)
    }
    fn watch(&self, watcher: Arc<Watcher>) -> Result<(), AlreadyWatched> {
        self.shared.listener.watch(watcher)
    }
    fn unwatch(&self) {
        self.shared.listener.unwatch();
    }
}
