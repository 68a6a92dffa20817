"""A fleet member in a process forked from the one that made it, as a pre-forking server
(gunicorn ``--preload``, uWSGI, ``multiprocessing``'s fork) makes one: what
``test_fleet_fork.py`` runs with a real ``os.fork()`` and under gunicorn. Run as a script
(``python forkcase.py <redis-url> <fleet> inherited|recipe``) it forks two children one
after the other and prints one JSON line: what each child saw, and what the parent saw of
its own store afterwards."""

from __future__ import annotations

import json
import os
import sys
import time

import tripgate
from tripgate.fleet import FleetStore

KEY = b"a shared key of 32 bytes, really"
CONFIG = {
    "failure_threshold": 3,
    "min_calls": 3,
    "cooldown": 10.0,
    "probe_timeout": 30.0,
    "half_open_max_probes": 1,
    "half_open_required_successes": 1,
    "fleet_quorum": 1,
}
STORE = {"key": KEY, "member": "one-host", "reconcile_interval": 0.1, "store_timeout": 0.5, "max_backoff": 0.05}


def until(condition, timeout=5.0):
    """Polls ``condition`` until it holds (True) or ``timeout`` seconds pass (False): what
    the store's thread and Redis do takes real time."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def breaker(name):
    clock = tripgate.FakeClock(1.0)
    made = tripgate.CircuitBreaker(name=name, clock=clock, **CONFIG)
    seen = []
    made.on_transition(lambda t: seen.append(t.reason))
    return made, clock, seen


def round_trip(fleet, made, clock):
    """One trip of this process's breaker and the probe round that closes the fleet again,
    as a member that follows its fleet must run it. What it saw, as a dict."""
    seen = {"pid": os.getpid(), "ready": fleet.ready(5.0)}
    generation = made.fleet_status()["generation"]
    for _ in range(3):
        permit = made.acquire()
        if permit:
            permit.record("status:503")
    seen["tripped"] = made.state == "open"
    # The trip reaches the fleet (a new generation, applied here when it comes back on
    # the channel) before the breaker's clock moves on.
    seen["published"] = until(lambda: made.fleet_status()["generation"] > generation)
    clock.advance_ns(made.metrics()["cooldown_remaining_ns"])
    probes = []

    def probe():
        permit = made.acquire()
        if permit:
            probes.append(permit)
        return bool(permit)

    # The first caller past the cooldown asks for the lease; the member takes it and the
    # next caller probes.
    seen["probed"] = until(probe)
    rejection = made.acquire()
    seen["others_wait"] = (not rejection) and rejection.reason in ("probing", "probing-elsewhere")
    for permit in probes:
        permit.record("success")
    seen["closed"] = until(lambda: made.state == "closed")
    # The round's end reaches the fleet too, before this process moves on (or exits).
    seen["close_published"] = until(lambda: made.fleet_status()["generation"] > generation + 1)
    status = fleet.status()
    seen["status"] = {"connected": status.connected, "degraded": status.degraded, "connects": status.connects}
    return seen


def child(run):
    """Runs ``run()`` in a forked child; what it returned (or the error it raised)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            out = run()
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            out = {"error": f"{type(error).__name__}: {error}"}
        os.write(write, json.dumps(out).encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while True:
        chunk = os.read(read, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks) or b'{"error": "the child said nothing"}')


def inherited(url, name):
    """The store connected and the breaker joined before the fork (``--preload``)."""
    made, clock, seen = breaker(name)
    store = FleetStore.connect(url, **STORE)
    fleet = store.join(name, made)
    if not fleet.ready(5.0):
        return {"error": "the parent did not connect"}

    def in_child():
        out = round_trip(fleet, made, clock)
        # A second membership of the same breaker is refused, saying why.
        try:
            FleetStore.connect(url, **STORE).join(name, made)
            out["joined_twice"] = "allowed"
        except ValueError as error:
            out["joined_twice"] = str(error)
        return out

    children = [child(in_child) for _ in range(2)]
    # The parent's own connections carried on: it heard both children's rounds.
    heard = until(lambda: seen.count("fleet-close") >= 2)
    status = fleet.status()
    parent = {"heard": heard, "reasons": seen, "connected": status.connected, "disconnects": status.disconnects, "counts": status.counts}
    store.close()
    return {"children": children, "parent": parent}


def recipe(url, name):
    """The breaker made before the fork, the store connected and joined in each child."""
    made, clock, _ = breaker(name)

    def in_child():
        store = FleetStore.connect(url, **STORE)
        fleet = store.join(name, made)
        out = round_trip(fleet, made, clock)
        store.close()
        return out

    return {"children": [child(in_child) for _ in range(2)]}


if __name__ == "__main__":
    url, name, case = sys.argv[1:4]
    print(json.dumps({"inherited": inherited, "recipe": recipe}[case](url, name)))
