//! Fleet mode on a real Redis Cluster of three masters (started here): keys share their
//! fleet's slot through the hash tag, events go over sharded pub/sub (`SPUBLISH` /
//! `SSUBSCRIBE`), and the master serving the fleet's slot is killed mid-run.

mod common;

use std::time::Duration;

use common::*;
use tripgate::{Outcome, State};
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
