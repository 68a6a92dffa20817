"""The bench runs and reports every figure (one quick run). It asserts no speed: speed is
the bench's to measure (bench/README.md), never a test's."""

import json
import pathlib
import subprocess
import sys

import pytest

BENCH = pathlib.Path(__file__).resolve().parents[1] / "bench" / "bench.py"


def test_the_bench_runs_with_its_peers(tmp_path):
    for peer in ("pybreaker", "circuitbreaker", "aiobreaker", "purgatory"):
        pytest.importorskip(peer)
    out = tmp_path / "runs.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--runs", "1", "--quick", "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = json.loads(out.read_text())
    for name in ("tripgate call", "pybreaker call", "reject tripgate acquire (value)", "reject pybreaker (raises)",
                 "tripgate call_async", "aiobreaker call_async", "purgatory @breaker"):
        assert run["figures"][name] > 0, name
    memory = run["memory"]
    assert memory["in flight"] == 0 and memory["calls"] == 2 * 10**5
    assert "| closed: tripgate call |" in done.stdout
