"""Fleet mode without a store: the shared protocol vectors (tests/vectors/protocol/, format
in tests/vectors/README.md) through ``tripgate._native.FleetMember``, the wire format,
the options, and hostile input to the member (each a result or a ValueError/TypeError,
never a panic).

The vectors' replies are turned into what Redis (through redis-py) answers each script
with, so the member's reading of raw replies is checked along with the protocol."""

import json
import random

import pytest

import tripgate
from tripgate import _native

from conftest import VECTORS, options_of

MS = 1_000_000
PROTOCOL = sorted((VECTORS / "protocol").glob("*.json"))
COUNTS = ("received", "applied", "published", "reconciles", "leases", "repairs", "refused")


def raw_reply(reply):
    """A vector's reply as redis-py gives the script's answer."""
    ((kind, body),) = reply.items()
    text = lambda v: None if v is None else v.encode()  # noqa: E731
    if kind == "read":
        return [text(body.get("event")), body.get("event-ttl-ms", -2), text(body.get("generation"))]
    if kind == "voted":
        out = [str(body.get("now-ms", 0)).encode()]
        for entry, at in body.get("votes", []):
            out += [entry.encode(), str(at).encode()]
        return out
    if kind == "generation":
        return body
    if kind == "lease":
        return [1 if body.get("held") else 0, body.get("ttl-ms", 0)]
    if kind == "renewed":
        return 1 if body else 0
    if kind in ("published", "released", "repaired"):
        return 1
    raise AssertionError(f"unknown reply {kind}")


def run(vector):
    clock = tripgate.FakeClock()
    breaker = tripgate.CircuitBreaker(clock=clock, **options_of(vector.get("config", {})))
    spec = vector["member"]
    member = _native.FleetMember(
        breaker, spec["name"], spec["id"], spec["reconcile-interval-ms"] * MS, spec.get("key"), session=spec["session"]
    )
    member.join(_native.FleetWaker())
    permits = {}
    for i, step in enumerate(vector["steps"]):
        where = f"step {i} {json.dumps(step)}"
        now = step["at"] * MS
        clock.set_ns(now)
        op = step["op"]
        command = None
        if op in ("up", "down", "changed", "tick"):
            command = member.step(op, now, None)
        elif op == "message":
            command = member.step("message", now, step["line"].encode())
        elif op == "reply":
            if "refused" in step["reply"]:
                command = member.step("refused", now, None)
            else:
                command = member.step("reply", now, raw_reply(step["reply"]))
        elif op == "acquire":
            got = breaker.acquire()
            if got and "permit" in step:
                permits[step["permit"]] = got
            if "admitted" in step:
                assert bool(got) == step["admitted"], f"{where}: admitted"
        elif op == "record":
            permits.pop(step["permit"]).record(step["outcome"])
        else:
            pytest.fail(f"{where}: unknown op")
        check(where, step.get("expect"), member, breaker, command)


def check(where, expect, member, breaker, command):
    if expect is None:
        return
    got = None if command is None else {command[0]: command[1]}
    assert got == expect.get("command"), f"{where}: command {got}"
    if "call" in expect:
        # The Redis call the adapter sends: the core's, as the vector writes it out.
        script, keys, args = command[2]
        assert {"script": script, "keys": list(keys), "args": list(args)} == expect["call"], f"{where}: call"
    if "deadline-ms" in expect:
        deadline = member.deadline
        assert (None if deadline is None else deadline // MS) == expect["deadline-ms"], f"{where}: deadline"
    if "lease-held" in expect:
        assert member.lease_held == expect["lease-held"], f"{where}: lease-held"
    status = breaker.fleet_status()
    if "state" in expect:
        assert breaker.state == expect["state"], f"{where}: state"
    if "breaker-lease" in expect:
        assert status["lease_held"] == expect["breaker-lease"], f"{where}: breaker-lease"
    if "degraded" in expect:
        assert status["degraded"] == expect["degraded"], f"{where}: degraded"
    if "generation" in expect:
        assert status["generation"] == expect["generation"], f"{where}: generation"
    if "cooldown-remaining-ms" in expect:
        got = breaker.metrics()["cooldown_remaining_ns"] // MS
        assert got == expect["cooldown-remaining-ms"], f"{where}: cooldown-remaining-ms"
    counts = member.counts()
    for name, want in expect.get("counts", {}).items():
        got = counts[name] if name in COUNTS else counts["ignored"][name]
        assert got == want, f"{where}: count {name}"


@pytest.mark.parametrize("path", PROTOCOL, ids=[p.name for p in PROTOCOL])
def test_protocol_vector(path):
    run(json.loads(path.read_text()))


def test_every_protocol_vector_is_found():
    assert len(PROTOCOL) >= 15


def fleet_breaker(**options):
    options.setdefault("fleet_quorum", 1)
    return tripgate.CircuitBreaker(clock=tripgate.FakeClock(), **options)


def test_the_wire_format_is_the_cores():
    key = b"a shared key of 32 bytes, really"
    line = _native.fleet_encode("payments", 7, "open", 1500, "00abcdef01234567")
    assert line == "tripgate1 payments 7 open 1500 00abcdef01234567 -"
    assert _native.fleet_decode(line, "payments") == {
        "kind": "open",
        "generation": 7,
        "remaining_ms": 1500,
        "origin": "00abcdef01234567",
    }
    signed = _native.fleet_encode("payments", 7, "close", 0, "00abcdef01234567", key)
    assert _native.fleet_decode(signed, "payments", key)["kind"] == "close"
    for bad, reason, with_key in [
        (line, "unsigned", key),
        (_native.fleet_encode("payments", 7, "open", 9, "00abcdef01234567", b"x" * 16), "forged", key),
        (_native.fleet_encode("orders", 7, "open", 9, "00abcdef01234567"), "wrong-fleet", None),
        (b" " * (10 << 20), "garbage", None),
        ("tripgate1 payments 7 open 0 00abcdef01234567 -", "garbage", None),
    ]:
        with pytest.raises(ValueError) as caught:
            _native.fleet_decode(bad, "payments", with_key)
        assert caught.value.reason == reason
    entry = _native.fleet_vote_entry("payments", "00000000000000aa", 3, key)
    assert entry.startswith("00000000000000aa 3 ") and len(entry.split(" ")[2]) == 64
    assert _native.fleet_member_id("pod-1") == _native.fleet_member_id("pod-1") != _native.fleet_member_id("pod-2")
    assert set(_native.fleet_scripts()) == {"read", "vote", "take", "renew", "release", "repair", "publish"}
    assert _native.FLEET_IGNORED == ("garbage", "wrong-fleet", "unsigned", "forged", "stale", "malformed-generation")


def test_options_are_the_cores_and_errors_name_them():
    o = _native.fleet_options(member="pod-7")
    assert (o["reconcile_interval_ns"], o["store_timeout_ns"], o["max_backoff_ns"]) == (10**9, 250 * MS, 10**9)
    assert o["member_id"] == _native.fleet_member_id("pod-7") and o["key"] is None
    assert _native.fleet_options()["member_id"] is None
    for kwargs, option, kind in [
        ({"reconcile_interval": 0.001}, "reconcile_interval", ValueError),
        ({"reconcile_interval": 3601}, "reconcile_interval", ValueError),
        ({"store_timeout": float("nan")}, "store_timeout", ValueError),
        ({"store_timeout": "1"}, "store_timeout", TypeError),
        ({"max_backoff": True}, "max_backoff", TypeError),
        ({"max_backoff": -1}, "max_backoff", ValueError),
        ({"key": b"short"}, "key", ValueError),
        ({"key": 12345}, "key", TypeError),
        ({"member": ""}, "member", ValueError),
        ({"member": 7}, "member", TypeError),
    ]:
        with pytest.raises(kind) as caught:
            _native.fleet_options(**kwargs)
        assert caught.value.option == option, kwargs
        assert option in str(caught.value)
    with pytest.raises(ValueError, match="store_timeout must be between 1 ms and 60000 ms"):
        _native.fleet_options(store_timeout=0)


def test_a_member_refuses_what_cannot_work():
    breaker = fleet_breaker()
    for args, option in [
        (("bad name!", "00000000000000aa", 10**9), "name"),
        (("payments", "0000000000000000", 10**9), "member_id"),
        (("payments", "00000000000000AA", 10**9), "member_id"),
        (("payments", "00000000000000aa", 1), "reconcile_interval"),
    ]:
        with pytest.raises(ValueError) as caught:
            _native.FleetMember(breaker, *args)
        assert caught.value.option == option
    with pytest.raises(ValueError, match="fleet_quorum") as caught:
        _native.FleetMember(tripgate.CircuitBreaker(), "payments", "00000000000000aa", 10**9)
    assert caught.value.option == "breaker"
    with pytest.raises(TypeError):
        _native.FleetMember(object(), "payments", "00000000000000aa", 10**9)
    waker = _native.FleetWaker()
    first = _native.FleetMember(breaker, "payments", "00000000000000aa", 10**9)
    first.join(waker)
    with pytest.raises(ValueError, match="member of a fleet already"):
        _native.FleetMember(breaker, "orders", "00000000000000aa", 10**9).join(waker)
    first.leave()
    assert not first.joined and first.step("up", 0, None) is None
    _native.FleetMember(breaker, "orders", "00000000000000aa", 10**9).join(waker)


def test_hostile_replies_and_inputs_are_refusals_or_errors_never_panics():
    rng = random.Random(23)
    junk = [None, 0, -1, 2**70, 1.5, float("nan"), b"", b"x" * 600, "text", [], [None], [1, 2, 3, 4], [b"a", b"b", b"c"], [[1]], {"a": 1}, (1, 2), object(), True]
    breaker = fleet_breaker()
    member = _native.FleetMember(breaker, "payments", "00000000000000aa", 10**9)
    assert member.step("up", 0, None) is None, "not joined yet"
    member.join(_native.FleetWaker())
    now = 0
    command = member.step("up", now, None)
    for _ in range(2000):
        now += rng.randrange(0, 50 * MS)
        kind = rng.choice(["reply", "reply", "reply", "message", "tick", "changed", "refused", "up", "down"])
        data = rng.choice(junk) if kind in ("reply", "message") else None
        try:
            command = member.step(kind, now, data)
        except (TypeError, ValueError):
            assert kind == "message"
        if rng.random() < 0.05:
            p = breaker.acquire()
            if p:
                p.record(rng.choice(["success", "status:503"]))
    with pytest.raises(ValueError, match="input must be"):
        member.step("sideways", now, None)
    with pytest.raises(OverflowError):
        member.step("tick", -1, None)
    assert command is None or command[0] in ("read", "vote", "next-generation", "publish", "take-lease", "renew-lease", "release-lease", "repair")


def test_a_listener_that_steps_or_leaves_inside_a_step_is_safe():
    breaker = fleet_breaker()
    member = _native.FleetMember(breaker, "payments", "00000000000000aa", 10**9)
    member.join(_native.FleetWaker())
    seen = []

    def listener(t):
        try:
            member.step("tick", 0, None)
        except RuntimeError as error:
            seen.append(str(error))
        member.leave()

    breaker.on_transition(listener)
    assert member.step("up", 0, None)[0] == "read"
    line = _native.fleet_encode("payments", 1, "open", 5000, "00000000000000bb")
    assert member.step("reply", 0, [line.encode(), 5000, b"1"]) is None
    assert seen and "inside its own step" in seen[0]
    assert not member.joined and breaker.fleet_status()["degraded"]
    assert breaker.state == "open"


def test_the_backoff_is_the_cores():
    b = _native.FleetBackoff(10**9, 7)
    waits = []
    now = 0
    for _ in range(10):
        b.up(now)
        now += MS
        wait = b.down(now)
        waits.append(wait)
        now += wait
    assert waits[0] <= 13 * MS and waits[-1] <= 10**9 and waits[-1] >= 750 * MS
    with pytest.raises(ValueError, match="max_backoff"):
        _native.FleetBackoff(1, 7)


def test_random_store_options_are_refused_cleanly_or_accepted():
    """Every option of FleetStore.connect, drawn from values of every type: a store, or a
    ValueError/TypeError naming the option."""
    pytest.importorskip("redis")
    from tripgate.fleet import FleetStore

    from test_hostile import ODD_VALUES

    rng = random.Random(5)
    names = ["key", "member", "reconcile_interval", "store_timeout", "max_backoff", "tls_root_cert"]
    urls = [*ODD_VALUES, "redis://127.0.0.1:1", "redis://127.0.0.1:1/0", "redis://127.0.0.1:1/3", "redis://[::1", "unix:///nowhere?db=2", "rediss://127.0.0.1:1"]
    for _ in range(400):
        url = rng.choice(urls)
        options = {rng.choice(names): rng.choice(ODD_VALUES) for _ in range(rng.randint(0, 3))}
        try:
            store = FleetStore.connect(url, **options)
        except (ValueError, TypeError) as error:
            assert getattr(error, "option", None) in ["url", *names], (url, options, error)
        except BaseException as error:  # noqa: BLE001
            pytest.fail(f"{url!r} {options}: {type(error).__name__}: {error}")
        else:
            store.close()


def test_a_cluster_s_nodes_are_checked_and_errors_name_them():
    pytest.importorskip("redis")
    from tripgate.fleet import FleetStore

    for kwargs, option, kind in [
        ({}, "url", TypeError),
        ({"url": "redis://127.0.0.1:1", "nodes": ["redis://127.0.0.1:2"]}, "nodes", ValueError),
        ({"nodes": "redis://127.0.0.1:1"}, "nodes", TypeError),
        ({"nodes": []}, "nodes", ValueError),
        ({"nodes": ["redis://127.0.0.1:1", 7]}, "nodes", TypeError),
        ({"nodes": ["redis://127.0.0.1:1/2"]}, "nodes", ValueError),
        ({"nodes": ["unix:///tmp/redis.sock"]}, "nodes", ValueError),
    ]:
        with pytest.raises(kind) as caught:
            FleetStore.connect(**kwargs)
        assert caught.value.option == option, kwargs
        assert option in str(caught.value)
    # Nobody there: accepted, and degraded until a cluster answers.
    store = FleetStore.connect(nodes=["redis://127.0.0.1:1"], store_timeout=0.05)
    assert not store.connected
    store.close()
