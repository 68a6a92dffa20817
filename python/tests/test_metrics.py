"""The metrics scenario every host runs (tests/metrics/scenario.json): the prometheus_client
collector's exposition equals tests/metrics/expected.prom (normalised) and passes
promtool."""

import json
import shutil
import subprocess

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client import CollectorRegistry, generate_latest

import tripgate
from tripgate.prometheus import TripgateCollector

from conftest import METRICS, options_of
from exposition import parse


def run_scenario():
    scenario = json.loads((METRICS / "scenario.json").read_text())
    clock = tripgate.FakeClock()
    registry = tripgate.Registry(clock=clock)
    for spec in scenario["breakers"]:
        registry.get(spec["name"], **options_of(spec["config"]))
    held = {}
    for step in scenario["steps"]:
        if "at-ms" in step:
            clock.set_ns(step["at-ms"] * 1_000_000)
        if "calls" in step:
            breaker = registry[step["breaker"]]
            for _ in range(step["calls"]):
                permit = breaker.acquire()
                if permit:
                    permit.record(step["outcome"])
        elif "hold" in step:
            permit = registry[step["breaker"]].acquire()
            assert permit, step
            held[step["hold"]] = permit
        elif "record" in step:
            held.pop(step["record"]).record(step["outcome"])
        elif "manual" in step:
            getattr(registry[step["breaker"]], step["manual"])()
    return registry, held


def exposition():
    registry, held = run_scenario()
    prom = CollectorRegistry()
    prom.register(TripgateCollector(registry))
    text = generate_latest(prom).decode()
    del held
    return text


def test_the_exposition_equals_expected_prom():
    got = parse(exposition())
    want = parse((METRICS / "expected.prom").read_text())
    assert sorted(got) == sorted(want)
    for name, family in want.items():
        assert got[name]["help"] == family["help"], name
        assert got[name]["type"] == family["type"], name
        assert got[name]["samples"] == family["samples"], name


def test_promtool_accepts_the_exposition(tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is not installed (tests/setup.sh installs it)")
    result = subprocess.run(
        [promtool, "check", "metrics"], input=exposition(), capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_one_breaker_and_two_collectors_write_each_family_once():
    clock = tripgate.FakeClock()
    a = tripgate.CircuitBreaker(name="a", clock=clock)
    b = tripgate.CircuitBreaker(name="b", clock=clock)
    prom = CollectorRegistry()
    prom.register(TripgateCollector([a, b]))
    text = generate_latest(prom).decode()
    assert text.count("# HELP tripgate_state ") == 1
    assert 'tripgate_state{breaker="a",state="closed"} 1.0' in text
    assert 'tripgate_state{breaker="b",state="closed"} 1.0' in text
