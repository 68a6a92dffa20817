//! # tripgate-redis: fleet mode on Redis
//!
//! Many processes whose breakers guard one upstream act toward it like one breaker
//! (`FLEET.md`): one member's trip opens every member for the same remaining cooldown,
//! one probe round runs fleet-wide under a lease in Redis, its end closes or re-opens
//! everyone, and generations fence out late and replayed events.
//!
//! Every decision is the core's. The breaker's rules are `tripgate_core::Breaker`'s fleet
//! functions; what a member asks of the store and does with the answers is the core's
//! member protocol (`tripgate_core::fleet::protocol`), shared with the Node adapter and
//! checked by the same vectors. This crate only executes the protocol's commands on Redis,
//! in **one background task per process**: `acquire` and `record` never wait on the
//! store. If Redis is unreachable or slower than `store_timeout`, the members report
//! themselves degraded and their breakers decide alone (plain local breakers, K probes);
//! when Redis answers again each reads its fleet's state back before anything else.
//!
//! ```no_run
//! use std::sync::Arc;
//! use tripgate::{Breaker, Config};
//! use tripgate_redis::{Options, Store};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // One store per process: one connection, one task, however many fleets.
//! let store = Store::connect(
//!     Options::new("redis://app:secret@127.0.0.1:6379")
//!         .key(std::env::var("FLEET_KEY")?)
//!         .member(std::env::var("HOSTNAME")?),
//! )?;
//! // Fleet mode is a breaker option: the quorum of members that must trip to open all.
//! let breaker = Arc::new(Breaker::new(Config { fleet_quorum: Some(2), ..Config::default() })?);
//! let fleet = store.join("payments", Arc::clone(&breaker))?;
//! // Use the breaker as always; the fleet follows in the background.
//! if let Ok(permit) = breaker.acquire() {
//!     permit.record(tripgate::Outcome::Success);
//! }
//! println!("degraded: {}", fleet.status().degraded);
//! # Ok(())
//! # }
//! ```
//!
//! * [`Store`]: a process's link to its Redis (one server, or a Redis Cluster with
//!   sharded pub/sub): [`Store::join`] makes a breaker a member of a named fleet,
//!   [`Store::join_registry`] every fleet-mode breaker of a `Registry`. A process's fleets
//!   share one connection (a multiplexed RESP3 connection carries the commands and every
//!   fleet's channel) and one task, which sleeps until a breaker wakes it (a transition, a
//!   caller turned away for the want of the probe lease, a probe's outcome), a message
//!   arrives, or a protocol's deadline comes.
//! * [`Fleet`]: one membership; [`Fleet::status`], and dropping it leaves (the breaker is
//!   then a local one).
//! * [`Member`] (`tripgate-host`'s): what the adapter needs of a breaker. Both Rust hosts
//!   implement it (`tripgate::Breaker`, `tripgate_wasmtime::Breaker`), and it holds for
//!   an `Arc` of either, so this crate depends on no host.
//! * [`Options`]: the address, the shared HMAC key, this process's stable member name,
//!   the intervals; validated with errors that name the option.

#![deny(missing_docs)]

mod driver;
mod options;
#[cfg(feature = "server")]
pub mod server;
mod status;
mod store;

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tripgate_core::fleet::protocol::{Protocol, Settings};
use tripgate_core::Nanos;
use tripgate_host::{MakeBreaker, Registry, Watcher};

pub use options::{OptionError, Options};
pub use status::Status;
pub use tripgate_core::fleet::protocol::Counts;
pub use tripgate_core::fleet::{scripts, wire};
pub use tripgate_host::fleet::{Member, MemberError};

/// The fleet's shared key: the core's one signer of the wire format.
pub use tripgate_core::fleet::SharedKey;

use driver::{Driver, Joining, Request, Slot, Wakes};
use status::{MemberState, Session};

/// Why a store could not be made, or a breaker could not join.
#[derive(Debug)]
pub enum Error {
    /// An option, or the fleet's name, breaks its rule (the error names it).
    Option(OptionError),
    /// The store runs its task on the current tokio runtime, and there is none.
    NoRuntime,
    /// The breaker has no `fleet_quorum`: it is not in fleet mode.
    NotInFleet,
    /// The breaker is a member of a fleet already.
    AlreadyMember,
    /// This process has a member of that fleet already (one breaker per fleet and
    /// process: a second would share its member id, lease and votes).
    FleetTaken(String),
    /// The breaker did not answer.
    Member(MemberError),
    /// The store's task has ended (its runtime shut down).
    Closed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Option(e) => e.fmt(f),
            Self::NoRuntime => f.write_str("Store::connect must be called within a tokio runtime"),
            Self::NotInFleet => {
                f.write_str("the breaker is not in fleet mode: set its config's fleet_quorum")
            }
            Self::AlreadyMember => f.write_str("the breaker is a member of a fleet already"),
            Self::FleetTaken(name) => write!(
                f,
                "this process has a member of fleet {name:?} already (one breaker per fleet)"
            ),
            Self::Member(e) => write!(f, "the breaker did not answer: {e}"),
            Self::Closed => f.write_str("the store's task has ended (its runtime shut down)"),
        }
    }
}

impl std::error::Error for Error {}

impl From<OptionError> for Error {
    fn from(e: OptionError) -> Self {
        Self::Option(e)
    }
}

struct Shared {
    requests: UnboundedSender<Request>,
    wakes: Arc<Wakes>,
    session: Arc<Session>,
    names: Mutex<HashSet<String>>,
    next_slot: AtomicU64,
    member_id: u64,
    reconcile_interval: Nanos,
}

/// A process's link to its store, shared by every fleet its breakers join. Cheap to
/// clone; the task ends when the last `Store` and [`Fleet`] are dropped.
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("member_id", &wire::member_hex(self.shared.member_id))
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Validates `options` and starts the process's task on the current tokio runtime.
    /// The connection is made in the background; until it is, every member decides on its
    /// own (degraded).
    pub fn connect(options: Options) -> Result<Self, Error> {
        options.validate()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let clients = store::Clients::new(&options)?;
        let member_id = options.member_id();
        let signer = options.key.as_ref().map(SharedKey::new);
        let nanos = |d: std::time::Duration| Nanos::try_from(d.as_nanos()).unwrap_or(Nanos::MAX);
        let (requests, received) = unbounded_channel();
        let wakes = Arc::new(Wakes::default());
        let session = Arc::new(Session::default());
        let driver = Driver::new(
            driver::Config {
                clients,
                signer,
                store_timeout: options.store_timeout,
                max_backoff: nanos(options.max_backoff),
                member_id,
            },
            Arc::clone(&session),
            received,
            Arc::clone(&wakes),
        );
        runtime.spawn(driver.run());
        Ok(Self {
            shared: Arc::new(Shared {
                requests,
                wakes,
                session,
                names: Mutex::new(HashSet::new()),
                next_slot: AtomicU64::new(1),
                member_id,
                reconcile_interval: nanos(options.reconcile_interval),
            }),
        })
    }

    /// This process's member id (the same in every fleet it joins).
    pub fn member_id(&self) -> u64 {
        self.shared.member_id
    }

    /// Why the store was last given up on (a failed or timed-out command, a dropped
    /// connection), for logs.
    pub fn last_error(&self) -> Option<String> {
        self.shared.session.last_error()
    }

    /// Why this store may break fleet mode's bound of K probes, as found when the session
    /// began: its eviction policy may evict the probe lease (an `allkeys-*`
    /// `maxmemory-policy` with a `maxmemory` limit). `None` if it keeps the lease, or does
    /// not let this member's user read its config (`CONFIG GET`).
    pub fn warning(&self) -> Option<String> {
        self.shared.session.warning()
    }

    /// Makes `member` (a breaker with `fleet_quorum` set) a member of fleet `name`
    /// (1–128 characters of `A–Z a–z 0–9 . _ - :`). Refused for a breaker that is a
    /// member already, and for a fleet this process has a member of.
    pub fn join(&self, name: &str, member: impl Member) -> Result<Fleet, Error> {
        if !wire::valid_name(name) {
            return Err(Error::Option(OptionError {
                option: "name",
                rule: format!(
                    "must be 1-128 characters of A-Z a-z 0-9 . _ - : (got {:?})",
                    options::truncated(name)
                ),
            }));
        }
        if !member.view().map_err(Error::Member)?.status.enabled {
            return Err(Error::NotInFleet);
        }
        if !self.names().insert(name.to_string()) {
            return Err(Error::FleetTaken(name.to_string()));
        }
        self.enter(name, Arc::new(member)).inspect_err(|_| {
            self.names().remove(name);
        })
    }

    fn enter(&self, name: &str, member: Arc<dyn Member>) -> Result<Fleet, Error> {
        let shared = &self.shared;
        let slot = shared.next_slot.fetch_add(1, Ordering::Relaxed);
        let woken = Arc::new(AtomicBool::new(false));
        let watcher = {
            let (woken, wakes) = (Arc::clone(&woken), Arc::clone(&shared.wakes));
            Watcher::new(move || {
                if !woken.swap(true, Ordering::AcqRel) {
                    wakes.wake(slot);
                }
            })
        };
        member
            .watch(Arc::clone(&watcher))
            .map_err(|_| Error::AlreadyMember)?;
        // Until its first session, the breaker is on its own.
        if let Err(e) = member.store(false, None) {
            member.unwatch();
            return Err(Error::Member(e));
        }
        let protocol = Protocol::new(Settings {
            name: name.to_string(),
            member: shared.member_id,
            session: options::random_id(),
            reconcile_interval: shared.reconcile_interval,
            cooldown: member.cooldown(),
            probe_timeout: member.probe_timeout(),
        });
        let state = Arc::new(Mutex::new(MemberState::default()));
        let gate = Arc::new(Mutex::new(true));
        let joining = Joining {
            slot,
            gate: Arc::clone(&gate),
            member: Arc::clone(&member),
            protocol,
            state: Arc::clone(&state),
            woken,
            watcher,
        };
        // If the task has ended, the request (and with it the member) comes back here and
        // is dropped: the breaker is left a local one.
        shared
            .requests
            .send(Request::Join(Box::new(joining)))
            .map_err(|_| Error::Closed)?;
        Ok(Fleet {
            store: self.clone(),
            slot,
            name: name.to_string(),
            state,
            gate,
            member,
        })
    }

    /// Joins every breaker of `registry` that is in fleet mode, each to the fleet of its
    /// name in the registry; the others are left alone. Breakers the registry makes later
    /// join with [`Self::join`].
    pub fn join_registry<B>(&self, registry: &Registry<B>) -> Result<Vec<Fleet>, Error>
    where
        B: MakeBreaker + Member,
    {
        let mut fleets = Vec::new();
        for (name, breaker) in registry.breakers() {
            match self.join(&name, breaker) {
                Ok(fleet) => fleets.push(fleet),
                Err(Error::NotInFleet) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(fleets)
    }

    fn names(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.shared
            .names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A breaker's membership of a fleet. Dropping it leaves: the breaker goes on as a local
/// one, and a lease it held is given back.
pub struct Fleet {
    store: Store,
    slot: Slot,
    name: String,
    state: Arc<Mutex<MemberState>>,
    gate: driver::Gate,
    member: Arc<dyn Member>,
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("name", &self.name)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl Fleet {
    /// The fleet's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The member's state now.
    pub fn status(&self) -> Status {
        let state = *self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (connects, disconnects) = self.store.shared.session.connects();
        Status {
            member_id: self.store.shared.member_id,
            connected: state.connected,
            degraded: !state.connected,
            lease_held: state.lease_held,
            connects,
            disconnects,
            counts: state.counts,
        }
    }

    /// The store this member runs on.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Leaves the fleet (as dropping does).
    pub fn leave(self) {
        drop(self);
    }
}

impl Drop for Fleet {
    /// The breaker is a local one when this returns (unless the handle is dropped by its
    /// own breaker's listener, inside the driver's step: then as soon as the step ends).
    fn drop(&mut self) {
        if !driver::stepping(self.slot) {
            driver::leave(&self.gate, &*self.member);
        }
        let _ = self.store.shared.requests.send(Request::Leave(self.slot));
        self.store.names().remove(&self.name);
    }
}
