"""Fleet mode through redis-py on a real redis-server started here: FLEET.md's rules with
Python members (fleetmembers.py): one trip opens the fleet, one probe round fleet-wide, the
quorum, a killed or hung store, propagation, and what members cost."""

import statistics
import time

import pytest

redis = pytest.importorskip("redis")

import tripgate  # noqa: E402
from tripgate.fleet import FleetStore  # noqa: E402

# `server` and `members` are fixtures.
from fleetmembers import COOLDOWN, config, connected, members, probe_round, server, settled  # noqa: E402,F401
from redisserver import RedisServer, eventually  # noqa: E402

def test_one_trip_opens_the_fleet_with_the_same_remaining_cooldown(server, members):
    a, b, c = (members(server.url, "t2") for _ in range(3))
    connected(a, b, c)
    a.fail()
    assert a.breaker.state == "open"
    for m in (b, c):
        eventually("fleet-open", lambda: m.breaker.state == "open")
        assert m.last_reason() == "fleet-open"
        # Breaker time stands still, so the trip's whole cooldown is what is left.
        assert m.breaker.metrics()["cooldown_remaining_ns"] == int(COOLDOWN * 1e9)
        assert m.breaker.metrics()["faults_total"] == 0
    pttl = server.client().pttl("tripgate:{t2}:event")
    assert 0 < pttl <= 10_000
    # A late joiner reconciles from the keys: what the store says is left.
    d = members(server.url, "t2")
    connected(d)
    eventually("late joiner open", lambda: d.breaker.state == "open")
    left = d.breaker.metrics()["cooldown_remaining"]
    assert COOLDOWN - 2 < left <= COOLDOWN
    assert a.fleet.status().counts["published"] == 1

def test_one_probe_round_fleet_wide(server, members):
    ms = [members(server.url, "t3") for _ in range(3)]
    connected(*ms)
    ms[0].fail()
    settled(*ms)
    for m in ms:
        assert m.breaker.state == "open"
    holder = probe_round(ms)
    probe = ms[holder].breaker.acquire()
    assert probe and probe.probe
    probe.record("success")
    for m in ms:
        eventually("closed", lambda: m.breaker.state == "closed")
        if m is not ms[holder]:
            assert m.last_reason() == "fleet-close"
        assert m.breaker.metrics()["calls"] == 0, "a fleet close empties the window"
    eventually("the lease given back", lambda: not server.client().exists("tripgate:{t3}:lease"))
    # Again, and the probe fails: the fleet re-opens, with the backed-off cooldown.
    ms[1].fail()
    settled(*ms, generation=3)
    for m in ms:
        assert m.breaker.state == "open"
    holder = probe_round(ms)
    ms[holder].breaker.acquire().record("status:503")
    for m in ms:
        eventually("re-opened", lambda: m.breaker.state == "open" and m.breaker.fleet_status()["generation"] >= 4)
        assert m.breaker.state == "open"

def test_quorum_of_two_keeps_one_broken_path_local(server, members):
    a, b, c = (members(server.url, "q2", quorum=2) for _ in range(3))
    connected(a, b, c)
    a.fail()
    assert a.breaker.state == "open"
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        assert b.breaker.state == "closed" and c.breaker.state == "closed", "one member is no quorum"
        time.sleep(0.01)
    b.fail()
    eventually("the fleet opened", lambda: c.breaker.state == "open")
    assert c.last_reason() == "fleet-open"

def test_a_reconfigured_member_votes_and_leases_by_its_new_settings(server, members):
    # Joined with a 10 s cooldown and a 30 s probe timeout, then reconfigured live: the
    # store's vote window and lease follow, with no leave and no rejoin.
    a, b = (members(server.url, "retuned", quorum=2) for _ in range(2))
    connected(a, b)
    for m in (a, b):
        m.breaker.reconfigure(**config(2, cooldown=40.0, probe_timeout=50.0))
    client = server.client()
    votes, lease = "tripgate:{retuned}:votes", "tripgate:{retuned}:lease"
    a.fail()
    assert a.breaker.state == "open"
    eventually("a's vote in the store", lambda: client.zcard(votes) == 1)
    # The votes' window is the new cooldown (it was 10 s).
    assert 30_000 < client.pttl(votes) <= 40_000
    b.fail()
    settled(a, b)
    for m in (a, b):
        assert m.breaker.state == "open"
        assert 30 * 10**9 < m.breaker.metrics()["cooldown_remaining_ns"] <= 40 * 10**9
    holder = probe_round([a, b])
    # The lease (`<holder> <until>`, the store's ms) lasts the new probe timeout (it was 30 s).
    until = int(client.get(lease).split()[1])
    seconds, micros = client.time()
    assert 45_000 < until - (seconds * 1000 + micros // 1000) <= 50_000
    [a, b][holder].breaker.acquire().record("success")
    for m in (a, b):
        eventually("closed", lambda: m.breaker.state == "closed")


def test_redis_killed_then_back_empty(server, members):
    a, b = members(server.url, "t7"), members(server.url, "t7")
    connected(a, b)
    a.fail()
    settled(a, b)
    holder = probe_round([a, b])
    [a, b][holder].breaker.acquire().record("success")
    settled(a, b, generation=2)
    seen = b.breaker.fleet_status()["generation"]

    server.kill()
    for m in (a, b):
        eventually("degraded", lambda: m.fleet.status().degraded)
        assert m.breaker.fleet_status()["degraded"]
    # No call waits on the store.
    slowest = 0.0
    for _ in range(10_000):
        t = time.perf_counter()
        b.breaker.acquire().record("success")
        slowest = max(slowest, time.perf_counter() - t)
    assert slowest < 0.05, f"a call took {slowest * 1e3:.1f} ms"
    # A trips alone and, after its cooldown, probes on its own (no lease to be had).
    a.fail()
    assert a.breaker.state == "open" and b.breaker.state == "closed"
    a.clock.advance(COOLDOWN)
    probe = a.breaker.acquire()
    assert probe and probe.probe
    probe.record("status:503")
    assert a.breaker.state == "open"
    # Back, empty: A's re-open is still its news, published above what the fleet saw.
    server.restart()
    for m in (a, b):
        eventually("reconnected and read back", lambda: m.fleet.status().connects >= 2 and m.fleet.status().connected)
    eventually("B opened after resync", lambda: b.breaker.state == "open")
    assert b.breaker.fleet_status()["generation"] > seen
    assert a.store.last_error is not None

def test_a_hung_store_degrades_within_store_timeout(server, members):
    a = members(server.url, "t7b")
    connected(a)
    server.pause(True)
    try:
        t = time.monotonic()
        eventually("degraded", lambda: a.fleet.status().degraded)
        took = time.monotonic() - t
        slowest = 0.0
        for _ in range(1_000):
            s = time.perf_counter()
            a.breaker.acquire().record("success")
            slowest = max(slowest, time.perf_counter() - s)
    finally:
        server.pause(False)
    assert took < 2.0, f"degraded after {took:.2f} s"
    assert slowest < 0.05
    eventually("back", lambda: a.fleet.status().connected)

def test_a_trip_the_store_missed_is_published_once_it_is_back(server, members):
    a, b = members(server.url, "t7c"), members(server.url, "t7c")
    connected(a, b)
    server.pause(True)
    try:
        a.fail()
        assert a.breaker.state == "open"
        eventually("A degraded", lambda: a.fleet.status().degraded)
        assert b.breaker.state == "closed"
    finally:
        server.pause(False)
    eventually("B opened by A's trip", lambda: b.breaker.state == "open")
    assert b.last_reason() == "fleet-open"


def test_a_raising_listener_never_breaks_the_member(server, members):
    a, b = members(server.url, "lst"), members(server.url, "lst")
    b.breaker.on_transition(lambda t: 1 / 0)
    connected(a, b)
    a.fail()
    settled(a, b)
    assert b.breaker.state == "open"
    assert b.breaker.metrics()["listener_errors"] >= 1
    holder = probe_round([a, b])
    [a, b][holder].breaker.acquire().record("success")
    eventually("B closed", lambda: b.breaker.state == "closed")
    assert b.fleet.status().connected

def test_an_idle_member_and_a_process_s_fleets_cost_little(server, members):
    """FLEET.md § 14: no polling. An idle member reads back once per reconcile interval;
    a store's fifty fleets share one command and one pub/sub connection, and its thread
    sleeps between their reads."""
    clients_before = server.client().info("clients")["connected_clients"]
    m = members(server.url, "idle0", store={"reconcile_interval": 1.0})
    extra = []
    for i in range(1, 50):
        breaker = tripgate.CircuitBreaker(clock=tripgate.FakeClock(), **config(1))
        extra.append(m.store.join(f"idle{i}", breaker))
    for f in [m.fleet, *extra]:
        assert f.ready(5.0)
    clients = server.client().info("clients")["connected_clients"] - clients_before
    assert clients == 2, f"{clients} connections for fifty fleets"
    before, t, cpu = server.commands_sent(), time.monotonic(), time.process_time()
    time.sleep(3.0)
    elapsed = time.monotonic() - t
    per_second = (server.commands_sent() - before) / elapsed / 50
    busy = (time.process_time() - cpu) / elapsed
    print(f"\nidle fleets: {per_second:.2f} commands/s per fleet (reconcile_interval 1 s), {busy * 100:.1f} % of a core for 50 fleets")
    assert per_second <= 1.5
    assert busy < 0.25

def test_propagation_between_python_members(server, members):
    """How long an open and a close take to reach another member (each member its own
    store, thread and connections, in one process)."""
    a, b = members(server.url, "prop"), members(server.url, "prop")
    connected(a, b)
    opens, closes = [], []
    for _ in range(20):
        t = time.perf_counter()
        a.fail()
        eventually("open", lambda: b.breaker.state == "open")
        opens.append(time.perf_counter() - t)
        settled(a, b, generation=b.breaker.fleet_status()["generation"])
        for m in (a, b):
            m.clock.advance_ns(m.breaker.metrics()["cooldown_remaining_ns"])
        assert a.breaker.acquire().reason == "probing-elsewhere"
        eventually("lease", lambda: a.breaker.fleet_status()["lease_held"])
        t = time.perf_counter()
        a.breaker.acquire().record("success")
        eventually("close", lambda: b.breaker.state == "closed")
        closes.append(time.perf_counter() - t)
        # The holder closes before its own close comes back: a trip before then would be
        # superseded by it (the trip's vote belongs to the generation before).
        settled(a, b, generation=b.breaker.fleet_status()["generation"])
        eventually("lease back", lambda: not a.fleet.status().lease_held)
    q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))] * 1e3  # noqa: E731
    print(
        f"\npropagation Python -> Python: open p50 {statistics.median(opens) * 1e3:.2f} ms "
        f"p99 {q(opens, 0.99):.2f} ms; close p50 {statistics.median(closes) * 1e3:.2f} ms p99 {q(closes, 0.99):.2f} ms"
    )
    assert q(opens, 0.99) <= 50 and q(closes, 0.99) <= 50

def test_the_call_path_costs_what_it_costs_without_fleet_mode(server, members):
    """FLEET.md § 1: acquire and record stay local decisions; a member's breaker costs
    what a lone one does (each figure the best of five timings of 20,000 pairs)."""
    m = members(server.url, "cost")
    connected(m)
    lone = tripgate.CircuitBreaker(clock=tripgate.FakeClock(1.0), **config(1))

    def best(breaker):
        timings = []
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(20_000):
                breaker.acquire().record("success")
            timings.append((time.perf_counter() - t) / 20_000)
        return min(timings)

    alone, member = best(lone), best(m.breaker)
    print(f"\nacquire+record: {alone * 1e9:.0f} ns alone, {member * 1e9:.0f} ns as a fleet member")
    assert member < 3 * alone + 1e-6
    assert m.fleet.status().counts["published"] == 0

def test_without_redis_py_the_error_says_what_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(ImportError, match=r"pip install 'tripgate\[redis\]'"):
        FleetStore.connect("redis://127.0.0.1:1")

def test_waiting_members_and_many_fleets_cost_little(server, members):
    """A waiting member asks once per holder's lease and an idle one reads back at its
    reconcile rate, however often its callers are turned away."""
    ms = [members(server.url, "waiting") for _ in range(5)]
    connected(*ms)
    ms[0].fail()
    settled(*ms)
    holder = probe_round(ms)
    probe = ms[holder].breaker.acquire()
    assert probe
    before, window = server.commands_sent(), time.monotonic()
    while time.monotonic() - window < 0.5:
        for m in ms:
            m.breaker.acquire()
        time.sleep(0.001)
    commands = server.commands_sent() - before
    reads = 5 * int((time.monotonic() - window) / 0.1 + 1)
    assert commands <= reads + 10, f"{commands} commands in {time.monotonic() - window:.2f} s"
    probe.cancel()

def test_a_failing_store_is_retried_with_a_growing_backoff(members):
    """A store that answers and then fails every session (an ACL user allowed to connect
    and subscribe, not to run scripts) is retried ever more slowly, not in a loop."""
    server = RedisServer("--user", "default", "off", "--user", "app", "on", ">pw", "~*", "&*", "+@all", "-evalsha", "-eval")
    try:
        m = members(f"redis://app:pw@127.0.0.1:{server.port}", "refused", store={"max_backoff": 1.0})
        watched = time.monotonic() + 2
        while time.monotonic() < watched:
            assert not m.fleet.status().connected
            time.sleep(0.02)
        status = m.fleet.status()
        # 10 ms, doubling to 1 s (jittered): about 8 sessions in 2 s.
        assert 2 <= status.connects <= 12, f"{status.connects} sessions in 2 s"
        assert "denies this member's user read.lua" in m.store.last_error
        assert "'evalsha'" in m.store.last_error
        assert m.breaker.state == "closed"
    finally:
        server.kill()

def test_a_registry_joins_its_fleet_breakers(server, members):
    m = members(server.url, "reg-own")
    registry = tripgate.Registry(clock=tripgate.FakeClock(1.0))
    registry.get("reg-a", **config(1))
    registry.get("reg-b", **config(1))
    registry.get("reg-local", failure_threshold=3)
    fleets = m.store.join_registry(registry)
    assert sorted(f.name for f in fleets) == ["reg-a", "reg-b"]
    for f in fleets:
        assert f.ready(5.0)
    assert registry["reg-local"].fleet_status()["enabled"] is False


def test_a_registry_joins_all_of_its_fleet_breakers_or_none(server, members):
    m = members(server.url, "reg-all-own")
    registry = tripgate.Registry(clock=tripgate.FakeClock(1.0))
    good = [registry.get(name, **config(1)) for name in ("reg-all-a", "reg-all-b")]
    registry.get("reg all bad", **config(1))
    with pytest.raises(ValueError) as caught:
        m.store.join_registry(registry)
    assert caught.value.option == "name" and "reg all bad" in str(caught.value)
    # None joined: each may still join, here or anywhere.
    for breaker in good:
        assert m.store.join(breaker.name, breaker).ready(5.0)
    # A breaker that is a member already: the ones before it are left again.
    other = tripgate.Registry(clock=tripgate.FakeClock(1.0))
    fresh = other.get("reg-all-c", **config(1))
    taken = other.get("reg-all-d", **config(1))
    members(server.url, "reg-all-elsewhere").store.join("reg-all-d", taken)
    with pytest.raises(ValueError) as caught:
        m.store.join_registry(other)
    assert caught.value.option == "breaker"
    assert m.store.join("reg-all-c", fresh).ready(5.0)


def test_a_store_started_before_redis_joins_when_it_comes(server, members):
    server.kill()
    a = members(server.url, "late")
    assert not a.fleet.ready(0.2)
    a.fail()
    assert a.breaker.state == "open", "alone, the breaker decides"
    server.restart()
    assert a.fleet.ready(5.0)
    b = members(server.url, "late")
    connected(b)
    eventually("the trip the store missed reached B", lambda: b.breaker.state == "open")


def test_a_holder_that_leaves_gives_the_lease_to_a_waiting_member_at_once(server, members):
    """Leaving gives a held lease back, and its free notice makes a member waiting for it
    ask at once, long before the holder's lease (30 s) would have run out."""
    a, b = members(server.url, "handover"), members(server.url, "handover")
    connected(a, b)
    a.fail()
    settled(a, b)
    holder = probe_round([a, b])
    leaving, waiting = ([a, b][holder], [a, b][1 - holder])
    t = time.monotonic()
    leaving.fleet.leave()
    assert not leaving.breaker.fleet_status()["lease_held"], "local when leave returns"
    eventually("the waiting member holds the lease", lambda: waiting.breaker.fleet_status()["lease_held"])
    assert time.monotonic() - t < 1.0
    assert not leaving.fleet.status().connected and leaving.breaker.fleet_status()["degraded"]


def test_a_release_wakes_the_longest_waiter_alone_and_its_round_ends_in_it(server, members):
    """FLEET.md § 12: members turned down queue in the store; an idle holder lets go, and
    the release wakes the longest waiter alone, on its own channel; that member runs the
    whole round (M = 2 probes) on one lease."""
    # The lease runs on the store's real clock: short, so the idle holder lets go soon.
    ms = [
        members(server.url, "waiters", probe_timeout=0.9, half_open_required_successes=2)
        for _ in range(4)
    ]
    connected(*ms)
    client = server.client()
    for m in ms:
        own = f"tripgate:{{waiters}}:wake:{m.fleet.status().holder}"
        assert client.pubsub_numsub(own) == [(own.encode(), 1)], "each member listens on its own channel"
    ms[0].fail()
    settled(*ms)
    first = probe_round(ms)
    waiters = "tripgate:{waiters}:waiters"
    eventually("three waiters queued", lambda: client.zcard(waiters) == 3)
    longest_id = client.zrange(waiters, 0, 0)[0].decode()
    longest = next(m for m in ms if m.fleet.status().holder == longest_id)
    assert longest is not ms[first]
    held = lambda m: m.breaker.fleet_status()["lease_held"]  # noqa: E731
    eventually("the lease passed on", lambda: not held(ms[first]) and any(held(m) for m in ms))
    assert held(longest), "the longest waiter holds the lease"
    for _ in range(2):
        probe = longest.breaker.acquire()
        assert probe and probe.probe
        probe.record("success")
    for m in ms:
        eventually("closed", lambda: m.breaker.state == "closed")
    assert sum(m.fleet.status().counts["leases"] for m in ms) == 2, "one lease for the idle holder, one for the round"
    assert not client.exists(waiters), "the close ends every wait"
