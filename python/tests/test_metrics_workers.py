"""Metrics of pre-forked workers under prometheus_client's multiprocess mode: its
aggregated registry holds only prometheus_client's own metric objects (no ``tripgate_*``
family), so each worker serves its own breakers, as the README's recipe does
(metricsworkers.py, real ``os.fork()`` and real HTTP on 127.0.0.1)."""

import json
import pathlib
import subprocess
import sys

import pytest

from redisserver import free_port

pytest.importorskip("prometheus_client")
HERE = pathlib.Path(__file__).resolve().parent
RESETS = 'tripgate_transitions_total{breaker="payments",from="open",reason="reset",to="closed"}'


def test_each_worker_serves_its_own_breakers(tmp_path):
    base = free_port()
    done = subprocess.run(
        [sys.executable, str(HERE / "metricsworkers.py"), str(base), str(tmp_path)],
        capture_output=True, text=True, timeout=60, cwd=HERE,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert "app_requests_total 3.0" in out["multiprocess"]
    assert "tripgate_" not in out["multiprocess"]
    counts = sorted(
        float(line.rsplit(" ", 1)[1]) for text in out["workers"] for line in text.splitlines() if line.startswith(RESETS)
    )
    assert counts == [1.0, 2.0], out["workers"]
