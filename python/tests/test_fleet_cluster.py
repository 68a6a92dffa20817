"""Fleet mode through redis-py on a real three-master Redis Cluster (rediscluster.py): a
fleet's keys and channels share its name's slot, its events go over sharded pub/sub
(SSUBSCRIBE, SPUBLISH in publish.lua and release.lua) on that slot's master, fleets of other
names land on other masters, and the fleet's master killed leaves its members deciding
alone at once, until it is back."""

import pytest

redis = pytest.importorskip("redis")

import tripgate  # noqa: E402
from tripgate.fleet import FleetStore  # noqa: E402

from fleetmembers import KEY, Member, config, probe_round, settled  # noqa: E402
from redisserver import eventually  # noqa: E402
from rediscluster import RedisCluster  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = RedisCluster(tmp_path_factory.mktemp("cluster"))
    yield c
    c.stop()


@pytest.fixture
def on(cluster):
    """Members on the cluster: ``on(fleet, **store_options)``."""
    made = []

    def make(fleet, **store):
        m = Member(None, fleet, store={"nodes": cluster.urls, **store})
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()


def connected(*ms):
    for m in ms:
        assert m.fleet.ready(10.0), f"member not connected: {m.fleet.status()} {m.store.last_error}"


def test_a_trip_opens_the_fleet_and_its_round_closes_it_over_sharded_pub_sub(cluster, on):
    ms = [on("c-trip") for _ in range(3)]
    connected(*ms)
    channel = "tripgate:{c-trip}:events"
    node = cluster.node_of(channel).client()
    # Each member's channel is a shard channel of the fleet's slot, not a global one.
    assert node.execute_command("PUBSUB", "SHARDNUMSUB", channel) == [channel.encode(), 3]
    assert node.execute_command("PUBSUB", "NUMSUB", channel) == [channel.encode(), 0]
    ms[0].fail()
    for m in ms[1:]:
        eventually("fleet-open", lambda: m.breaker.state == "open")
        assert m.last_reason() == "fleet-open"
    assert b" 1 open " in node.get("tripgate:{c-trip}:event")
    settled(*ms)
    holder = probe_round(ms)
    probe = ms[holder].breaker.acquire()
    assert probe and probe.probe
    probe.record("success")
    for m in ms:
        eventually("closed", lambda: m.breaker.state == "closed")
    eventually("the lease given back", lambda: not node.exists("tripgate:{c-trip}:lease"))


def test_one_store_serves_fleets_on_every_master(cluster, on):
    names, masters = [], set()
    i = 0
    while len(masters) < 3 or len(names) < 6:
        name = f"c-spread-{i}"
        names.append(name)
        masters.add(cluster.node_of(f"tripgate:{{{name}}}:gen").port)
        i += 1
    stores = [FleetStore.connect(nodes=cluster.urls, key=KEY, reconcile_interval=0.1) for _ in range(2)]
    try:
        pairs = []
        for name in names:
            a, b = (tripgate.CircuitBreaker(clock=tripgate.FakeClock(1.0), name=name, **config(1)) for _ in range(2))
            fleets = (stores[0].join(name, a), stores[1].join(name, b))
            pairs.append((a, b, fleets))
        for _, _, fleets in pairs:
            for fleet in fleets:
                assert fleet.ready(10.0), fleet.status()
        for a, _, _ in pairs:
            for _ in range(3):
                permit = a.acquire()
                if permit:
                    permit.record("status:503")
        for _, b, _ in pairs:
            eventually("every fleet open, on every master", lambda: b.state == "open")
    finally:
        for store in stores:
            store.close()


def test_the_fleet_s_master_killed_members_are_degraded_at_once_and_follow_it_again(cluster, on):
    # A read-back once a minute and no calls: only the broken connection can tell.
    a, b = on("c-killed", reconcile_interval=60.0), on("c-killed", reconcile_interval=60.0)
    connected(a, b)
    a.fail()
    settled(a, b)
    node = cluster.node_of("tripgate:{c-killed}:gen")
    node.kill()
    for m in (a, b):
        eventually("degraded", lambda: m.fleet.status().degraded, timeout=2.0)
    # Calls go on, deciding locally.
    for _ in range(100):
        for m in (a, b):
            permit = m.breaker.acquire()
            if permit:
                permit.record("success")
    node.restart()
    cluster.wait_ok()
    for m in (a, b):
        eventually("back", lambda: m.fleet.status().connected, timeout=20.0)
    # Restarted empty: the counter is repaired to the members' generation.
    eventually("the counter repaired", lambda: node.client().get("tripgate:{c-killed}:gen") == b"1", timeout=5.0)


@pytest.fixture(scope="module")
def replicated(tmp_path_factory):
    c = RedisCluster(tmp_path_factory.mktemp("replicated"), replicas=1)
    yield c
    c.stop()


def test_members_follow_their_fleet_to_the_replica_promoted_in_a_failover(replicated):
    # A read-back once a minute: only the fleet's channel can tell the members in time.
    ms = [Member(None, "c-failover", store={"nodes": replicated.urls, "reconcile_interval": 60.0}) for _ in range(3)]
    try:
        connected(*ms)
        promoted = replicated.fail_over("tripgate:{c-failover}:events")
        channel = "tripgate:{c-failover}:events"
        # The old master gave the slot up (telling its subscribers with SUNSUBSCRIBE):
        # each member subscribes again, on the promoted one.
        eventually(
            "every member subscribed on the promoted master",
            lambda: promoted.client().execute_command("PUBSUB", "SHARDNUMSUB", channel) == [channel.encode(), 3],
            timeout=5.0,
            detail=lambda: [(n.port, n.client().execute_command("PUBSUB", "SHARDNUMSUB", channel)) for n in replicated.nodes],
        )
        connected(*ms)
        ms[0].fail()
        for m in ms[1:]:
            eventually("fleet-open after the failover", lambda: m.breaker.state == "open", timeout=5.0)
            assert m.last_reason() == "fleet-open"
        settled(*ms)
        holder = probe_round(ms)
        ms[holder].breaker.acquire().record("success")
        for m in ms:
            eventually("closed", lambda: m.breaker.state == "closed", timeout=5.0)
    finally:
        for m in ms:
            m.close()
