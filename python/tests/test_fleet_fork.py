"""Fleet mode across ``fork``: a pre-forking server (gunicorn ``--preload``, uWSGI,
``multiprocessing``) makes its breakers, and maybe its store, before it forks its workers.
A store made before the fork carries on in each child by itself: a fresh thread and fresh
connections, each membership made anew, so the child follows the fleet, probes when its
turn comes, and never touches the parent's connections. Real ``os.fork()`` (forkcase.py,
run as its own process so pytest itself is never forked) and real gunicorn, on a real
redis-server."""

import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

pytest.importorskip("redis")

from fleetmembers import server  # noqa: E402,F401 - a fixture
from redisserver import free_port  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def forked(url, name, case):
    done = subprocess.run(
        [sys.executable, str(HERE / "forkcase.py"), url, name, case],
        capture_output=True, text=True, timeout=120, cwd=HERE,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def assert_round(seen):
    """A child that follows its fleet: connected, tripped, took the lease, probed alone
    and closed the fleet."""
    assert "error" not in seen, seen
    assert seen["ready"] and seen["tripped"] and seen["published"], seen
    assert seen["probed"], f"the child was never given its probe: {seen}"
    assert seen["others_wait"] and seen["closed"] and seen["close_published"], seen
    assert seen["status"]["connected"] and not seen["status"]["degraded"], seen


def test_a_store_made_before_fork_carries_on_in_each_child(server):
    out = forked(server.url, "fork-inherited", "inherited")
    for seen in out["children"]:
        assert_round(seen)
        # Its own membership, made anew in the child: a second one is refused, saying so.
        assert "member of a fleet already" in seen["joined_twice"], seen
    assert len({seen["pid"] for seen in out["children"]}) == 2
    # The parent's connections were never the children's: it stayed up and heard both
    # children's rounds (a fleet-open and a fleet-close each).
    parent = out["parent"]
    assert parent["connected"] and parent["disconnects"] == 0, parent
    assert parent["heard"] and parent["reasons"].count("fleet-open") == 2, parent


def test_the_per_worker_recipe_joins_a_breaker_made_before_fork(server):
    for seen in forked(server.url, "fork-recipe", "recipe")["children"]:
        assert_round(seen)


def wait_for_port(port, process, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"gunicorn exited: {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"gunicorn did not listen on {port} within {timeout} s")


def test_gunicorn_preload_workers_follow_the_fleet(server):
    pytest.importorskip("gunicorn", reason="gunicorn is in requirements-test.txt")
    port = free_port()
    env = {**os.environ, "TRIPGATE_REDIS_URL": server.url, "TRIPGATE_FLEET": "fork-gunicorn"}
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--preload", "--workers", "2", "--bind", f"127.0.0.1:{port}",
         "--timeout", "60", "gunicorn_app:app"],
        cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, process)
        for _ in range(3):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as answer:
                seen = json.loads(answer.read())
            assert seen["pid"] != seen["master"]
            assert_round(seen)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
