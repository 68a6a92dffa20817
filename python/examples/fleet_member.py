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
from typing import Any, Dict, List, NoReturn, Tuple

import tripgate
from tripgate.fleet import FleetStore

KNOWN = ("cooldown-ms", "failure-threshold", "probes", "required-successes", "call-timeout-ms", "member")


def fail(message: str) -> NoReturn:
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


def parse(argv: List[str]) -> Tuple[List[str], Dict[str, str]]:
    """The positional arguments and the --name=value options."""
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
    return positional, flags


def make_breaker(name: str, quorum_arg: str, fleet_on: bool, flags: Dict[str, str], call_timeout: float) -> tripgate.CircuitBreaker:
    try:
        return tripgate.CircuitBreaker(
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


class Member:
    """The member's calls to the upstream through its breaker, and what it counts."""

    def __init__(self, breaker: tripgate.CircuitBreaker, target: urllib.parse.SplitResult, label: str, call_timeout: float):
        self.breaker, self.target, self.label, self.call_timeout = breaker, target, label, call_timeout
        self.lock = threading.Lock()
        self.sent = self.probes = 0
        self.rejected: Dict[str, int] = {}
        self.slowest = 0.0

    def out(self, record: Dict[str, Any]) -> None:
        line = json.dumps({**record, "t": time.time() * 1000, "label": self.label})
        with self.lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def call(self) -> None:
        started = time.perf_counter()
        permit = self.breaker.acquire()
        decided = time.perf_counter() - started
        if not permit:
            with self.lock:
                self.rejected[permit.reason] = self.rejected.get(permit.reason, 0) + 1
            return
        with self.lock:
            self.sent += 1
            self.probes += int(permit.probe)
        status = self.request(int(permit.probe))
        recording = time.perf_counter()
        permit.record(status)
        decided += time.perf_counter() - recording
        with self.lock:
            self.slowest = max(self.slowest, decided)

    def request(self, probe: int) -> str:
        """One GET of the upstream, as an outcome name."""
        target = self.target
        try:
            conn = http.client.HTTPConnection(target.hostname or "", target.port, timeout=self.call_timeout)
            conn.request("GET", target.path or "/", headers={"X-Member": self.label, "X-Probe": str(probe)})
            status = f"status:{conn.getresponse().status}"
            conn.close()
            return status
        except TimeoutError:
            return "timeout"
        except OSError:
            return "connection-error"

    def drive(self, rate: float, duration: float) -> None:
        """Calls at `rate` per second for `duration` seconds, each on a thread of its own."""
        interval = 1 / rate
        end = time.monotonic() + duration
        next_at = time.monotonic()
        calls: List[threading.Thread] = []
        while time.monotonic() < end:
            thread = threading.Thread(target=self.call, daemon=True)
            thread.start()
            calls.append(thread)
            calls = [c for c in calls if c.is_alive()]
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))
        for thread in calls:
            thread.join()


def main(argv: List[str]) -> None:
    positional, flags = parse(argv)
    redis_url, name, upstream, quorum_arg, key, label, rate_arg, duration_arg = positional
    target = urllib.parse.urlsplit(upstream)
    if target.scheme != "http" or not target.hostname:
        fail(f"upstream-url must be an http:// URL (got {upstream!r})")
    fleet_on = quorum_arg not in ("off", "0")
    rate = number(rate_arg, "rate-per-s")
    duration = number(duration_arg, "duration-s")
    call_timeout = number(flags.get("call-timeout-ms", "1000"), "--call-timeout-ms") / 1000
    breaker = make_breaker(name, quorum_arg, fleet_on, flags, call_timeout)
    member = Member(breaker, target, label, call_timeout)
    breaker.on_transition(lambda t: member.out({"type": "transition", "from": t.from_state, "to": t.to_state, "reason": t.reason}))
    store = None
    if fleet_on:
        # Commas: a Redis Cluster's node URLs, as the Node member takes them.
        urls = redis_url.split(",")
        where = {"nodes": urls} if len(urls) > 1 else {"url": redis_url}
        store = FleetStore.connect(**where, key=None if key == "-" else key, member=flags.get("member"))
        fleet = store.join(name, breaker)
        fleet.ready(5.0)
    member.out({"type": "start", "member": None, "fleet": fleet_on, "quorum": None})
    member.drive(rate, duration)
    if store is not None:
        store.close()
    member.out({"type": "summary", "member": None, "sent": member.sent, "probes": member.probes, "rejected": member.rejected,
                "max_decision_us": member.slowest * 1e6, "decisions_over_1ms": 0})


if __name__ == "__main__":
    main(sys.argv[1:])
