//! What the fleet tests share: a real redis-server, members (each its own `Store`, as
//! separate processes would be), and waiting on what Redis does.
//!
//! Breaker time is each member's own `FakeClock`, moved by hand; what Redis and the
//! driver do is awaited by polling a condition against a deadline, never by sleeping for
//! breaker time.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tripgate::{Breaker, Config, FakeClock, Outcome, Reason, RejectReason, State, SECOND};
use tripgate_redis::server::RedisServer;
use tripgate_redis::{Fleet, Options, Store};

pub type Native = Arc<Breaker<Arc<FakeClock>>>;

pub const KEY: &str = "a shared key of 32 bytes, really";
pub const COOLDOWN: u64 = 10 * SECOND;

pub fn config(quorum: u8) -> Config {
    Config {
        failure_threshold: 3,
        min_calls: 3,
        cooldown: COOLDOWN,
        // Long, because the lease's PX runs on the store's real clock.
        probe_timeout: 30 * SECOND,
        half_open_max_probes: 1,
        half_open_required_successes: 1,
        backoff_factor: 2.0,
        fleet_quorum: Some(quorum),
        ..Config::default()
    }
}

pub fn server(extra: &[&str]) -> RedisServer {
    RedisServer::start(extra).unwrap_or_else(|e| panic!("{e}"))
}

static MEMBERS: AtomicU64 = AtomicU64::new(0);

/// Options for a new member process: its own stable name.
pub fn options(url: &str) -> Options {
    let n = MEMBERS.fetch_add(1, Ordering::Relaxed);
    Options::new(url)
        .key(KEY)
        .member(format!("member-{}-{n}", std::process::id()))
        .reconcile_interval(Duration::from_millis(100))
        .store_timeout(Duration::from_millis(200))
        .max_backoff(Duration::from_millis(50))
}

pub struct Member {
    pub clock: Arc<FakeClock>,
    pub breaker: Native,
    pub fleet: Fleet,
}

pub fn member_with(options: Options, name: &str, config: Config) -> Member {
    let clock = Arc::new(FakeClock::new(SECOND));
    let breaker = Arc::new(Breaker::with_clock(config, Arc::clone(&clock)).unwrap());
    let store = Store::connect(options).unwrap();
    let fleet = store.join(name, Arc::clone(&breaker)).unwrap();
    Member {
        clock,
        breaker,
        fleet,
    }
}

pub fn member(url: &str, name: &str, quorum: u8) -> Member {
    member_with(options(url), name, config(quorum))
}

/// Polls `cond` every millisecond until it holds, failing after 5 s with `what`.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Polls an async `cond` until it holds, failing after 5 s with `what`.
pub async fn eventually_async<F, Fut>(what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cond().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Three connected members of fleet `name`.
pub async fn trio(url: &str, name: &str, quorum: u8) -> (Member, Member, Member) {
    let trio = (
        member(url, name, quorum),
        member(url, name, quorum),
        member(url, name, quorum),
    );
    connected(&[&trio.0, &trio.1, &trio.2]).await;
    trio
}

pub async fn connected(members: &[&Member]) {
    for m in members {
        eventually("member connected", || m.fleet.status().connected).await;
    }
}

pub fn fail(m: &Member, times: u32) {
    for _ in 0..times {
        if let Ok(permit) = m.breaker.acquire() {
            permit.record(Outcome::Failure);
        }
    }
}

pub fn last_reason(b: &Native) -> Option<Reason> {
    b.metrics().last_transition.map(|t| t.reason)
}

pub async fn redis_conn(url: &str) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(url).unwrap();
    client.get_multiplexed_async_connection().await.unwrap()
}

/// Moves every member past its cooldown; each has a caller, turned away for the want of
/// the lease, so each asks for it. Waits for one to hold it; the others keep turning
/// callers away. Returns the holder.
pub async fn probe_round(members: &[Member]) -> usize {
    for m in members {
        m.clock.advance(m.breaker.metrics().cooldown_remaining);
        let rejection = m.breaker.acquire().unwrap_err();
        assert_eq!(rejection.reason, RejectReason::ProbingElsewhere);
    }
    let held = |m: &Member| m.breaker.fleet_status().lease_held;
    eventually("a lease holder", || members.iter().any(held)).await;
    let holders: Vec<usize> = (0..members.len()).filter(|&i| held(&members[i])).collect();
    assert_eq!(holders.len(), 1, "one lease fleet-wide");
    for (i, m) in members.iter().enumerate() {
        if i != holders[0] {
            let rejection = m.breaker.acquire().unwrap_err();
            assert_eq!(rejection.reason, RejectReason::ProbingElsewhere);
        }
    }
    holders[0]
}

/// A probe round whose probe succeeds; returns its holder once every member is closed.
pub async fn graduate(members: &[Member]) -> usize {
    let holder = probe_round(members).await;
    let probe = members[holder].breaker.acquire().unwrap();
    probe.record(Outcome::Success);
    for m in members {
        eventually("closed", || m.breaker.state() == State::Closed).await;
    }
    holder
}
