//! # tripgate-redis: fleet mode on Redis
//!
//! Many processes whose breakers guard one upstream act toward it like one breaker
//! (`FLEET.md`): one member's trip opens every member for the same remaining cooldown,
//! one probe round runs fleet-wide under a lease in Redis, its end closes or re-opens
//! everyone, and generations fence out late and replayed events. The wire format is
//! `wit/fleet.md`, shared with the Node adapter, so a fleet may mix hosts.
//!
//! Every decision is the core's; this crate only carries events between the store and
//! the breaker, in a **background tokio task**: `acquire` and `record` never wait on
//! Redis. If Redis is unreachable or slower than `store_timeout`, the member reports
//! itself degraded and its breaker decides alone (a plain local breaker, K probes);
//! when Redis answers again it resynchronises from the keys before anything else.
//!
//! ```no_run
//! use std::sync::Arc;
//! use tripgate::{Breaker, Config};
//! use tripgate_redis::{join, Options};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // Fleet mode is a breaker option: the quorum of members that must trip to open all.
//! let breaker = Arc::new(Breaker::new(Config { fleet_quorum: Some(1), ..Config::default() })?);
//! let fleet = join(
//!     Arc::clone(&breaker),
//!     Options::new("redis://app:secret@127.0.0.1:6379", "payments")
//!         .key(std::env::var("FLEET_KEY")?),
//! )?;
//! // Use the breaker as always; the fleet follows in the background.
//! if let Ok(permit) = breaker.acquire() {
//!     permit.record(tripgate::Outcome::Success);
//! }
//! println!("degraded: {}", fleet.status().degraded);
//! # Ok(())
//! # }
//! ```
//!
//! * [`join`]: starts a member's task on the current tokio runtime; [`Fleet`] is its
//!   handle ([`Fleet::status`], [`Fleet::leave`]; dropping it leaves too).
//! * [`Member`] (`tripgate-host`'s): what the adapter needs of a breaker. Every host
//!   implements it on its own breaker (`tripgate::Breaker`, `tripgate_wasmtime::Breaker`),
//!   and it holds for an `Arc` of either, so this crate depends on no host.
//! * [`Options`]: the URL (`redis://user:password@host`, `rediss://` with feature
//!   `tls`), the fleet's name, the shared HMAC key, the intervals; validated with errors
//!   that name the option.
//! * [`Status`]: connected or degraded, and every ignored message by reason.
//!
//! Each member costs one command connection, one subscription connection and one task
//! that wakes every `poll_interval` (2 ms) to look at its breaker in memory.

#![deny(missing_docs)]

mod options;
#[cfg(feature = "server")]
pub mod server;
mod status;
mod store;
mod task;
pub mod wire;

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

pub use options::{OptionError, Options};
pub use status::{IgnoredCounts, Status};
pub use tripgate_host::fleet::{Member, MemberError, View};

use status::Shared;
use task::Task;

/// Why a member could not join.
#[derive(Debug)]
pub enum JoinError {
    /// An option breaks its rule (the error names it).
    Option(OptionError),
    /// The breaker has no `fleet_quorum`: it is not in fleet mode.
    NotInFleet,
    /// `join` runs the member's task on the current tokio runtime, and there is none.
    NoRuntime,
    /// The breaker did not answer.
    Member(MemberError),
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Option(e) => e.fmt(f),
            Self::NotInFleet => {
                f.write_str("the breaker is not in fleet mode: set its config's fleet_quorum")
            }
            Self::NoRuntime => f.write_str("join must be called within a tokio runtime"),
            Self::Member(e) => write!(f, "the breaker did not answer: {e}"),
        }
    }
}

impl std::error::Error for JoinError {}

impl From<OptionError> for JoinError {
    fn from(e: OptionError) -> Self {
        Self::Option(e)
    }
}

/// A member's place in its fleet: the handle of its background task.
pub struct Fleet {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
    go_local: Box<dyn Fn() + Send + Sync>,
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

/// Joins `member` to the fleet `options` name, on the Redis at `options.url`: validates
/// the options, checks that the breaker is in fleet mode, and starts the member's task on
/// the current tokio runtime. The connection is made in the background; until it is, the
/// breaker decides on its own (degraded).
pub fn join<M: Member + Clone>(member: M, options: Options) -> Result<Fleet, JoinError> {
    options.validate()?;
    if !member.status().map_err(JoinError::Member)?.enabled {
        return Err(JoinError::NotInFleet);
    }
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| JoinError::NoRuntime)?;
    let client = client(&options)?;
    let shared = Arc::new(Shared::new(options.member_id.unwrap_or_else(random_id)));
    // Until the first session, the breaker is on its own.
    member.store(false, None).map_err(JoinError::Member)?;
    shared.session_lost();
    let local = member.clone();
    let task = Task {
        member,
        client,
        name: options.name,
        key: options.key,
        reconcile_interval: options.reconcile_interval,
        store_timeout: options.store_timeout,
        poll_interval: options.poll_interval,
        max_backoff: options.max_backoff,
        shared: Arc::clone(&shared),
        unsent: Default::default(),
    };
    Ok(Fleet {
        shared,
        task: runtime.spawn(task.run()),
        go_local: Box::new(move || {
            // Out of the fleet, the breaker must not wait for a lease nobody will give.
            let _ = local.store(false, None);
        }),
    })
}

impl Fleet {
    /// The adapter's state: connected or degraded, and what it ignored.
    pub fn status(&self) -> Status {
        self.shared.snapshot()
    }

    /// Why the store was last given up on (a failed or timed-out command, a lost
    /// subscription), for logs.
    pub fn last_error(&self) -> Option<String> {
        self.shared.last_error()
    }

    /// This member's id.
    pub fn member_id(&self) -> u64 {
        self.shared.member_id
    }

    /// Stops the task; the breaker goes on as a local one. (Any lease it held runs out
    /// in the store after `probe-timeout`.)
    pub fn leave(self) {
        drop(self);
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.task.abort();
        (self.go_local)();
        self.shared.session_lost();
    }
}

/// The Redis client for `options` (validated already, so an error here is unexpected,
/// but stays an error naming the option).
fn client(options: &Options) -> Result<redis::Client, OptionError> {
    let bad = |option, e: redis::RedisError| OptionError {
        option,
        rule: format!("does not work: {e}"),
    };
    #[cfg(feature = "tls")]
    {
        // rustls needs a process-wide crypto provider; another may be installed already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        if let Some(pem) = &options.tls_root_cert {
            let certificates = redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(pem.clone()),
            };
            return redis::Client::build_with_tls(options.url.as_str(), certificates)
                .map_err(|e| bad("tls_root_cert", e));
        }
    }
    redis::Client::open(options.url.as_str()).map_err(|e| bad("url", e))
}

/// A random member id: the OS-seeded keys of std's `RandomState`, mixed with the process
/// id and the time, never 0.
fn random_id() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    if let Ok(elapsed) = std::time::UNIX_EPOCH.elapsed() {
        hasher.write_u128(elapsed.as_nanos());
    }
    hasher.finish().max(1)
}
