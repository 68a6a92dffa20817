//! Fleet mode on a real redis-server (started here, on a free port of 127.0.0.1): every
//! numbered rule of FLEET.md, with native and wasmtime breakers as members, each member
//! its own `Store` as separate processes would be.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use redis::AsyncCommands;
use tripgate::{
    Breaker, Config, FakeClock, Outcome, Reason, RejectReason, State, MILLISECOND, SECOND,
};
use tripgate_redis::wire::{self, Ignored};
use tripgate_redis::{Error, Options, SharedKey, Store};

fn signed(name: &str, message: &wire::Message, key: &str) -> String {
    wire::encode(name, message, Some(&SharedKey::new(key)))
}

/// Rule 2: one trip opens the fleet, with the same remaining cooldown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trip_opens_the_fleet_with_the_same_remaining_cooldown() {
    let redis = server(&[]);
    let url = redis.url(None);
    let (a, b, c) = trio(&url, "t2", 1).await;
    // Breaker time stands still, so the trip's whole cooldown is what is left.
    fail(&a, 3);
    assert_eq!(a.breaker.state(), State::Open);
    for m in [&b, &c] {
        eventually("fleet-open", || m.breaker.state() == State::Open).await;
        assert_eq!(last_reason(&m.breaker), Some(Reason::FleetOpen));
        assert_eq!(m.breaker.metrics().cooldown_remaining, COOLDOWN);
    }
    // The others did not trip on their own evidence: no failing call reached them.
    assert_eq!(b.breaker.metrics().faults_total, 0);
    let mut conn = redis_conn(&url).await;
    let pttl: i64 = conn.pttl("tripgate:{t2}:event").await.unwrap();
    assert!(
        pttl > 0 && pttl <= 10_000,
        "the stored open expires with the cooldown: {pttl}"
    );
    // A member that hears later gets what the store says is left, not a fresh
    // cooldown: a late joiner reconciles from the keys.
    let d = member(&url, "t2", 1);
    connected(&[&d]).await;
    eventually("late joiner open", || d.breaker.state() == State::Open).await;
    let left = d.breaker.metrics().cooldown_remaining;
    assert!(
        left <= COOLDOWN && left > COOLDOWN - 2 * SECOND,
        "late joiner: {left} ns"
    );
}

/// Rule 3: one probe round fleet-wide; graduation closes everyone with an empty window,
/// a probe fault re-opens everyone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_probe_round_fleet_wide() {
    let redis = server(&[]);
    let url = redis.url(None);
    let members: Vec<Member> = (0..3).map(|_| member(&url, "t3", 1)).collect();
    connected(&members.iter().collect::<Vec<_>>()).await;
    fail(&members[0], 3);
    for m in &members {
        // The tripper included: it hears its own open (generation 1) like everyone.
        eventually("open", || m.breaker.fleet_status().generation >= 1).await;
        assert_eq!(m.breaker.state(), State::Open);
    }

    // Round one: the probe fails, the fleet re-opens with the backed-off cooldown.
    let holder = probe_round(&members).await;
    let probe = members[holder].breaker.acquire().unwrap();
    assert!(probe.is_probe());
    probe.record(Outcome::Failure);
    for m in &members {
        // The holder re-opens at once, and hears its own open (generation 2) later.
        eventually("re-opened", || m.breaker.fleet_status().generation >= 2).await;
        assert_eq!(m.breaker.state(), State::Open);
        let left = m.breaker.metrics().cooldown_remaining;
        assert!(left > COOLDOWN, "backed off: {left} ns");
    }

    // Round two: the probe succeeds, everyone closes, windows empty.
    let holder = graduate(&members).await;
    for m in &members {
        assert_eq!(m.breaker.metrics().window.calls, 0);
    }
    for (i, m) in members.iter().enumerate() {
        if i != holder {
            assert_eq!(last_reason(&m.breaker), Some(Reason::FleetClose));
        }
    }
}

/// Rule 3, one holder: a holder whose callers go quiet gives the lease back after a third
/// of it, and the release wakes the member that has waited longest, alone; that member
/// then runs the whole round (two successes) under one lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_wakes_the_longest_waiter_and_its_round_ends_in_it() {
    let redis = server(&[]);
    let url = redis.url(None);
    let config = Config {
        // The store's lease runs on real time: short, so an idle holder lets go soon.
        probe_timeout: 900 * MILLISECOND,
        half_open_required_successes: 2,
        ..config(1)
    };
    let members: Vec<Member> = (0..4)
        .map(|_| member_with(options(&url), "t3w", config))
        .collect();
    connected(&members.iter().collect::<Vec<_>>()).await;
    fail(&members[0], 3);
    for m in &members {
        eventually("open", || m.breaker.fleet_status().generation >= 1).await;
    }
    let first = probe_round(&members).await;
    let mut conn = redis_conn(&url).await;
    let waiters = "tripgate:{t3w}:waiters";
    eventually_async("three waiters queued", || {
        let mut conn = conn.clone();
        async move { conn.zcard::<_, usize>(waiters).await.unwrap() == 3 }
    })
    .await;
    let queue: Vec<String> = conn.zrange(waiters, 0, -1).await.unwrap();
    let longest = members
        .iter()
        .position(|m| queue[0].starts_with(&wire::member_hex(m.fleet.status().member_id)))
        .unwrap();
    assert_ne!(longest, first);

    // No probe comes to the holder: it lets go, and the longest waiter takes the lease
    // before any other waiter's retry is due (each waits for the lease it was shown).
    let holder = |m: &Member| m.breaker.fleet_status().lease_held;
    eventually("the lease passed on", || {
        !holder(&members[first]) && members.iter().any(holder)
    })
    .await;
    assert!(
        holder(&members[longest]),
        "the longest waiter holds the lease"
    );
    for _ in 0..2 {
        let probe = members[longest].breaker.acquire().unwrap();
        assert!(probe.is_probe());
        probe.record(Outcome::Success);
    }
    for m in &members {
        eventually("closed", || m.breaker.state() == State::Closed).await;
    }
    let leases: u64 = members.iter().map(|m| m.fleet.status().counts.leases).sum();
    assert_eq!(
        leases, 2,
        "one lease for the idle holder, one for the whole round"
    );
}

/// Rule 4: close the fleet, replay its old open and an older
/// generation, and see both counted stale and nothing re-opened.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_open_never_reopens_a_closed_fleet() {
    let redis = server(&[]);
    let url = redis.url(None);
    let members = vec![member(&url, "t4b", 1), member(&url, "t4b", 1)];
    connected(&members.iter().collect::<Vec<_>>()).await;
    let mut conn = redis_conn(&url).await;
    fail(&members[0], 3);
    for m in &members {
        eventually("open applied", || m.breaker.fleet_status().generation >= 1).await;
    }
    let opened: String = conn.get("tripgate:{t4b}:event").await.unwrap();
    graduate(&members).await;
    let stale_before = members[1].fleet.status().ignored(Ignored::Stale);
    // The very message that opened the fleet, replayed.
    let _: () = conn
        .publish("tripgate:{t4b}:events", &opened)
        .await
        .unwrap();
    // A correctly signed open under generation 1, older than the close.
    let old = wire::Message {
        generation: 1,
        kind: tripgate_core::FleetEventKind::Open,
        remaining_ms: 9_000,
        origin: 0xdead_beef,
    };
    let text = signed("t4b", &old, KEY);
    let _: () = conn.publish("tripgate:{t4b}:events", &text).await.unwrap();
    for m in &members {
        eventually("both counted stale", || {
            m.fleet.status().ignored(Ignored::Stale) >= stale_before + 2
        })
        .await;
        assert_eq!(m.breaker.state(), State::Closed);
    }
}

/// Rule 6: with Q = 2, one member whose own path is broken opens only itself; a second
/// member's trip within the cooldown opens the fleet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_of_two_keeps_one_broken_path_local() {
    let redis = server(&[]);
    let url = redis.url(None);
    let (a, b, c) = trio(&url, "t6", 2).await;
    let mut conn = redis_conn(&url).await;
    fail(&a, 3);
    assert_eq!(a.breaker.state(), State::Open);
    let votes = || async {
        let n: u64 = redis_conn(&url)
            .await
            .zcard("tripgate:{t6}:votes")
            .await
            .unwrap();
        n
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while votes().await < 1 {
        assert!(
            Instant::now() < deadline,
            "A's vote never reached the store"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // The vote is in and no event was published: B and C keep serving.
    let gen: Option<u64> = conn.get("tripgate:{t6}:gen").await.unwrap();
    assert_eq!(gen, None, "no fleet event below quorum");
    for m in [&b, &c] {
        assert_eq!(m.breaker.state(), State::Closed);
        m.breaker.acquire().unwrap().record(Outcome::Success);
    }
    // A's own probe round fails: a fresh vote, not a fleet open.
    a.clock.advance(COOLDOWN);
    let asked = a.breaker.acquire().unwrap_err();
    assert_eq!(asked.reason, RejectReason::ProbingElsewhere);
    eventually("A holds the lease", || a.breaker.fleet_status().lease_held).await;
    let probe = a.breaker.acquire().unwrap();
    assert!(probe.is_probe());
    probe.record(Outcome::Failure);
    assert_eq!(a.breaker.state(), State::Open);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let lease: Option<String> = conn.get("tripgate:{t6}:lease").await.unwrap();
        if lease.is_none() {
            break;
        }
        assert!(Instant::now() < deadline, "A never gave its lease back");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let gen: Option<u64> = conn.get("tripgate:{t6}:gen").await.unwrap();
    assert_eq!(gen, None, "a failed round below quorum publishes nothing");
    assert_eq!(b.breaker.state(), State::Closed);
    // A second member trips: quorum, and the fleet opens (C included).
    fail(&b, 3);
    eventually("C opened at quorum", || c.breaker.state() == State::Open).await;
    assert_eq!(last_reason(&c.breaker), Some(Reason::FleetOpen));
}

/// Rule 7: Redis killed mid-run. Calls never wait, members decide locally (the tripped
/// one probes on its own), report degraded, and resynchronise when Redis is back (here:
/// back empty, so generations must keep growing past what members saw).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_killed_then_back_empty() {
    let mut redis = server(&[]);
    let url = redis.url(None);
    let (a, b) = (member(&url, "t7", 1), member(&url, "t7", 1));
    connected(&[&a, &b]).await;
    // One full round first, so members have seen generations 1 and 2.
    fail(&a, 3);
    for m in [&a, &b] {
        eventually("open applied", || m.breaker.fleet_status().generation >= 1).await;
    }
    let members = [a, b];
    graduate(&members).await;
    let [a, b] = members;
    for m in [&a, &b] {
        // The holder closes before its own close arrives: wait for generation 2.
        eventually("the close applied", || {
            m.breaker.fleet_status().generation >= 2
        })
        .await;
    }
    let seen = b.breaker.fleet_status().generation;

    redis.kill();
    for m in [&a, &b] {
        eventually("degraded", || m.fleet.status().degraded).await;
        assert!(m.breaker.fleet_status().degraded);
    }
    // No call waits on the store: 10,000 pairs, none slower than a millisecond would
    // allow for scheduling noise (a store round trip here would be 200 ms).
    let mut slowest = Duration::ZERO;
    for _ in 0..10_000 {
        let t = Instant::now();
        b.breaker.acquire().unwrap().record(Outcome::Success);
        slowest = slowest.max(t.elapsed());
    }
    assert!(
        slowest < Duration::from_millis(50),
        "a call took {slowest:?}"
    );
    // A trips alone and, after its cooldown, probes on its own (no lease to be had).
    fail(&a, 3);
    assert_eq!(a.breaker.state(), State::Open);
    assert_eq!(b.breaker.state(), State::Closed);
    a.clock.advance(COOLDOWN);
    let probe = a.breaker.acquire().unwrap();
    assert!(probe.is_probe());
    probe.record(Outcome::Failure);
    assert_eq!(a.breaker.state(), State::Open);

    // Back, empty. A's re-open is still its news: it reconnects, resyncs, publishes it
    // under a generation above what the fleet had seen, and B opens.
    redis.restart().unwrap();
    for m in [&a, &b] {
        eventually("reconnected and read back", || {
            let status = m.fleet.status();
            status.connects >= 2 && status.connected
        })
        .await;
        assert!(!m.fleet.status().degraded);
    }
    eventually("B opened after resync", || b.breaker.state() == State::Open).await;
    assert!(b.breaker.fleet_status().generation > seen);
}

/// Rule 7 with a hung store (SIGSTOP): commands time out, the member degrades within
/// store-timeout, and calls still never wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_store_degrades_within_store_timeout() {
    let redis = server(&[]);
    let url = redis.url(None);
    let a = member(&url, "t7b", 1);
    connected(&[&a]).await;
    redis.pause(true).unwrap();
    // A reconcile (every 100 ms) times out after 200 ms.
    let t = Instant::now();
    eventually("degraded", || a.fleet.status().degraded).await;
    let took = t.elapsed();
    let mut slowest = Duration::ZERO;
    for _ in 0..1_000 {
        let t = Instant::now();
        a.breaker.acquire().unwrap().record(Outcome::Success);
        slowest = slowest.max(t.elapsed());
    }
    redis.pause(false).unwrap();
    assert!(took < Duration::from_secs(2), "degraded after {took:?}");
    assert!(
        slowest < Duration::from_millis(50),
        "a call took {slowest:?}"
    );
    eventually("back", || a.fleet.status().connected).await;
}

/// Rule 7, an announcement lost mid-publish: A trips while the store hangs (SIGSTOP), so
/// its vote times out; once the store answers again, A publishes the trip it could not
/// (it still describes A), and B opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trip_the_store_failed_to_take_is_published_once_it_is_back() {
    let redis = server(&[]);
    let url = redis.url(None);
    let (a, b) = (member(&url, "t7c", 1), member(&url, "t7c", 1));
    connected(&[&a, &b]).await;
    redis.pause(true).unwrap();
    fail(&a, 3);
    assert_eq!(a.breaker.state(), State::Open);
    eventually("A degraded", || a.fleet.status().degraded).await;
    assert_eq!(b.breaker.state(), State::Closed);
    redis.pause(false).unwrap();
    eventually("B opened by A's trip", || b.breaker.state() == State::Open).await;
    assert_eq!(last_reason(&b.breaker), Some(Reason::FleetOpen));
}

/// Rule 7's reconcile: an event written to the keys without a PUBLISH (a message the
/// channel dropped) is picked up from the keys, with the store's remaining time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_messages_are_reconciled_from_keys() {
    let redis = server(&[]);
    let url = redis.url(None);
    let a = member(&url, "t7c", 1);
    connected(&[&a]).await;
    let mut conn = redis_conn(&url).await;
    let gen: u64 = conn.incr("tripgate:{t7c}:gen", 1).await.unwrap();
    let open = wire::Message {
        generation: gen,
        kind: tripgate_core::FleetEventKind::Open,
        remaining_ms: 20_000,
        origin: 0x1234,
    };
    let text = signed("t7c", &open, KEY);
    // Stored with 6 s left although the message says 20: the store's clock counts.
    let _: () = conn
        .pset_ex("tripgate:{t7c}:event", &text, 6_000)
        .await
        .unwrap();
    eventually("reconciled open", || a.breaker.state() == State::Open).await;
    let left = a.breaker.metrics().cooldown_remaining;
    assert!(left <= 6 * SECOND && left > 4 * SECOND, "{left} ns");
    assert_eq!(
        a.fleet.status().ignored(Ignored::Stale),
        0,
        "re-reads are not counted"
    );
}

/// Rule 8: garbage, wrong shapes, other fleets, unsigned and forged messages are ignored
/// and counted, and change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_messages_are_ignored_and_counted() {
    let redis = server(&[]);
    let url = redis.url(None);
    let a = member(&url, "t8", 1);
    connected(&[&a]).await;
    let mut conn = redis_conn(&url).await;
    let channel = "tripgate:{t8}:events";
    let open = |generation| wire::Message {
        generation,
        kind: tripgate_core::FleetEventKind::Open,
        remaining_ms: 5_000,
        origin: 0x99,
    };
    let garbage: [&[u8]; 4] = [
        b"hello",
        b"tripgate1 t8 5 open",
        b"tripgate1 t8 x open 5000 0000000000000099 -",
        b"\xff\xfe not utf-8",
    ];
    for g in garbage {
        let _: () = conn.publish(channel, g).await.unwrap();
    }
    let other = signed("elsewhere", &open(5), KEY);
    let unsigned = wire::encode("t8", &open(6), None);
    let forged = signed("t8", &open(7), "not the fleet's key at all");
    for text in [&other, &unsigned, &forged] {
        let _: () = conn.publish(channel, text).await.unwrap();
    }
    eventually("all counted", || {
        let s = a.fleet.status();
        let counts = [
            Ignored::Garbage,
            Ignored::OtherFleet,
            Ignored::Unsigned,
            Ignored::Forged,
        ]
        .map(|why| s.ignored(why));
        counts == [4, 1, 1, 1]
    })
    .await;
    assert_eq!(a.breaker.state(), State::Closed);
    assert_eq!(a.breaker.fleet_status().generation, 0);
    // The same forged value in the keys is ignored too, and counted once.
    let _: () = conn.set("tripgate:{t8}:event", &forged).await.unwrap();
    eventually("forged key counted", || {
        a.fleet.status().ignored(Ignored::Forged) == 2
    })
    .await;
    let reconciles_later = Instant::now() + Duration::from_millis(350);
    while Instant::now() < reconciles_later {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(a.fleet.status().ignored(Ignored::Forged), 2);
    assert_eq!(a.breaker.state(), State::Closed);
}

/// Rule 8: a Redis ACL user in the URL; the wrong password never connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_user_in_the_url() {
    let redis = server(&[
        "--user",
        "default",
        "off",
        "--user",
        "fleet",
        "on",
        ">s3cret",
        "~tripgate:*",
        "&tripgate:*",
        "+@all",
    ]);
    let good = redis.url(Some("fleet:s3cret"));
    let (a, b) = (member(&good, "t8a", 1), member(&good, "t8a", 1));
    connected(&[&a, &b]).await;
    fail(&a, 3);
    eventually("open through ACL", || b.breaker.state() == State::Open).await;
    let wrong = member(&redis.url(Some("fleet:guess")), "t8a", 1);
    let later = Instant::now() + Duration::from_millis(300);
    while Instant::now() < later {
        assert!(!wrong.fleet.status().connected);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(wrong.fleet.status().degraded);
    assert_eq!(wrong.breaker.state(), State::Closed);
}

/// Both Rust breakers in one fleet: the component in wasmtime trips, the native breaker
/// follows, and back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_and_wasmtime_members_share_a_fleet() {
    let redis = server(&[]);
    let url = redis.url(None);
    let clock = Arc::new(FakeClock::new(SECOND));
    let runtime = tripgate_wasmtime::Runtime::new()
        .unwrap()
        .with_clock(clock.clone());
    let wasm = runtime.breaker(&config(1)).unwrap();
    let wasm_fleet = Store::connect(options(&url))
        .unwrap()
        .join("mixed", wasm.clone())
        .unwrap();
    let native = member(&url, "mixed", 1);
    eventually("wasm connected", || wasm_fleet.status().connected).await;
    connected(&[&native]).await;
    for _ in 0..3 {
        if let Ok(permit) = wasm.acquire().unwrap().decision {
            permit.record(tripgate_wasmtime::Outcome::Failure).unwrap();
        }
    }
    assert_eq!(wasm.state().unwrap(), State::Open);
    eventually("native opened", || native.breaker.state() == State::Open).await;
    assert_eq!(native.breaker.metrics().cooldown_remaining, COOLDOWN);
    // The native member trips next time; the component follows.
    clock.advance(COOLDOWN);
    native.clock.advance(COOLDOWN);
    // Each has a caller, turned away for the want of the lease: both ask.
    assert!(native.breaker.acquire().is_err());
    assert!(wasm.acquire().unwrap().decision.is_err());
    let held =
        || native.breaker.fleet_status().lease_held || wasm.fleet_status().unwrap().lease_held;
    eventually("a lease", held).await;
    if native.breaker.fleet_status().lease_held {
        native.breaker.acquire().unwrap().record(Outcome::Success);
    } else {
        let permit = wasm.acquire().unwrap().decision.unwrap();
        permit.record(tripgate_wasmtime::Outcome::Success).unwrap();
    }
    eventually("both closed", || {
        native.breaker.state() == State::Closed && wasm.state().unwrap() == State::Closed
    })
    .await;
}

/// Joining checks its inputs first and names what is wrong; a breaker joins once, and a
/// process has one member per fleet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_refuses_what_cannot_work() {
    let store = Store::connect(Options::new("redis://127.0.0.1:1")).unwrap();
    let plain = Arc::new(Breaker::new(Config::default()).unwrap());
    let e = store.join("x", Arc::clone(&plain)).unwrap_err();
    assert!(matches!(e, Error::NotInFleet), "{e}");
    let fleet = Arc::new(Breaker::new(config(1)).unwrap());
    let e = store.join("a b", Arc::clone(&fleet)).unwrap_err();
    assert!(e.to_string().starts_with("name "), "{e}");
    let e = Store::connect(Options::new("memcached://x")).unwrap_err();
    assert!(e.to_string().starts_with("url "), "{e}");
    let e = Store::connect(Options::new("redis://127.0.0.1:1/1")).unwrap_err();
    assert!(e.to_string().contains("database 0 only"), "{e}");

    let member = store.join("ok", Arc::clone(&fleet)).unwrap();
    let e = store.join("other", Arc::clone(&fleet)).unwrap_err();
    assert!(matches!(e, Error::AlreadyMember), "{e}");
    let elsewhere = Store::connect(Options::new("redis://127.0.0.1:2")).unwrap();
    let e = elsewhere.join("ok", Arc::clone(&fleet)).unwrap_err();
    assert!(matches!(e, Error::AlreadyMember), "{e}");
    let second = Arc::new(Breaker::new(config(1)).unwrap());
    let e = store.join("ok", Arc::clone(&second)).unwrap_err();
    assert!(matches!(e, Error::FleetTaken(_)), "{e}");
    // Left, the breaker may join again, and the fleet has room for another member.
    drop(member);
    let again = store.join("ok", Arc::clone(&second)).unwrap();
    let _elsewhere = elsewhere.join("ok", Arc::clone(&fleet)).unwrap();
    drop(again);

    let outside = std::thread::spawn(move || {
        Store::connect(Options::new("redis://127.0.0.1:1"))
            .map(|_| ())
            .unwrap_err()
            .to_string()
    });
    assert!(outside.join().unwrap().contains("tokio runtime"));
}
