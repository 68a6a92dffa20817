//! Fleet mode against uneven traffic and a hostile or broken store, on a real
//! redis-server: each test sets up one way a busy fleet or a broken or hostile store can
//! hurt its members (as an operator or an attacker with write access would meet it) and
//! checks what holds.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use redis::AsyncCommands;
use tripgate::{Breaker, Config, FakeClock, Outcome, RejectReason, State, SECOND};
use tripgate_core::FleetEventKind;
use tripgate_redis::wire::{self, Ignored, Message};
use tripgate_redis::{SharedKey, Store};

fn signed(name: &str, message: &Message, key: &str) -> String {
    wire::encode(name, message, Some(&SharedKey::new(key)))
}

fn open(generation: u64, remaining_ms: u64) -> Message {
    Message {
        generation,
        kind: FleetEventKind::Open,
        remaining_ms,
        origin: 0x0bad_c0de,
    }
}

/// Opens fleet `name` through `tripper` and waits until every member applied it.
async fn opened(tripper: &Member, members: &[&Member]) {
    fail(tripper, 3);
    for m in members {
        eventually("open applied", || m.breaker.state() == State::Open).await;
    }
}

async fn key_absent(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> bool {
    let n: u64 = conn.exists(key).await.unwrap();
    n == 0
}

/// Finding 1: with 1 busy and 9 idle members, an idle member held the lease in turn while
/// the busy one waited 2–23 s. The lease goes only to a member with a call to probe with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_members_never_hold_the_lease_a_busy_one_needs() {
    let redis = server(&[]);
    let url = redis.url(None);
    let members: Vec<Member> = (0..10).map(|_| member(&url, "idle", 1)).collect();
    connected(&members.iter().collect::<Vec<_>>()).await;
    let busy = &members[0];
    opened(busy, &members.iter().collect::<Vec<_>>()).await;
    for m in &members {
        m.clock.advance(m.breaker.metrics().cooldown_remaining);
    }
    // Idle members see no calls; the busy one's caller is turned away once, and asks.
    let asked = Instant::now();
    let rejection = busy.breaker.acquire().unwrap_err();
    assert_eq!(rejection.reason, RejectReason::ProbingElsewhere);
    eventually("the busy member holds the lease", || {
        busy.breaker.fleet_status().lease_held
    })
    .await;
    let waited = asked.elapsed();
    assert!(
        waited < Duration::from_secs(1),
        "a store round trip, not a probe timeout: {waited:?}"
    );
    for idle in &members[1..] {
        assert!(!idle.breaker.fleet_status().lease_held);
        assert!(!idle.fleet.status().lease_held);
    }
    busy.breaker.acquire().unwrap().record(Outcome::Success);
    for m in &members {
        eventually("the fleet closed", || m.breaker.state() == State::Closed).await;
    }
}

/// Finding 1, the holder's side: a holder whose probes stop coming (here after one of two
/// required successes) gives the lease back a third of the lease later, and one no probe
/// came to at all gives it back after a third of the lease, rather than renewing it
/// forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_goes_back_when_no_probe_is_out() {
    let redis = server(&[]);
    let url = redis.url(None);
    let mut conn = redis_conn(&url).await;
    let config = Config {
        half_open_required_successes: 2,
        probe_timeout: 900 * tripgate::MILLISECOND,
        ..config(1)
    };
    let a = member_with(options(&url), "giveback", config);
    let b = member_with(options(&url), "giveback", config);
    connected(&[&a, &b]).await;
    opened(&a, &[&a, &b]).await;
    a.clock.advance(COOLDOWN);
    b.clock.advance(COOLDOWN);
    assert!(a.breaker.acquire().is_err());
    eventually("A holds the lease", || a.breaker.fleet_status().lease_held).await;
    let lease = "tripgate:{giveback}:lease";
    assert!(!key_absent(&mut conn, lease).await);
    // One success of two: still half-open; no other probe comes, the lease goes back.
    a.breaker.acquire().unwrap().record(Outcome::Success);
    assert_eq!(a.breaker.state(), State::HalfOpen);
    eventually_async("the lease given back", || async {
        key_absent(&mut redis_conn(&url).await, lease).await
    })
    .await;
    assert!(!a.breaker.fleet_status().lease_held);

    // B asks, takes it, and then no call comes: after a third of the lease (300 ms), B
    // gives it back instead of renewing.
    assert!(b.breaker.acquire().is_err());
    eventually("B holds the lease", || b.breaker.fleet_status().lease_held).await;
    let taken = Instant::now();
    eventually_async("B gave the idle lease back", || async {
        key_absent(&mut redis_conn(&url).await, lease).await
    })
    .await;
    assert!(
        taken.elapsed() < Duration::from_millis(900),
        "given back before it ran out: {:?}",
        taken.elapsed()
    );
}

/// Finding 2: a holder frozen past its lease (SIGSTOP in the report; here its clock moved
/// past the lease) must not lead the fleet when it wakes: its probe's failure re-opens it
/// alone, and nothing is published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_lease_leads_nothing() {
    let redis = server(&[]);
    let url = redis.url(None);
    let mut conn = redis_conn(&url).await;
    let (a, b) = (member(&url, "frozen", 1), member(&url, "frozen", 1));
    connected(&[&a, &b]).await;
    opened(&a, &[&a, &b]).await;
    let gen = || async {
        let g: Option<u64> = redis_conn(&url)
            .await
            .get("tripgate:{frozen}:gen")
            .await
            .unwrap();
        g.unwrap_or(0)
    };
    let before = gen().await;
    a.clock.advance(COOLDOWN);
    b.clock.advance(COOLDOWN);
    assert!(a.breaker.acquire().is_err());
    eventually("A holds the lease", || a.breaker.fleet_status().lease_held).await;
    let probe = a.breaker.acquire().unwrap();
    // Frozen past the lease's end.
    a.clock.advance(config(1).probe_timeout + SECOND);
    probe.record(Outcome::Failure);
    assert_eq!(a.breaker.state(), State::Open);
    // Three reconciles later: nothing published, B untouched.
    let later = Instant::now() + Duration::from_millis(300);
    while Instant::now() < later {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(gen().await, before, "an expired lease published nothing");
    assert_eq!(b.breaker.state(), State::HalfOpen);
    let event: String = conn.get("tripgate:{frozen}:event").await.unwrap();
    assert!(event.contains(&format!(" {before} open ")), "{event}");
}

/// Finding 3: a captured signed open re-stored with a TTL of ten years opened every
/// joining member for ten years. An open lasts at most min(TTL, signed remaining, the
/// member's longest opening).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_open_lasts_no_longer_than_the_member_allows() {
    let redis = server(&[]);
    let url = redis.url(None);
    let mut conn = redis_conn(&url).await;
    let ten_years_ms: u64 = 10 * 365 * 24 * 3600 * 1000;
    let config = Config {
        max_cooldown: Some(60 * SECOND),
        ..config(1)
    };
    for (fleet, remaining_ms, most) in [
        ("replayed-long", ten_years_ms, 60 * SECOND),
        ("replayed-short", 5_000, 5 * SECOND),
    ] {
        let _: () = conn
            .set(format!("tripgate:{{{fleet}}}:gen"), 998)
            .await
            .unwrap();
        let line = signed(fleet, &open(998, remaining_ms), KEY);
        let _: () = conn
            .pset_ex(format!("tripgate:{{{fleet}}}:event"), line, ten_years_ms)
            .await
            .unwrap();
        let m = member_with(options(&url), fleet, config);
        eventually("the stored open applied", || {
            m.breaker.state() == State::Open
        })
        .await;
        let left = m.breaker.metrics().cooldown_remaining;
        assert!(left <= most, "{fleet}: open for {left} ns, at most {most}");
    }
}

/// Finding 4: a lease key without a TTL (or holding garbage, or of another type) blocked
/// every probe forever while members hammered the store. It is absent: the fleet probes
/// within one probe timeout, with a handful of commands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_lease_key_blocks_nothing() {
    let redis = server(&[]);
    let url = redis.url(None);
    let mut conn = redis_conn(&url).await;
    let config = Config {
        probe_timeout: SECOND,
        ..config(1)
    };
    let cases = [
        "garbage",
        "holder-no-ttl",
        "hash",
        "holder-ten-years",
        "waiters-of-another-type",
        "waiters-nobody-hears",
    ];
    for case in cases {
        let fleet = format!("lease-{case}");
        let lease = format!("tripgate:{{{fleet}}}:lease");
        let waiters = format!("tripgate:{{{fleet}}}:waiters");
        let (a, b) = (
            member_with(options(&url), &fleet, config),
            member_with(options(&url), &fleet, config),
        );
        connected(&[&a, &b]).await;
        opened(&a, &[&a, &b]).await;
        match case {
            "garbage" => conn.set::<_, _, ()>(&lease, "not a member").await.unwrap(),
            "holder-no-ttl" => conn
                .set::<_, _, ()>(&lease, "0123456789abcdef")
                .await
                .unwrap(),
            "hash" => conn.hset::<_, _, _, ()>(&lease, "a", "b").await.unwrap(),
            "waiters-of-another-type" => conn.set::<_, _, ()>(&waiters, "x").await.unwrap(),
            // Junk, and a member id no member listens for: the release skips both and
            // tells the whole fleet.
            "waiters-nobody-hears" => conn
                .zadd_multiple::<_, _, _, ()>(&waiters, &[(1, "junk"), (2, "0123456789abcdef")])
                .await
                .unwrap(),
            _ => conn
                .pset_ex::<_, _, ()>(&lease, "0123456789abcdef", 10 * 365 * 86_400_000)
                .await
                .unwrap(),
        }
        let commands_before = redis.commands_sent().unwrap();
        let started = Instant::now();
        a.clock.advance(COOLDOWN);
        b.clock.advance(COOLDOWN);
        assert!(a.breaker.acquire().is_err());
        eventually("A holds the lease", || a.breaker.fleet_status().lease_held).await;
        let took = started.elapsed();
        assert!(took <= Duration::from_millis(1_500), "{case}: {took:?}");
        a.breaker.acquire().unwrap().record(Outcome::Success);
        eventually("B closed", || b.breaker.state() == State::Closed).await;
        let commands = redis.commands_sent().unwrap() - commands_before;
        // Two members reading back every 100 ms; a take, a probe's close (a generation and
        // a publish), the lease given back, each script loaded once: dozens, not thousands.
        let reads = 2 * (started.elapsed().as_millis() as u64 / 100 + 2);
        assert!(
            commands <= reads + 30,
            "{case}: {commands} commands in {took:?}"
        );
    }
}

/// Finding 5: `abc`, `1.5`, 2^63-1, `-5` and 2^53-1 in the `gen` key stopped the fleet
/// opening (or were published as generations nobody applies) and sent the member into a
/// reconnect loop. The counter is counted, repaired, and never published past.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_generation_is_repaired_never_published_past() {
    let redis = server(&[]);
    let url = redis.url(None);
    let mut conn = redis_conn(&url).await;
    let bad = [
        "abc",
        "1.5",
        "9223372036854775807",
        "-5",
        "9007199254740991",
        "a hash",
    ];
    for (i, value) in bad.into_iter().enumerate() {
        let fleet = format!("gen-{i}");
        let gen = format!("tripgate:{{{fleet}}}:gen");
        if value == "a hash" {
            conn.hset::<_, _, _, ()>(&gen, "a", "b").await.unwrap();
        } else {
            conn.set::<_, _, ()>(&gen, value).await.unwrap();
        }
        let (a, b) = (member(&url, &fleet, 1), member(&url, &fleet, 1));
        connected(&[&a, &b]).await;
        fail(&a, 3);
        eventually("B opened by the fleet", || b.breaker.state() == State::Open).await;
        let stored: String = conn.get(&gen).await.unwrap();
        let n: u64 = stored.parse().unwrap_or(u64::MAX);
        assert!(n < 1 << 53, "{value:?} repaired to {stored:?}");
        let generation = b.breaker.fleet_status().generation;
        assert!(
            (1..1 << 53).contains(&generation),
            "{value:?}: {generation}"
        );
        // Whichever member read the counter first counted and repaired it.
        let (sa, sb) = (a.fleet.status(), b.fleet.status());
        let noticed =
            |s: &tripgate_redis::Status| s.ignored(Ignored::MalformedGeneration) + s.counts.repairs;
        assert!(noticed(&sa) + noticed(&sb) >= 1, "{value:?}: {sa:?} {sb:?}");
        let status = sa;
        // Refused commands are no outage: one session all along.
        assert_eq!(status.connects, 1, "{value:?}: {status:?}");
    }
}

/// Finding 5's loop: a store that answers and then fails every session (here an ACL user
/// allowed to connect and subscribe, but not to run scripts) is retried ever more slowly,
/// not ~90 times a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_store_is_retried_with_a_growing_backoff() {
    let redis = server(&[
        "--user", "default", "off", "--user", "app", "on", ">pw", "~*", "&*", "+@all", "-evalsha",
        "-eval",
    ]);
    let url = redis.url(Some("app:pw"));
    let m = member_with(
        options(&url).max_backoff(Duration::from_secs(1)),
        "refused",
        config(1),
    );
    let watched = Instant::now() + Duration::from_secs(2);
    while Instant::now() < watched {
        assert!(!m.fleet.status().connected);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = m.fleet.status();
    // 10 ms, doubling to 1 s (jittered): about 8 sessions in 2 s.
    assert!(
        (2..=12).contains(&status.connects),
        "{} sessions in 2 s",
        status.connects
    );
    assert!(m.fleet.store().last_error().is_some());
    assert_eq!(m.breaker.state(), State::Closed);
}

/// Finding 6: a forged vote, a vote of a made-up member, a votes key of the wrong type,
/// and a member restarting with a fresh id each let one broken member open a Q = 2 fleet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn votes_cannot_be_forged_or_doubled() {
    let redis = server(&[]);
    let url = redis.url(None);
    let mut conn = redis_conn(&url).await;
    let votes = "tripgate:{votes}:votes";
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    // A votes key of the wrong type first: the first vote replaces it.
    conn.set::<_, _, ()>(votes, "not a set").await.unwrap();
    let restarting = options(&url).member("pod-a");
    let a = member_with(restarting.clone(), "votes", config(2));
    let b = member(&url, "votes", 2);
    connected(&[&a, &b]).await;
    fail(&a, 3);
    eventually_async("A's vote stored", || async {
        let n: u64 = redis_conn(&url).await.zcard(votes).await.unwrap_or(0);
        n == 1
    })
    .await;
    // Made-up votes: unsigned, signed with another key, a member id alone.
    let fake = "00000000deadbeef";
    let forged = wire::vote_entry("votes", 0xdead_beef, 0, Some(&SharedKey::new("guess")));
    for entry in [format!("{fake} 0 -"), forged, fake.to_string()] {
        conn.zadd::<_, _, _, ()>(votes, entry, now_ms())
            .await
            .unwrap();
    }
    // A restarts (a new process, the same member name) and trips again.
    drop(a);
    let a = member_with(restarting, "votes", config(2));
    connected(&[&a]).await;
    fail(&a, 3);
    let later = Instant::now() + Duration::from_millis(300);
    while Instant::now() < later {
        assert_eq!(b.breaker.state(), State::Closed, "one member is no quorum");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let gen: Option<u64> = conn.get("tripgate:{votes}:gen").await.unwrap();
    assert_eq!(gen, None, "nothing published below quorum");
    assert!(
        a.fleet.status().ignored(Ignored::Forged) + a.fleet.status().ignored(Ignored::Unsigned)
            >= 1
    );
    // A second member does make the quorum.
    fail(&b, 3);
    eventually("the fleet opened", || {
        a.breaker.fleet_status().generation >= 1 && b.breaker.fleet_status().generation >= 1
    })
    .await;
}

/// Finding 7: a 10 MiB message of spaces cost +174 MiB per member, and a 30 MiB stored
/// event 62 % of a core, re-decoded at every reconcile. A line is bounded before it is
/// split, and the store never sends an oversized stored value back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_messages_and_values_are_dropped_unread() {
    let redis = server(&["--proto-max-bulk-len", "64mb"]);
    let url = redis.url(None);
    let mut conn = redis_conn(&url).await;
    let a = member(&url, "huge", 1);
    connected(&[&a]).await;
    let spaces = vec![b' '; 10 << 20];
    let _: () = conn
        .publish("tripgate:{huge}:events", &spaces)
        .await
        .unwrap();
    eventually("counted as garbage", || {
        a.fleet.status().ignored(Ignored::Garbage) == 1
    })
    .await;
    let stored = vec![b'x'; 30 << 20];
    conn.set::<_, _, ()>("tripgate:{huge}:event", &stored)
        .await
        .unwrap();
    eventually("the stored value counted once", || {
        a.fleet.status().ignored(Ignored::Garbage) == 2
    })
    .await;
    let sent = || async {
        let info: String = redis::cmd("INFO")
            .arg("stats")
            .query_async(&mut redis_conn(&url).await)
            .await
            .unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("total_net_output_bytes:"))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .unwrap()
    };
    let before = sent().await;
    let reconciles = a.fleet.status().counts.reconciles;
    eventually("five reconciles", || {
        a.fleet.status().counts.reconciles >= reconciles + 5
    })
    .await;
    let out = sent().await - before;
    assert!(
        out < 64 << 10,
        "{out} bytes sent for five reads of a 30 MiB value"
    );
    assert_eq!(a.fleet.status().ignored(Ignored::Garbage), 2);
    assert_eq!(a.breaker.state(), State::Closed);
}

/// Finding 9: one member probing and the rest waiting made 24,389 `SET NX`/s; every
/// breaker cost two connections. A waiting member asks once per holder's lease, an idle
/// one reads back at its reconcile rate, and a process's fleets share one connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_members_and_many_fleets_cost_little() {
    let redis = server(&[]);
    let url = redis.url(None);
    let members: Vec<Member> = (0..10).map(|_| member(&url, "waiting", 1)).collect();
    connected(&members.iter().collect::<Vec<_>>()).await;
    opened(&members[0], &members.iter().collect::<Vec<_>>()).await;
    let holder = probe_round(&members).await;
    let probe = members[holder].breaker.acquire().unwrap();
    // Every waiting member keeps turning callers away; the holder keeps its probe out.
    let before = redis.commands_sent().unwrap();
    let window = Instant::now();
    while window.elapsed() < Duration::from_millis(500) {
        for m in &members {
            let _ = m.breaker.acquire();
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let commands = redis.commands_sent().unwrap() - before;
    let reads = 10 * (window.elapsed().as_millis() as u64 / 100 + 1);
    assert!(
        commands <= reads + 10,
        "{commands} commands in {:?}",
        window.elapsed()
    );

    drop(probe);

    // One process, fifty fleets: one connection.
    let clients_before = redis.connected_clients().unwrap();
    let store = Store::connect(options(&url)).unwrap();
    let breakers: Vec<_> = (0..50)
        .map(|_| {
            Arc::new(Breaker::with_clock(config(1), Arc::new(FakeClock::new(SECOND))).unwrap())
        })
        .collect();
    let fleets: Vec<_> = breakers
        .iter()
        .enumerate()
        .map(|(i, b)| store.join(&format!("many-{i}"), Arc::clone(b)).unwrap())
        .collect();
    for fleet in &fleets {
        eventually("connected", || fleet.status().connected).await;
    }
    assert_eq!(redis.connected_clients().unwrap(), clients_before + 1);
}

/// The registry joins all its fleet-mode breakers at once, each under its name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_joins_its_fleet_breakers() {
    let redis = server(&[]);
    let url = redis.url(None);
    let registry: tripgate::Registry =
        tripgate::Registry::new(tripgate::CoarseClock::new(), config(1));
    registry.get("payments").unwrap();
    registry.get("identity").unwrap();
    registry.get_or_create("local", &Config::default()).unwrap();
    let store = Store::connect(options(&url)).unwrap();
    let fleets = store.join_registry(&registry).unwrap();
    let mut names: Vec<&str> = fleets.iter().map(|f| f.name()).collect();
    names.sort_unstable();
    assert_eq!(names, ["identity", "payments"]);
    for fleet in &fleets {
        eventually("connected", || fleet.status().connected).await;
    }
}
