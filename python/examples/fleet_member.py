"""A Python member of a tripgate fleet, for the fleet benches (``host-demo fleet-rounds``):
it calls an upstream at a steady rate through one breaker joined to the fleet, and reports
what it saw as JSON lines. Its command line and its lines are the Node member's
(js/examples/fleet-member.mjs), so one driver runs both:

    python fleet_member.py <redis-url[,node-url...]> <fleet-name> <upstream-url> <quorum> <key> <label> \\
        <rate-per-s> <duration-s> [--cooldown-ms=5000 --failure-threshold=5 --probes=1
        --required-successes=2 --call-timeout-ms=1000 --member=<name>]

Lines (``t``: wall-clock ms): ``start``, ``transition`` (from, to, reason), ``degraded``,
and at the end ``summary`` (sent, probes, rejected, max_decision_us). Bad arguments: one
line on stderr naming the argument, exit code 2."""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
import urllib.parse
from typing import Any, Dict, List

import tripgate
from tripgate.fleet import FleetStore

KNOWN = ("cooldown-ms", "failure-threshold", "probes", "required-successes", "call-timeout-ms", "member")


def fail(message: str) -> None:
    sys.stderr.write(f"fleet_member.py: {message}\n")
    sys.exit(2)


def number(text: str, what: str, integer: bool = False) -> float:
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        fail(f"{what} must be a {'whole ' if integer else ''}number > 0 (got {text!r})")
    if value <= 0:
        fail(f"{what} must be a {'whole ' if integer else ''}number > 0 (got {text!r})")
    return value


# long: to be split with the rework of python/ under issue 39
def main(argv: List[str]) -> None:
    positional = [a for a in argv if not a.startswith("--")]
    flags: Dict[str, str] = {}
    for arg in argv:
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if not eq:
                fail(f"option {arg} needs a value (--name=value)")
            if name not in KNOWN:
                fail(f"unknown option --{name} (known: {', '.join(KNOWN)})")
            flags[name] = value
    if len(positional) != 8:
        fail("usage: fleet_member.py <redis-url> <fleet-name> <upstream-url> <quorum> <key> <label> <rate-per-s> <duration-s> [--option=value ...]")
    redis_url, name, upstream, quorum_arg, key, label, rate_arg, duration_arg = positional
    target = urllib.parse.urlsplit(upstream)
    if target.scheme != "http" or not target.hostname:
        fail(f"upstream-url must be an http:// URL (got {upstream!r})")
    fleet_on = quorum_arg not in ("off", "0")
    rate = number(rate_arg, "rate-per-s")
    duration = number(duration_arg, "duration-s")
    call_timeout = number(flags.get("call-timeout-ms", "1000"), "--call-timeout-ms") / 1000

    lock = threading.Lock()

    def out(record: Dict[str, Any]) -> None:
        line = json.dumps({**record, "t": time.time() * 1000, "label": label})
        with lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    try:
        breaker = tripgate.CircuitBreaker(
            name=name,
            fleet_quorum=int(number(quorum_arg, "quorum", integer=True)) if fleet_on else None,
            cooldown=number(flags.get("cooldown-ms", "5000"), "--cooldown-ms") / 1000,
            failure_threshold=int(number(flags.get("failure-threshold", "5"), "--failure-threshold", integer=True)),
            half_open_max_probes=int(number(flags.get("probes", "1"), "--probes", integer=True)),
            half_open_required_successes=int(number(flags.get("required-successes", "2"), "--required-successes", integer=True)),
            probe_timeout=2 * call_timeout,
        )
    except (TypeError, ValueError) as error:
        fail(str(error))
    breaker.on_transition(lambda t: out({"type": "transition", "from": t.from_state, "to": t.to_state, "reason": t.reason}))

    store = None
    if fleet_on:
        # Commas: a Redis Cluster's node URLs, as the Node member takes them.
        urls = redis_url.split(",")
        where = {"nodes": urls} if len(urls) > 1 else {"url": redis_url}
        store = FleetStore.connect(**where, key=None if key == "-" else key, member=flags.get("member"))
        fleet = store.join(name, breaker)
        fleet.ready(5.0)
    out({"type": "start", "member": None, "fleet": fleet_on, "quorum": None})

    sent = probes = 0
    rejected: Dict[str, int] = {}
    slowest = 0.0

    def call() -> None:
        nonlocal sent, probes, slowest
        started = time.perf_counter()
        permit = breaker.acquire()
        decided = time.perf_counter() - started
        if not permit:
            with lock:
                rejected[permit.reason] = rejected.get(permit.reason, 0) + 1
            return
        with lock:
            sent += 1
            probes += int(permit.probe)
        try:
            conn = http.client.HTTPConnection(target.hostname or "", target.port, timeout=call_timeout)
            conn.request("GET", target.path or "/", headers={"X-Member": label, "X-Probe": str(int(permit.probe))})
            status = f"status:{conn.getresponse().status}"
            conn.close()
        except TimeoutError:
            status = "timeout"
        except OSError:
            status = "connection-error"
        recording = time.perf_counter()
        permit.record(status)
        decided += time.perf_counter() - recording
        with lock:
            slowest = max(slowest, decided)

    interval = 1 / rate
    end = time.monotonic() + duration
    next_at = time.monotonic()
    calls: List[threading.Thread] = []
    while time.monotonic() < end:
        thread = threading.Thread(target=call, daemon=True)
        thread.start()
        calls.append(thread)
        calls = [c for c in calls if c.is_alive()]
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))
    for thread in calls:
        thread.join()
    if store is not None:
        store.close()
    out({"type": "summary", "member": None, "sent": sent, "probes": probes, "rejected": rejected, "max_decision_us": slowest * 1e6, "decisions_over_1ms": 0})


if __name__ == "__main__":
    main(sys.argv[1:])
