"""The retry vector (tests/vectors/retry/retry.json) through the extension: each case's
policy as ``breaker.retries(...)`` options on a breaker whose ``FakeClock`` reads each
step's ``at-ms``; ``deposit`` steps call ``retries.deposit()``, ``next`` steps
``retries.next(...)``, whose wait (exact to the nanosecond) or reason to stop must be the
vector's. The decisions and the jitter are the core's, as in every host."""

import json
import pathlib

import pytest

import tripgate

VECTOR = pathlib.Path(__file__).resolve().parents[2] / "tests" / "vectors" / "retry" / "retry.json"
DATA = json.loads(VECTOR.read_text())


def options_of(policy):
    """A vector policy (over its defaults) as ``retries(...)`` options, in seconds."""
    merged = {**DATA["defaults"], **policy}
    options = {}
    for key, value in merged.items():
        if key.endswith("-ms"):
            options[key[:-3].replace("-", "_")] = value / 1000
        else:
            options[key.replace("-", "_")] = value
    return options


def run_case(case):
    clock = tripgate.FakeClock()
    retries = tripgate.CircuitBreaker(clock=clock).retries(**options_of(case["policy"]))
    failed = []
    for n, step in enumerate(case["steps"]):
        if step["op"] == "deposit":
            for _ in range(step["count"]):
                retries.deposit()
            continue
        clock.set_ns(step["at-ms"] * 1_000_000)
        wait, stop = retries.next(step["attempt"], step["class"], step["retry-after-ms"] / 1000)
        got = {"stop": stop} if wait is None else {"retry-ns": round(wait * 1e9)}
        if got != step["expect"]:
            failed.append(f"step {n}: got {got}, expected {step['expect']}")
    return failed


@pytest.mark.parametrize("case", DATA["cases"], ids=lambda c: c["name"])
def test_each_case_decides_as_the_vector_says(case):
    assert run_case(case) == []


def test_the_vector_covers_every_reason_to_stop_and_the_policy_reads_back():
    stops = {
        step["expect"].get("stop")
        for case in DATA["cases"]
        for step in case["steps"]
        if step["op"] == "next"
    }
    assert stops >= {"answered", "attempts", "budget", "stay-away", None}
    retries = tripgate.CircuitBreaker().retries(**options_of({}))
    assert (retries.max_attempts, retries.base_delay, retries.max_delay) == (3, 0.05, 2.0)
    assert (retries.budget_percent, retries.min_retries_per_second, retries.seed) == (20, 10, 0)


def test_next_refuses_what_is_no_attempt_or_class():
    retries = tripgate.CircuitBreaker().retries()
    with pytest.raises(ValueError) as caught:
        retries.next(0, "fault")
    assert caught.value.option == "attempt"
    with pytest.raises(ValueError, match="success, fault or neutral") as caught:
        retries.next(1, "failure")
    assert caught.value.option == "outcome_class"
    with pytest.raises(ValueError, match="retry_after"):
        retries.next(1, "fault", -1)
