//! [`Instance`]: one instance of the component, the public handle breakers are made in.
//! What it holds, and how a trapped guest is replaced, is [`guest`](crate::guest)'s.

use std::fmt;
use std::sync::Arc;

use anyhow::Result;
use tripgate_host::ListenerSlot;

use crate::breaker::{Breaker, BreakerShared};
use crate::engine::RuntimeShared;
use crate::guest::InstanceShared;
use crate::{config, wit, Config};

/// One instance of the component. Clone it to share; breakers made from it share its
/// memory and its lock.
#[derive(Clone)]
pub struct Instance {
    shared: Arc<InstanceShared>,
}

impl fmt::Debug for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Instance")
            .field("breakers", &self.breakers())
            .field("replaced", &self.replaced())
            .finish_non_exhaustive()
    }
}

impl Instance {
    pub(crate) fn new(runtime: Arc<RuntimeShared>) -> Result<Self> {
        Ok(Self {
            shared: Arc::new(InstanceShared::new(runtime)?),
        })
    }

    /// A new breaker in this instance, created now. A bad config is a [`ConfigError`](crate::ConfigError)
    /// naming the field (`failure-threshold must be >= 1`); past
    /// [`MAX_BREAKERS_PER_INSTANCE`](crate::MAX_BREAKERS_PER_INSTANCE) live breakers, an error.
    pub fn breaker(&self, config: &Config) -> Result<Breaker> {
        self.breaker_from_wit(&config::to_wit(config))
    }

    /// A new breaker from the WIT `config` record, whose fields are all optional
    /// (`None` takes the default): for configs read from files or other hosts.
    pub fn breaker_from_wit(&self, wit_config: &wit::Config) -> Result<Breaker> {
        let now = self.shared.now();
        let seat = {
            let mut guest = self.shared.lock();
            match guest.create(wit_config, now) {
                Ok(created) => created?,
                Err(trap) => return Err(self.shared.trapped(&mut guest, trap)),
            }
        };
        Ok(Breaker {
            shared: Arc::new(BreakerShared {
                instance: Arc::clone(&self.shared),
                seat,
                listener: ListenerSlot::new(),
            }),
        })
    }

    /// Bytes of linear memory the instance has grown to.
    pub fn memory_bytes(&self) -> usize {
        self.shared.lock().store.data().memory_bytes
    }

    /// Breakers alive in the instance.
    pub fn breakers(&self) -> usize {
        self.shared.lock().live()
    }

    /// How many times the instance was replaced after its guest trapped.
    pub fn replaced(&self) -> u64 {
        self.shared.lock().era()
    }
}
