"""A mixed fleet on one real redis-server: a Python member (this process, through
``tripgate.fleet``), a Rust member (``host-demo fleet-member``: the component in wasmtime
joined with tripgate-redis) and a Node member (``js/examples/fleet-member.mjs``), each
calling an upstream of its own on 127.0.0.1. Each member in turn trips on its own
upstream's failures; the other two open (``fleet-open``), one probe round closes all
three. Everything runs on real time: the members are separate processes.

The Rust member's binary: ``TRIPGATE_HOST_DEMO``, else ``host-demo`` in cargo's target
dir (``TRIPGATE_TARGET_DIR``; scripts/test.sh builds it). The Node member
(``TRIPGATE_NODE_MEMBER``, else this checkout's script) needs ``node``, the built JS
package beside it (js/pkg) and its redis client (js/node_modules/redis)."""

import http.client
import http.server
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import threading
import time

import pytest

pytest.importorskip("redis")

import tripgate  # noqa: E402
from tripgate.fleet import FleetStore  # noqa: E402

from conftest import REPO  # noqa: E402
from redisserver import RedisServer, eventually  # noqa: E402

KEY = "a shared key of 32 bytes, really"
FLEET = "mixed"
COOLDOWN_MS = 1500
THRESHOLD = 3


def host_demo():
    explicit = os.environ.get("TRIPGATE_HOST_DEMO")
    if explicit:
        return pathlib.Path(explicit)
    target = pathlib.Path(os.environ.get("TRIPGATE_TARGET_DIR") or os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    return target / "release" / "host-demo"


def node_script():
    """The Node member's script: ``TRIPGATE_NODE_MEMBER`` (as the fleet demo reads it),
    else this checkout's."""
    explicit = os.environ.get("TRIPGATE_NODE_MEMBER")
    return pathlib.Path(explicit) if explicit else REPO / "js" / "examples" / "fleet-member.mjs"


def node_missing():
    """Why the Node member cannot run here, or None."""
    js = node_script().parent.parent
    if shutil.which("node") is None:
        return "node is not on PATH"
    if not (js / "pkg" / "web" / "tripgate_wasm_bg.wasm").is_file():
        return "js/pkg is not built (bash js/scripts/test.sh builds it; tests/run-all.sh runs the Python tests first)"
    if not (js / "node_modules" / "redis").is_dir():
        return "js/node_modules/redis is not installed (npm install in js/)"
    return None


class Upstream:
    """An HTTP upstream on 127.0.0.1 that answers 200, or 503 while ``failing``."""

    def __init__(self):
        self.failing = False
        upstream = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                status = 503 if upstream.failing else 200
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def opened_at(transitions, after):
    """The first opening at or after ``after`` (unix seconds): ``(when, reason)``."""
    for at, _, to, reason in transitions:
        if at >= after and to == "open":
            return at, reason
    return None


class External:
    """A member process whose stdout lines are read on a thread: its transitions as
    ``(unix seconds, from, to, reason)``."""

    def __init__(self, label, argv):
        self.label = label
        self.transitions = []
        self.ready = threading.Event()
        self.lines = []
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("{"):
                record = json.loads(line)
                if record["type"] == "start":
                    self.ready.set()
                elif record["type"] == "transition":
                    self.transitions.append((record["t"] / 1e3, record["from"], record["to"], record["reason"]))
            else:
                fields = line.split()
                if fields[:1] == ["ready"]:
                    self.ready.set()
                elif fields[:1] == ["transition"] and len(fields) == 5:
                    self.transitions.append((int(fields[1]) / 1e6, fields[2], fields[3], fields[4]))

    @property
    def state(self):
        return self.transitions[-1][2] if self.transitions else "closed"

    def opened_at(self, after):
        return opened_at(self.transitions, after)

    def stop(self):
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
            except OSError:
                pass
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.stderr.read()


def rust_member(url, upstream):
    binary = host_demo()
    if not binary.is_file():
        pytest.fail(f"no Rust member at {binary}: cargo build --release -p host-demo (scripts/test.sh does), or set TRIPGATE_HOST_DEMO")
    return External(
        "rust",
        [str(binary), "fleet-member", "--upstream", f"127.0.0.1:{upstream.port}", "--redis", url, "--name", FLEET,
         "--key", KEY, "--label", "rust", "--quorum", "1", "--cooldown-ms", str(COOLDOWN_MS), "--probes", "1",
         "--successes", "1", "--threshold", str(THRESHOLD), "--callers", "1", "--pause-ms", "10"],
    )


def node_member(url, upstream):
    return External(
        "node",
        ["node", str(node_script()), url, FLEET, f"http://127.0.0.1:{upstream.port}/",
         "1", KEY, "node", "100", "120", f"--cooldown-ms={COOLDOWN_MS}", f"--failure-threshold={THRESHOLD}",
         "--probes=1", "--required-successes=1", "--call-timeout-ms=1000"],
    )


class PythonMember:
    """This process's member: a breaker on the real clock, a caller thread against its
    upstream every 10 ms."""

    def __init__(self, url, upstream):
        self.breaker = tripgate.CircuitBreaker(
            name=FLEET, failure_threshold=THRESHOLD, min_calls=THRESHOLD, cooldown=COOLDOWN_MS / 1e3,
            half_open_max_probes=1, half_open_required_successes=1, probe_timeout=2.0, fleet_quorum=1,
        )
        self.transitions = []
        self.breaker.on_transition(lambda t: self.transitions.append((time.time(), t.from_state, t.to_state, t.reason)))
        self.store = FleetStore.connect(url, key=KEY, member="python-member")
        self.fleet = self.store.join(FLEET, self.breaker)
        self.upstream = upstream
        self.stopping = threading.Event()
        self.slowest = 0.0
        self.thread = threading.Thread(target=self._call, daemon=True)
        self.thread.start()

    def _call(self):
        while not self.stopping.wait(0.01):
            t = time.perf_counter()
            permit = self.breaker.acquire()
            decided = time.perf_counter() - t
            if permit:
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", self.upstream.port, timeout=1)
                    conn.request("GET", "/")
                    outcome = conn.getresponse().status
                    conn.close()
                except OSError:
                    outcome = "connection-error"
                t = time.perf_counter()
                permit.record(outcome)
                decided += time.perf_counter() - t
            self.slowest = max(self.slowest, decided)

    @property
    def state(self):
        return self.breaker.state

    def opened_at(self, after):
        return opened_at(self.transitions, after)

    def stop(self):
        self.stopping.set()
        self.thread.join(5)
        self.store.close()


def run_mixed(with_node):
    redis = RedisServer()
    upstreams = {label: Upstream() for label in (["python", "rust", "node"] if with_node else ["python", "rust"])}
    members = {}
    try:
        members["rust"] = rust_member(redis.url, upstreams["rust"])
        if with_node:
            members["node"] = node_member(redis.url, upstreams["node"])
        members["python"] = PythonMember(redis.url, upstreams["python"])
        assert members["python"].fleet.ready(10), members["python"].fleet.status()
        for label, m in members.items():
            if label != "python":
                assert m.ready.wait(15), f"{label} member never ready: {m.lines} {m.stop()}"
        spread = {}
        for tripper in members:
            for m in members.values():
                eventually(f"{m} closed before {tripper} trips", lambda: m.state == "closed", timeout=15)
            started = time.time()
            upstreams[tripper].failing = True
            eventually(f"{tripper} tripped", lambda: members[tripper].opened_at(started) is not None, timeout=10)
            tripped_at, reason = members[tripper].opened_at(started)
            assert reason != "fleet-open", f"{tripper} opened on its own evidence"
            upstreams[tripper].failing = False
            for label, m in members.items():
                if label == tripper:
                    continue
                eventually(f"{label} opened by {tripper}'s trip", lambda: m.opened_at(started) is not None, timeout=5)
                at, reason = m.opened_at(started)
                assert reason == "fleet-open", f"{label} opened ({reason}) on {tripper}'s trip"
                spread[f"{tripper} -> {label}"] = at - tripped_at
            # One probe round closes everyone.
            for label, m in members.items():
                eventually(f"{label} closed after {tripper}'s outage", lambda: m.state == "closed", timeout=15)
        status = members["python"].fleet.status()
        assert status.connected and status.counts["applied"] >= len(members) - 1
        assert members["python"].slowest < 0.05, "a Python call waited"
        print("\nmixed fleet propagation (trip to fleet-open, wall clocks of one host):")
        for pair, seconds in spread.items():
            print(f"  {pair}: {seconds * 1e3:.1f} ms")
        print(f"  median {statistics.median(spread.values()) * 1e3:.1f} ms, max {max(spread.values()) * 1e3:.1f} ms")
        return spread
    finally:
        for label, m in members.items():
            m.stop()
        for u in upstreams.values():
            u.close()
        redis.kill()


def test_python_and_rust_members_share_a_fleet():
    spread = run_mixed(with_node=False)
    assert max(spread.values()) < 1.0


def test_python_rust_and_node_members_share_a_fleet():
    missing = node_missing()
    if missing and os.environ.get("TRIPGATE_NODE_MEMBER_REQUIRED"):
        pytest.fail(f"the Node member was built for this run, yet: {missing}")
    if missing:
        pytest.skip(f"no Node member: {missing}")
    spread = run_mixed(with_node=True)
    assert max(spread.values()) < 1.0
