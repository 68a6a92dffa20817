//! What the shared machinery needs of a host's breaker.

use std::fmt;

use tripgate_core::exposition::Reading;
use tripgate_core::{Class, Config, Nanos, Outcome, Rejection};

use crate::ListenerSlot;

/// A thread-safe breaker of some host (the native `tripgate::Breaker`, the component's
/// `tripgate_wasmtime::Breaker`), as the guarded call, the [`Registry`](crate::Registry)
/// and the exporters use it. Each host implements it once, by calling its own methods.
pub trait HostBreaker {
    /// What asking the breaker can fail with: nothing for the native breaker
    /// ([`Infallible`](std::convert::Infallible)), a failed component call for the
    /// component.
    type Error: fmt::Debug + fmt::Display + Send + Sync + 'static;
    /// An admitted call's permit. Dropped without an outcome, it records `cancelled`.
    type Permit<'a>
    where
        Self: 'a;

    /// The breaker's clock, now: the instant every operation of the breaker uses.
    fn now(&self) -> Nanos;

    /// Admits a call or turns it away.
    fn admit(&self) -> Result<Result<Self::Permit<'_>, Rejection>, Self::Error>;

    /// Records an admitted call's outcome; how the breaker classified it.
    fn settle(&self, permit: Self::Permit<'_>, outcome: Outcome) -> Result<Class, Self::Error>;

    /// [`Self::settle`] for an answer that asked callers to stay away for `retry_after` ns
    /// (the core's `record_with_retry_after`).
    fn settle_after(
        &self,
        permit: Self::Permit<'_>,
        outcome: Outcome,
        retry_after: Nanos,
    ) -> Result<Class, Self::Error>;

    /// Waits `duration` on the breaker's clock (a retry's wait between attempts): the
    /// thread sleeps; a fake clock moves forward instead.
    fn sleep(&self, duration: std::time::Duration);

    /// Metrics and fleet status now, in one hold of the breaker (what exporters read).
    fn reading(&self) -> Result<Reading, Self::Error>;

    /// Where the breaker keeps its transition listener.
    fn listeners(&self) -> &ListenerSlot;
}

/// A shared breaker is the breaker.
impl<B: HostBreaker> HostBreaker for std::sync::Arc<B> {
    type Error = B::Error;
    type Permit<'a>
        = B::Permit<'a>
    where
        Self: 'a;

    fn now(&self) -> Nanos {
        (**self).now()
    }
    fn admit(&self) -> Result<Result<Self::Permit<'_>, Rejection>, Self::Error> {
        (**self).admit()
    }
    fn settle(&self, permit: Self::Permit<'_>, outcome: Outcome) -> Result<Class, Self::Error> {
        (**self).settle(permit, outcome)
    }
    fn settle_after(
        &self,
        permit: Self::Permit<'_>,
        outcome: Outcome,
        retry_after: Nanos,
    ) -> Result<Class, Self::Error> {
        (**self).settle_after(permit, outcome, retry_after)
    }
    fn sleep(&self, duration: std::time::Duration) {
        (**self).sleep(duration);
    }
    fn reading(&self) -> Result<Reading, Self::Error> {
        (**self).reading()
    }
    fn listeners(&self) -> &ListenerSlot {
        (**self).listeners()
    }
}

/// A [`HostBreaker`] that a [`Registry`](crate::Registry) can make by name.
pub trait MakeBreaker: HostBreaker + Sized {
    /// What makes breakers: a clock for the native breaker, a compiled component for
    /// the component.
    type Maker;
    /// Why a breaker could not be made (a bad config, named by its field).
    type MakeError: fmt::Debug + fmt::Display;

    /// A closed breaker with `config`.
    fn make(maker: &Self::Maker, config: &Config) -> Result<Self, Self::MakeError>;

    /// What a reconfiguration reports: whether the window was kept, and the transitions
    /// (the core's `Reconfigured` for the native breaker).
    type Reconfigured;

    /// Puts `config` in force on this live breaker, keeping its state (the core's
    /// `Breaker::reconfigure`); a bad config is an error and changes nothing.
    fn reconfigure(&self, config: &Config) -> Result<Self::Reconfigured, Self::MakeError>;
}
