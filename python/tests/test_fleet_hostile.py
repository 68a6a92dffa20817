"""Fleet mode against a hostile or broken store and bad input, on a real redis-server:
redis/tests/hostile.rs's cases as they apply to Python members (fleetmembers.py), and
TLS, ACL users and the options join refuses."""

import shutil
import subprocess
import time

import pytest

redis = pytest.importorskip("redis")

import tripgate  # noqa: E402
from tripgate import _native  # noqa: E402
from tripgate.fleet import FleetStore  # noqa: E402

# `server` and `members` are fixtures.
from fleetmembers import COOLDOWN, KEY, connected, members, server, settled  # noqa: E402,F401
from redisserver import RedisServer, eventually  # noqa: E402

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

@pytest.mark.parametrize("case", ["garbage", "holder-no-expiry", "hash", "holder-ten-years"])
def test_a_broken_lease_key_blocks_nothing(server, members, case):
    fleet = f"lease-{case}"
    lease = f"tripgate:{{{fleet}}}:lease"
    a = members(server.url, fleet, probe_timeout=1.0)
    b = members(server.url, fleet, probe_timeout=1.0)
    connected(a, b)
    a.fail()
    settled(a, b)
    r = server.client()
    someone = "0123456789abcdef" * 2
    if case == "garbage":
        r.set(lease, "not a member")
    elif case == "holder-no-expiry":
        r.set(lease, someone)
    elif case == "hash":
        r.hset(lease, "a", "b")
    else:
        r.set(lease, f"{someone} {int(time.time() * 1000) + 10 * 365 * 86_400_000}")
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
