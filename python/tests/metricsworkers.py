"""Pre-forked workers under prometheus_client's multiprocess mode, each serving its own
breakers as the README's recipe does (a registry of its own on the first free port of a
range): run as ``python metricsworkers.py <base-port> <multiproc-dir>``, it forks two
workers, each trips its breaker a different number of times and serves; the parent
scrapes every port of the range and the multiprocess registry, and prints one JSON line."""

import json
import os
import sys
import time
import urllib.request

BASE, FOLDER = int(sys.argv[1]), sys.argv[2]
os.environ["PROMETHEUS_MULTIPROC_DIR"] = FOLDER

import tripgate  # noqa: E402
from prometheus_client import CollectorRegistry, Counter, generate_latest, start_http_server  # noqa: E402
from prometheus_client.multiprocess import MultiProcessCollector  # noqa: E402
from tripgate.prometheus import TripgateCollector  # noqa: E402

WORKERS = 2
breakers = tripgate.Registry(clock=tripgate.FakeClock(1.0), failure_threshold=1, min_calls=1)
requests = Counter("app_requests", "the app's own metric, which multiprocess mode aggregates")


def serve_own():
    """The README's post_fork recipe."""
    own = CollectorRegistry()
    own.register(TripgateCollector(breakers))
    for port in range(BASE, BASE + 2 * WORKERS):
        try:
            start_http_server(port, addr="127.0.0.1", registry=own)
            return port
        except OSError:
            continue
    return None


def worker(trips):
    for _ in range(trips):
        requests.inc()
        breakers.get("payments").acquire().record("status:503")
        breakers["payments"].reset()
    serve_own()
    time.sleep(60)


def scrape(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
            return answer.read().decode()
    except OSError:
        return None


children = []
for trips in (1, 2):
    pid = os.fork()
    if pid == 0:
        worker(trips)
        os._exit(0)
    children.append(pid)
try:
    deadline = time.monotonic() + 10
    found = {}
    while time.monotonic() < deadline:
        found = {p: t for p in range(BASE, BASE + 2 * WORKERS) if (t := scrape(p))}
        if len(found) == WORKERS:
            break
        time.sleep(0.05)
    combined = CollectorRegistry()
    MultiProcessCollector(combined)
    print(json.dumps({"workers": list(found.values()), "multiprocess": generate_latest(combined).decode()}))
finally:
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
