"""Fleet mode through redis-py on a real redis-server started here: FLEET.md's rules with
Python members, each its own ``FleetStore`` (its own thread and connections), as separate
processes would be. Breaker time is each member's ``FakeClock``, moved by hand; what Redis
and the stores' threads do is awaited with a bounded poll, never by sleeping for breaker
time. The hostile cases are redis/tests/hostile.rs's, as they apply to Python."""

import itertools
import os
import shutil
import statistics
import subprocess
import time

import pytest

redis = pytest.importorskip("redis")

import tripgate  # noqa: E402
from tripgate import _native  # noqa: E402
from tripgate.fleet import FleetStore  # noqa: E402

from redisserver import RedisServer, eventually  # noqa: E402

KEY = b"a shared key of 32 bytes, really"
COOLDOWN = 10.0
_names = itertools.count()


def config(quorum, **extra):
    return {
        "failure_threshold": 3,
        "min_calls": 3,
        "cooldown": COOLDOWN,
        # Long, because the lease's PX runs on the store's real clock.
        "probe_timeout": 30.0,
        "half_open_max_probes": 1,
        "half_open_required_successes": 1,
        "backoff_factor": 2.0,
        "fleet_quorum": quorum,
        **extra,
    }


class Member:
    def __init__(self, url, fleet, quorum=1, member=None, store=None, **extra):
        self.clock = tripgate.FakeClock(1.0)
        self.breaker = tripgate.CircuitBreaker(clock=self.clock, name=fleet, **config(quorum, **extra))
        self.transitions = []
        self.breaker.on_transition(lambda t: self.transitions.append(t.as_tuple()))
        options = {"reconcile_interval": 0.1, "store_timeout": 0.2, "max_backoff": 0.05, **(store or {})}
        self.store = FleetStore.connect(
            url, key=KEY, member=member or f"member-{os.getpid()}-{next(_names)}", **options
        )
        self.fleet = self.store.join(fleet, self.breaker)

    def fail(self, times=3):
        for _ in range(times):
            permit = self.breaker.acquire()
            if permit:
                permit.record("status:503")

    def last_reason(self):
        return self.breaker.metrics()["last_transition"].reason

    def close(self):
        self.store.close()


@pytest.fixture
def server():
    s = RedisServer()
    yield s
    s.kill()


@pytest.fixture
def members():
    made = []

    def make(*args, **kwargs):
        m = Member(*args, **kwargs)
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()


def connected(*ms):
    for m in ms:
        assert m.fleet.ready(5.0), f"member not connected: {m.fleet.status()} {m.store.last_error}"


def settled(*ms, generation=1):
    """Waits until every member applied the fleet's newest event, at least ``generation``:
    a member that published an event applies it when it comes back on the channel, and a
    test that moves its clock before then would see the echo re-open it."""
    gens = lambda: [m.breaker.fleet_status()["generation"] for m in ms]  # noqa: E731
    eventually(f"every member at one generation >= {generation}", lambda: min(gens()) >= generation and len(set(gens())) == 1, detail=gens)


def probe_round(ms):
    """Every member past its cooldown with a caller turned away for the want of the lease;
    one of them takes it. Returns the holder's index."""
    for m in ms:
        m.clock.advance_ns(m.breaker.metrics()["cooldown_remaining_ns"])
        rejection = m.breaker.acquire()
        assert not rejection and rejection.reason == "probing-elsewhere"
    held = lambda m: m.breaker.fleet_status()["lease_held"]  # noqa: E731
    eventually("a lease holder", lambda: any(held(m) for m in ms))
    holders = [i for i, m in enumerate(ms) if held(m)]
    assert len(holders) == 1, "one lease fleet-wide"
    for i, m in enumerate(ms):
        if i != holders[0]:
            assert m.breaker.acquire().reason == "probing-elsewhere"
    return holders[0]


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


def test_bad_messages_are_ignored_and_counted(server, members):
    a = members(server.url, "t8")
    connected(a)
    r = server.client()
    channel = "tripgate:{t8}:events"
    for garbage in [b"hello", b"tripgate1 t8 5 open", b"tripgate1 t8 x open 5000 0000000000000099 -", b"\xff\xfe not utf-8"]:
        r.publish(channel, garbage)
    origin = "0000000000000099"
    for line in [
        _native.fleet_encode("elsewhere", 5, "open", 5000, origin, KEY),
        _native.fleet_encode("t8", 6, "open", 5000, origin),
        _native.fleet_encode("t8", 7, "open", 5000, origin, b"not the fleet's key at all"),
    ]:
        r.publish(channel, line)
    want = {"garbage": 4, "wrong-fleet": 1, "unsigned": 1, "forged": 1}
    eventually("all counted", lambda: {k: a.fleet.status().ignored(k) for k in want} == want)
    assert a.breaker.state == "closed" and a.breaker.fleet_status()["generation"] == 0
    # The same forged value in the keys is ignored too, and counted once.
    r.set("tripgate:{t8}:event", _native.fleet_encode("t8", 7, "open", 5000, origin, b"not the fleet's key at all"))
    eventually("forged key counted", lambda: a.fleet.status().ignored("forged") == 2)
    reconciles = a.fleet.status().counts["reconciles"]
    eventually("three more reconciles", lambda: a.fleet.status().counts["reconciles"] >= reconciles + 3)
    assert a.fleet.status().ignored("forged") == 2
    assert a.breaker.state == "closed"


@pytest.mark.parametrize("value", ["abc", "1.5", "9223372036854775807", "-5", "9007199254740991", "a hash"])
def test_a_malformed_generation_is_repaired_never_published_past(server, members, value):
    fleet = f"gen-{abs(hash(value))}"
    gen = f"tripgate:{{{fleet}}}:gen"
    r = server.client()
    if value == "a hash":
        r.hset(gen, "a", "b")
    else:
        r.set(gen, value)
    a, b = members(server.url, fleet), members(server.url, fleet)
    connected(a, b)
    a.fail()
    eventually("B opened by the fleet", lambda: b.breaker.state == "open")
    stored = r.get(gen)
    assert stored.isdigit() and int(stored) < 2**53, f"{value!r} repaired to {stored!r}"
    assert 1 <= b.breaker.fleet_status()["generation"] < 2**53
    noticed = lambda m: m.fleet.status().ignored("malformed-generation") + m.fleet.status().counts["repairs"]  # noqa: E731
    assert noticed(a) + noticed(b) >= 1
    # Refused commands are no outage: one session all along.
    assert a.fleet.status().connects == 1


@pytest.mark.parametrize("case", ["garbage", "holder-no-ttl", "hash", "holder-ten-years"])
def test_a_broken_lease_key_blocks_nothing(server, members, case):
    fleet = f"lease-{case}"
    lease = f"tripgate:{{{fleet}}}:lease"
    a = members(server.url, fleet, probe_timeout=1.0)
    b = members(server.url, fleet, probe_timeout=1.0)
    connected(a, b)
    a.fail()
    settled(a, b)
    r = server.client()
    if case == "garbage":
        r.set(lease, "not a member")
    elif case == "holder-no-ttl":
        r.set(lease, "0123456789abcdef")
    elif case == "hash":
        r.hset(lease, "a", "b")
    else:
        r.psetex(lease, 10 * 365 * 86_400_000, "0123456789abcdef")
    before = server.commands_sent()
    started = time.monotonic()
    a.clock.advance(COOLDOWN)
    b.clock.advance(COOLDOWN)
    assert a.breaker.acquire().reason == "probing-elsewhere"
    eventually("A holds the lease", lambda: a.breaker.fleet_status()["lease_held"])
    took = time.monotonic() - started
    assert took <= 1.5, f"{case}: {took:.2f} s"
    a.breaker.acquire().record("success")
    eventually("B closed", lambda: b.breaker.state == "closed")
    commands = server.commands_sent() - before
    reads = 2 * int((time.monotonic() - started) / 0.1 + 2)
    assert commands <= reads + 30, f"{case}: {commands} commands in {took:.2f} s"


def test_huge_messages_and_values_are_dropped_unread(members):
    server = RedisServer("--proto-max-bulk-len", "64mb")
    a = members(server.url, "huge")
    try:
        connected(a)
        r = server.client()
        r.publish("tripgate:{huge}:events", b" " * (10 << 20))
        eventually("counted as garbage", lambda: a.fleet.status().ignored("garbage") == 1)
        r.set("tripgate:{huge}:event", b"x" * (30 << 20))
        eventually("the stored value counted once", lambda: a.fleet.status().ignored("garbage") == 2)
        sent = lambda: r.info("stats")["total_net_output_bytes"]  # noqa: E731
        before = sent()
        reconciles = a.fleet.status().counts["reconciles"]
        eventually("five reconciles", lambda: a.fleet.status().counts["reconciles"] >= reconciles + 5)
        out = sent() - before
        assert out < 64 << 10, f"{out} bytes sent for five reads of a 30 MiB value"
        assert a.fleet.status().ignored("garbage") == 2
        assert a.breaker.state == "closed"
    finally:
        server.kill()


def test_votes_cannot_be_forged_or_doubled(server, members):
    r = server.client()
    votes = "tripgate:{votes}:votes"
    r.set(votes, "not a set")
    a = members(server.url, "votes", quorum=2, member="pod-a")
    b = members(server.url, "votes", quorum=2)
    connected(a, b)
    a.fail()
    eventually("A's vote stored", lambda: r.type(votes) == b"zset" and r.zcard(votes) == 1)
    now_ms = int(time.time() * 1000)
    fake = "00000000deadbeef"
    forged = _native.fleet_vote_entry("votes", fake, 0, b"a guessed key!!!")
    for entry in [f"{fake} 0 -", forged, fake]:
        r.zadd(votes, {entry: now_ms})
    # A restarts (a new process, the same member name) and trips again.
    a.close()
    a = members(server.url, "votes", quorum=2, member="pod-a")
    connected(a)
    a.fail()
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        assert b.breaker.state == "closed", "one member is no quorum"
        time.sleep(0.01)
    assert r.get("tripgate:{votes}:gen") is None, "nothing published below quorum"
    assert a.fleet.status().ignored("forged") + a.fleet.status().ignored("unsigned") >= 1
    b.fail()
    eventually(
        "the fleet opened",
        lambda: a.breaker.fleet_status()["generation"] >= 1 and b.breaker.fleet_status()["generation"] >= 1,
    )


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


def test_join_refuses_what_cannot_work(server, members):
    m = members(server.url, "j")
    with pytest.raises(ValueError) as caught:
        m.store.join("j", tripgate.CircuitBreaker(fleet_quorum=1))
    assert caught.value.option == "name"
    with pytest.raises(ValueError) as caught:
        m.store.join("other", m.breaker)
    assert caught.value.option == "breaker"
    with pytest.raises(ValueError) as caught:
        m.store.join("other", tripgate.CircuitBreaker())
    assert caught.value.option == "breaker" and "fleet_quorum" in str(caught.value)
    with pytest.raises(TypeError) as caught:
        m.store.join("other", object())
    assert caught.value.option == "breaker"
    with pytest.raises(ValueError) as caught:
        m.store.join("no spaces", tripgate.CircuitBreaker(fleet_quorum=1))
    assert caught.value.option == "name"
    for url, option in [(f"{server.url}/2", "url"), ("http://127.0.0.1:1", "url"), (7, "url")]:
        with pytest.raises((ValueError, TypeError)) as caught:
            FleetStore.connect(url)
        assert caught.value.option == option
    with pytest.raises(ValueError, match="database 2"):
        FleetStore.connect(f"{server.url}/2")
    with pytest.raises(ValueError) as caught:
        FleetStore.connect(server.url, key=b"short")
    assert caught.value.option == "key"
    # Leaving makes the breaker local, and it may join again.
    m.fleet.leave()
    assert m.breaker.fleet_status()["degraded"] and not m.fleet.status().connected
    again = m.store.join("j", m.breaker)
    assert again.ready(5.0)


def test_an_acl_user_in_the_url_and_a_wrong_password(members):
    server = RedisServer("--user", "default", "off", "--user", "fleet", "on", ">s3cret", "~tripgate:*", "&tripgate:*", "+@all")
    try:
        good = f"redis://fleet:s3cret@127.0.0.1:{server.port}"
        a, b = members(good, "acl"), members(good, "acl")
        connected(a, b)
        a.fail()
        eventually("open through ACL", lambda: b.breaker.state == "open")
        wrong = members(f"redis://fleet:guess@127.0.0.1:{server.port}", "acl")
        assert not wrong.fleet.ready(0.3)
        assert "guess" not in (wrong.store.last_error or "") and "s3cret" not in repr(a.store)
        assert wrong.breaker.state == "closed"
    finally:
        server.kill()


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
        assert "NoPermissionError" in m.store.last_error
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


def test_an_expired_lease_leads_nothing(server, members):
    """A holder frozen past its lease (here its clock moved past it) does not lead the
    fleet when it wakes: its probe's failure re-opens it alone, and nothing is published."""
    a, b = members(server.url, "frozen"), members(server.url, "frozen")
    connected(a, b)
    a.fail()
    settled(a, b)
    r = server.client()
    before = int(r.get("tripgate:{frozen}:gen"))
    a.clock.advance(COOLDOWN)
    b.clock.advance(COOLDOWN)
    assert a.breaker.acquire().reason == "probing-elsewhere"
    eventually("A holds the lease", lambda: a.breaker.fleet_status()["lease_held"])
    probe = a.breaker.acquire()
    a.clock.advance(30.0 + 1.0)
    probe.record("status:503")
    assert a.breaker.state == "open"
    reconciles = a.fleet.status().counts["reconciles"]
    eventually("three reconciles later", lambda: a.fleet.status().counts["reconciles"] >= reconciles + 3)
    assert int(r.get("tripgate:{frozen}:gen")) == before, "an expired lease published nothing"
    assert b.breaker.state == "half-open"
    assert f" {before} open ".encode() in r.get("tripgate:{frozen}:event")


@pytest.mark.parametrize("fleet,remaining_ms,most", [("replayed-long", 10 * 365 * 86_400_000, 60.0), ("replayed-short", 5_000, 5.0)])
def test_a_stored_open_lasts_no_longer_than_the_member_allows(server, members, fleet, remaining_ms, most):
    """A captured signed open re-stored with a TTL of ten years opens a member for at most
    the least of the TTL, its signed time and the member's longest opening."""
    r = server.client()
    r.set(f"tripgate:{{{fleet}}}:gen", 998)
    line = _native.fleet_encode(fleet, 998, "open", remaining_ms, "0000000000000099", KEY)
    r.psetex(f"tripgate:{{{fleet}}}:event", 10 * 365 * 86_400_000, line)
    m = members(server.url, fleet, max_cooldown=60.0)
    eventually("the stored open applied", lambda: m.breaker.state == "open")
    left = m.breaker.metrics()["cooldown_remaining"]
    assert left <= most, f"{fleet}: open for {left} s, at most {most}"


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


def certificates(dir):
    """A CA and a server certificate for 127.0.0.1 signed by it (the ``openssl`` command)."""
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=dir, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=tripgate test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    (dir / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.crt", "-days", "1", "-extfile", "san.ext")


def test_members_follow_the_fleet_over_tls(members, tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make the certificates with")
    certificates(tmp_path)
    server = RedisServer(tls=(tmp_path / "server.crt", tmp_path / "server.key"))
    try:
        url = f"rediss://127.0.0.1:{server.port}"
        ca = (tmp_path / "ca.crt").read_bytes()
        a = members(url, "tls", store={"tls_root_cert": ca})
        b = members(url, "tls", store={"tls_root_cert": ca.decode()})
        connected(a, b)
        a.fail()
        eventually("B opened", lambda: b.breaker.state == "open")
        # Without the CA, the server's certificate is not trusted: never connected.
        c = members(url, "tls")
        assert not c.fleet.ready(0.3)
        assert "certificate" in (c.store.last_error or "").lower()
    finally:
        server.kill()
    with pytest.raises(ValueError) as caught:
        FleetStore.connect("redis://127.0.0.1:1", tls_root_cert=ca)
    assert caught.value.option == "tls_root_cert"


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
