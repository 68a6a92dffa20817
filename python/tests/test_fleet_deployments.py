"""Fleet mode from Python as users deploy it, on a real redis-server: processes that share
a member name, a Redis shared with a cache that evicts, and members whose Redis user an ACL
restricts (the Rust adapter's counterparts are redis/tests/deployments.rs)."""

import logging
import time

import pytest

from fleetmembers import connected, members, probe_round, server, settled  # noqa: F401
from redisserver import RedisServer, eventually

from tripgate import _native


def acl_user(server, user, rules):
    server.client().execute_command("ACL", "SETUSER", user, "on", ">secret", *rules.split())
    return f"redis://{user}:secret@127.0.0.1:{server.port}"


def test_processes_that_share_a_member_name_share_no_lease(server, members):
    ms = [members(server.url, "shared", member="pod-7") for _ in range(2)]
    connected(*ms)
    assert ms[0].store.member_id == ms[1].store.member_id
    assert ms[0].fleet.status().holder != ms[1].fleet.status().holder
    ms[0].fail()
    settled(*ms)
    holder = probe_round(ms)
    probe = ms[holder].breaker.acquire()
    assert probe and probe.probe
    time.sleep(0.3)
    other = ms[1 - holder]
    assert not other.breaker.fleet_status()["lease_held"]
    assert other.breaker.acquire().reason == "probing-elsewhere"
    probe.record("success")
    for m in ms:
        eventually("closed", lambda m=m: m.breaker.state == "closed")


def test_a_store_that_evicts_volatile_keys_keeps_the_lease(members):
    redis = RedisServer("--maxmemory", "4mb", "--maxmemory-policy", "volatile-ttl")
    try:
        # A short lease, renewed on the store's real clock while the probe is out.
        ms = [members(redis.url, "evict", probe_timeout=0.9) for _ in range(2)]
        connected(*ms)
        assert ms[0].store.warning is None
        ms[0].fail()
        settled(*ms)
        holder = probe_round(ms)
        probe = ms[holder].breaker.acquire()
        client = redis.client()
        value = b"x" * 16 * 1024
        for i in range(2_000):
            try:
                client.set(f"cache:{i}", value, ex=3_600)
            except Exception:  # noqa: BLE001, S110 - a full store refuses some: the point
                pass
        assert client.info("stats")["evicted_keys"] > 0, "the cache was evicted from"
        assert client.exists("tripgate:{evict}:lease"), "the lease was evicted"
        other = ms[1 - holder]
        for _ in range(27):
            assert other.breaker.acquire().reason == "probing-elsewhere", "a second probe"
            assert not other.breaker.fleet_status()["lease_held"], "a second lease"
            time.sleep(0.1)
        probe.record("success")
        for m in ms:
            eventually("closed", lambda m=m: m.breaker.state == "closed")
    finally:
        redis.kill()


def test_a_store_that_may_evict_any_key_is_reported(members, caplog):
    limited = RedisServer("--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru")
    unlimited = RedisServer("--maxmemory-policy", "allkeys-lru")
    try:
        with caplog.at_level(logging.WARNING, logger="tripgate"):
            m = members(limited.url, "lru")
            connected(m)
        assert "allkeys-lru" in (m.store.warning or "")
        assert any("allkeys-lru" in r.getMessage() for r in caplog.records)
        m = members(unlimited.url, "lru")
        connected(m)
        assert m.store.warning is None
    finally:
        limited.kill()
        unlimited.kill()


def test_the_documented_acl_is_enough(server, members):
    url = acl_user(server, "fleet", _native.FLEET_ACL)
    ms = [members(url, "acl") for _ in range(2)]
    connected(*ms)
    ms[0].fail()
    settled(*ms)
    holder = probe_round(ms)
    ms[holder].breaker.acquire().record("success")
    for m in ms:
        eventually("closed", lambda m=m: m.breaker.state == "closed")
        assert m.fleet.status().counts["refused"] == 0
    assert ms[0].store.last_error is None


def test_a_command_the_acl_denies_is_an_outage_that_names_it(server, members):
    url = acl_user(server, "nozadd", f"{_native.FLEET_ACL} -zadd")
    holder, denied = members(server.url, "deny"), members(url, "deny")
    connected(holder, denied)
    holder.fail()
    settled(holder, denied)
    holder.clock.advance_ns(holder.breaker.metrics()["cooldown_remaining_ns"])
    assert holder.breaker.acquire().reason == "probing-elsewhere"
    eventually("a holder", lambda: holder.breaker.fleet_status()["lease_held"])
    denied.clock.advance_ns(denied.breaker.metrics()["cooldown_remaining_ns"])
    assert denied.breaker.acquire().reason == "probing-elsewhere"
    eventually("degraded", lambda: denied.fleet.status().degraded)
    assert "denies this member's user ZADD in take.lua" in (denied.store.last_error or "")
    assert denied.fleet.status().counts["refused"] == 0


def test_a_denied_publish_stores_nothing(server, members):
    url = acl_user(server, "nopublish", f"{_native.FLEET_ACL} -publish")
    m = members(url, "mute")
    connected(m)
    m.fail()
    eventually("degraded", lambda: m.fleet.status().degraded)
    assert "PUBLISH/SPUBLISH in publish.lua" in (m.store.last_error or "")
    assert not server.client().exists("tripgate:{mute}:event")


@pytest.mark.parametrize("session", ["", "0000000000000000", "xyz", 7])
def test_a_session_is_checked(session):
    breaker = __import__("tripgate").CircuitBreaker(fleet_quorum=1)
    with pytest.raises((ValueError, TypeError), match="session"):
        _native.FleetMember(breaker, "s", "00000000000000aa", 10**9, session=session)
