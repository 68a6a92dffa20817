//! Fleet mode on a real Redis Cluster of three masters (started here): keys share their
//! fleet's slot through the hash tag, events go over sharded pub/sub (`SPUBLISH` /
//! `SSUBSCRIBE`), and the master serving the fleet's slot is killed mid-run, once inside
//! a recovery.

mod common;

use std::time::{Duration, Instant};

use common::*;
use tripgate::{Config, Outcome, State, MILLISECOND, SECOND};
use tripgate_redis::server::RedisCluster;
use tripgate_redis::Options;

fn cluster_options(cluster: &RedisCluster, member: usize) -> Options {
    Options::cluster(cluster.urls())
        .key(KEY)
        .member(format!("cluster-member-{member}"))
        .reconcile_interval(Duration::from_millis(100))
        .store_timeout(Duration::from_millis(300))
        .max_backoff(Duration::from_millis(100))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_on_a_cluster_survives_its_master() {
    let mut cluster = RedisCluster::start(3).unwrap_or_else(|e| panic!("{e}"));
    let name = "checkout";
    let members: Vec<Member> = (0..3)
        .map(|i| member_with(cluster_options(&cluster, i), name, config(1)))
        .collect();
    connected(&members.iter().collect::<Vec<_>>()).await;

    // A trip opens the fleet over sharded pub/sub; a probe round closes it.
    fail(&members[0], 3);
    for m in &members {
        eventually("open", || m.breaker.state() == State::Open).await;
    }
    graduate(&members).await;

    // The master serving the fleet's slot dies: members degrade and decide alone.
    let owner = cluster.node_of(name).unwrap();
    cluster.nodes[owner].kill();
    for m in &members {
        eventually("degraded", || m.fleet.status().degraded).await;
    }
    fail(&members[1], 3);
    assert_eq!(members[1].breaker.state(), State::Open);
    assert_eq!(members[2].breaker.state(), State::Closed);
    members[2]
        .breaker
        .acquire()
        .unwrap()
        .record(Outcome::Success);

    // Back (with its slots): members reconnect, read back, and the trip goes out.
    cluster.nodes[owner].restart().unwrap();
    cluster.wait_ok().unwrap();
    for m in &members {
        eventually("reconnected", || m.fleet.status().connected).await;
    }
    eventually("the trip reached the fleet", || {
        members[2].breaker.state() == State::Open
    })
    .await;
}

/// The master serving the fleet's slot dies and comes back empty just before the fleet's
/// opening ends, so the recovery starts while the slot is down (CLUSTERDOWN, or no
/// answer): at most K probes reach the upstream at once through the outage and after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_inside_a_recovery_lets_in_at_most_k_probes() {
    const K: usize = 2;
    let mut cluster = RedisCluster::start(3).unwrap_or_else(|e| panic!("{e}"));
    let name = "failover";
    let config = Config {
        half_open_max_probes: K as u8,
        half_open_required_successes: 2,
        // The store's lease and the wait after its loss run on real time: short.
        probe_timeout: 2 * SECOND,
        ..config(1)
    };
    let members: Vec<Member> = (0..4)
        .map(|i| member_with(cluster_options(&cluster, 10 + i), name, config))
        .collect();
    connected(&members.iter().collect::<Vec<_>>()).await;
    fail(&members[0], 3);
    for m in &members {
        eventually("open", || m.breaker.state() == State::Open).await;
        let left = m.breaker.metrics().cooldown_remaining;
        m.clock.advance(left - 500 * MILLISECOND);
    }

    let owner = cluster.node_of(name).unwrap();
    cluster.nodes[owner].kill();
    for m in &members {
        eventually("degraded", || m.fleet.status().degraded).await;
    }
    cluster.nodes[owner].restart().unwrap();
    // The opening ends while the slot is down: every member's callers ask.
    let mut admitted = Vec::new();
    for m in &members {
        m.clock.advance(500 * MILLISECOND);
        assert_eq!(m.breaker.state(), State::HalfOpen);
        admitted.extend((0..3).filter_map(|_| m.breaker.acquire().ok()));
    }
    assert!(
        admitted.len() <= K,
        "{} probes admitted while the slot was down",
        admitted.len()
    );

    // Back: one member's lease, once the lost state's last lease has run out, admits the
    // round's K probes; their successes close the fleet.
    cluster.wait_ok().unwrap();
    for m in &members {
        eventually("reconnected", || m.fleet.status().connected).await;
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while admitted.len() < K {
        assert!(
            Instant::now() < deadline,
            "no probe round after the failover"
        );
        for m in &members {
            admitted.extend(m.breaker.acquire().ok());
        }
        let out: usize = members
            .iter()
            .map(|m| usize::from(m.breaker.metrics().probes_out))
            .sum();
        assert!(out <= K, "{out} probes out at once after the failover");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for probe in admitted {
        assert!(probe.is_probe());
        probe.record(Outcome::Success);
    }
    for m in &members {
        eventually("closed", || m.breaker.state() == State::Closed).await;
    }
}
