"""Python fleet members for the fleet tests: each its own ``FleetStore`` (its own thread
and connections), as separate processes would be, with a ``FakeClock`` moved by hand;
the fixtures that start a redis-server and make members; and the waits the tests share
(a bounded poll on what Redis and the stores' threads do, never a sleep for breaker time)."""

import itertools
import os

import pytest

pytest.importorskip("redis")

import tripgate  # noqa: E402
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
