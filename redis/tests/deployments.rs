//! Fleet mode as users deploy it, on a real redis-server: processes that share a member
//! name, a Redis shared with a cache that evicts, and members whose Redis user an ACL
//! restricts.

mod common;

use std::time::Duration;

use common::*;
use redis::AsyncCommands;
use tripgate::{Config, Outcome, State, MILLISECOND};
use tripgate_redis::Options;

/// Options of a process named `name` (a pod's HOSTNAME that every worker of the pod shares).
fn named(url: &str, name: &str) -> Options {
    options(url).member(name)
}

async fn acl_user(url: &str, user: &str, rules: &str) {
    let mut conn = redis_conn(url).await;
    let mut setuser = redis::cmd("ACL");
    setuser.arg("SETUSER").arg(user).arg("on").arg(">secret");
    for rule in rules.split_whitespace() {
        setuser.arg(rule);
    }
    let () = setuser.query_async(&mut conn).await.unwrap();
}

/// Two processes given one member name share a vote, never the probe lease: with K = 1 the
/// fleet has one probe out, not one per process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_that_share_a_member_name_share_no_lease() {
    let redis = server(&[]);
    let url = redis.url(None);
    let members = vec![
        member_with(named(&url, "pod-7"), "shared", config(1)),
        member_with(named(&url, "pod-7"), "shared", config(1)),
    ];
    connected(&members.iter().collect::<Vec<_>>()).await;
    assert_eq!(
        members[0].fleet.status().member_id,
        members[1].fleet.status().member_id
    );
    fail(&members[0], 3);
    for m in &members {
        eventually("open", || m.breaker.fleet_status().generation >= 1).await;
    }
    // One holder; the other keeps turning its callers away while the probe is out.
    let holder = probe_round(&members).await;
    let probe = members[holder].breaker.acquire().unwrap();
    assert!(probe.is_probe());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let other = &members[1 - holder];
    assert!(!other.breaker.fleet_status().lease_held);
    assert!(other.breaker.acquire().is_err());
    probe.record(Outcome::Success);
    for m in &members {
        eventually("closed", || m.breaker.state() == State::Closed).await;
    }
}

/// A Redis shared with a cache, full, evicting the keys with the shortest TTL first: the
/// lease carries none, so the cache's keys go and the holder's lease stays while its probe
/// is out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_evicts_volatile_keys_keeps_the_lease() {
    let redis = server(&["--maxmemory", "4mb", "--maxmemory-policy", "volatile-ttl"]);
    let url = redis.url(None);
    // A short lease, renewed on the store's real clock while the probe is out: the other
    // member asks again each time the lease it was shown runs out.
    let short = Config {
        probe_timeout: 900 * MILLISECOND,
        ..config(1)
    };
    let members: Vec<Member> = (0..2)
        .map(|_| member_with(options(&url), "evict", short))
        .collect();
    connected(&members.iter().collect::<Vec<_>>()).await;
    assert_eq!(members[0].fleet.store().warning(), None);
    fail(&members[0], 3);
    for m in &members {
        eventually("open", || m.breaker.fleet_status().generation >= 1).await;
    }
    let holder = probe_round(&members).await;
    let probe = members[holder].breaker.acquire().unwrap();
    // The cache fills the store past its limit many times over, with longer TTLs than
    // the lease's length would be.
    let mut conn = redis_conn(&url).await;
    let value = "x".repeat(16 * 1024);
    for i in 0..2_000 {
        let _: Result<(), _> = conn.set_ex(format!("cache:{i}"), &value, 3_600).await;
    }
    let evicted: i64 = {
        let info: String = redis::cmd("INFO")
            .arg("stats")
            .query_async(&mut conn)
            .await
            .unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("evicted_keys:"))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    };
    assert!(evicted > 0, "the cache was evicted from");
    assert!(
        conn.exists::<_, bool>("tripgate:{evict}:lease")
            .await
            .unwrap(),
        "the lease was evicted"
    );
    // The other member's caller asks for the lease again each time the lease it was
    // shown runs out: it is still the holder's, renewed, for three lease lengths.
    let other = &members[1 - holder];
    for _ in 0..27 {
        assert!(other.breaker.acquire().is_err(), "a second probe");
        assert!(!other.breaker.fleet_status().lease_held, "a second lease");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(members[holder].breaker.fleet_status().lease_held);
    probe.record(Outcome::Success);
    for m in &members {
        eventually("closed", || m.breaker.state() == State::Closed).await;
    }
}

/// A store that may evict any key when full is reported as it connects; one without a
/// limit is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_may_evict_the_lease_is_reported() {
    let redis = server(&["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"]);
    let m = member(&redis.url(None), "lru", 1);
    connected(&[&m]).await;
    let warning = m.fleet.store().warning().expect("a warning");
    assert!(warning.contains("allkeys-lru"), "{warning}");
    let unlimited = server(&["--maxmemory-policy", "allkeys-lru"]);
    let m = member(&unlimited.url(None), "lru", 1);
    connected(&[&m]).await;
    assert_eq!(m.fleet.store().warning(), None);
}

/// A member whose user has exactly the ACL wit/fleet.md lists runs a whole round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_acl_is_enough() {
    let redis = server(&[]);
    acl_user(&redis.url(None), "fleet", tripgate_core::fleet::store::ACL).await;
    let url = redis.url(Some("fleet:secret"));
    let members: Vec<Member> = (0..2).map(|_| member(&url, "acl", 1)).collect();
    connected(&members.iter().collect::<Vec<_>>()).await;
    fail(&members[0], 3);
    for m in &members {
        eventually("open", || m.breaker.fleet_status().generation >= 1).await;
    }
    graduate(&members).await;
    for m in &members {
        let status = m.fleet.status();
        assert!(status.connected && status.counts.refused == 0, "{status:?}");
    }
}

/// A command the store's ACL denies inside a script is an outage that names the command,
/// not bad data: the member is degraded, and its last error says what to allow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_the_acl_denies_is_an_outage_that_names_it() {
    let redis = server(&[]);
    let admin = redis.url(None);
    let rules = format!("{} -zadd", tripgate_core::fleet::store::ACL);
    acl_user(&admin, "nozadd", &rules).await;
    let members = vec![
        member(&admin, "deny", 1),
        member(&redis.url(Some("nozadd:secret")), "deny", 1),
    ];
    connected(&members.iter().collect::<Vec<_>>()).await;
    fail(&members[0], 3);
    for m in &members {
        eventually("open", || m.breaker.fleet_status().generation >= 1).await;
    }
    // The first member holds the lease; the second is turned down, and its queueing as a
    // waiter (ZADD) is denied.
    members[0]
        .clock
        .advance(members[0].breaker.metrics().cooldown_remaining);
    assert!(members[0].breaker.acquire().is_err());
    eventually("a holder", || members[0].breaker.fleet_status().lease_held).await;
    let denied = &members[1];
    denied
        .clock
        .advance(denied.breaker.metrics().cooldown_remaining);
    assert!(denied.breaker.acquire().is_err());
    eventually("degraded", || denied.fleet.status().degraded).await;
    let error = denied.fleet.store().last_error().unwrap_or_default();
    assert!(error.contains("ZADD in take.lua"), "{error}");
    assert!(error.contains("denies"), "{error}");
    assert_eq!(denied.fleet.status().counts.refused, 0);
}

/// A publish the ACL denies stores nothing: the trip is not half announced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_publish_stores_nothing() {
    let redis = server(&[]);
    let admin = redis.url(None);
    let rules = format!("{} -publish", tripgate_core::fleet::store::ACL);
    acl_user(&admin, "nopublish", &rules).await;
    let m = member(&redis.url(Some("nopublish:secret")), "mute", 1);
    connected(&[&m]).await;
    fail(&m, 3);
    eventually("degraded", || m.fleet.status().degraded).await;
    let error = m.fleet.store().last_error().unwrap_or_default();
    assert!(error.contains("PUBLISH/SPUBLISH in publish.lua"), "{error}");
    let mut conn = redis_conn(&admin).await;
    assert!(!conn
        .exists::<_, bool>("tripgate:{mute}:event")
        .await
        .unwrap());
}
