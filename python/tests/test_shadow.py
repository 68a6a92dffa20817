"""Shadow mode in the package (SPEC.md § Shadow mode): the breaker decides and counts as it
would enforcing, and admits every call; what it would have turned away shows as a shadow
permit, in ``metrics()["shadow_rejected"]`` and in the Prometheus family
``tripgate_shadow_rejections_total``. The shared vectors 62-64 run in test_vectors.py;
these are the package's own ways in (the option, ``call``, decorators, ``with``, the
collector)."""

import pytest

import tripgate

from exposition import parse


def tripped(**options):
    clock = tripgate.FakeClock()
    b = tripgate.CircuitBreaker(clock=clock, failure_threshold=2, min_calls=2, cooldown=10, **options)
    for _ in range(2):
        b.acquire().record("status:503")
    return b, clock


def test_the_option_is_a_bool_at_creation_and_in_reconfigure():
    assert ("shadow", "shadow", "flag") in tripgate.CONFIG_FIELDS
    tripgate.CircuitBreaker(shadow=True)
    tripgate.CircuitBreaker(shadow=False)
    tripgate.CircuitBreaker(shadow=None)  # not given: off
    for value in (1, 0, "yes", 1.0, [True]):
        with pytest.raises(TypeError) as caught:
            tripgate.CircuitBreaker(shadow=value)
        assert caught.value.option == "shadow"
        assert f"shadow must be a bool, not {type(value).__name__}" in str(caught.value)
        with pytest.raises(TypeError, match="shadow must be a bool"):
            tripgate.CircuitBreaker().reconfigure(shadow=value)
    with pytest.raises(TypeError, match="did you mean shadow"):
        tripgate.CircuitBreaker(shadow_ms=True)


def test_a_call_the_breaker_would_reject_runs_on_a_shadow_permit():
    b, clock = tripped(shadow=True)
    assert b.state == "open"
    permit = b.acquire()
    assert permit and permit.shadow and not permit.probe
    assert repr(permit) == "<Permit shadow pending>"
    # Its outcome is classified and counts nothing.
    assert permit.record("success") == "success" and permit.stale is False
    assert b.call(lambda: "ran") == "ran"

    @b
    def decorated():
        return "ran too"

    assert decorated() == "ran too"
    with b as block:
        assert block.shadow
    m = b.metrics()
    assert m["shadow_rejected"] == {"open": 4, "probing": 0, "isolated": 0, "saturated": 0, "probing-elsewhere": 0}
    assert m["rejected"]["open"] == 0
    assert (m["admitted_total"], m["successes_total"], m["faults_total"]) == (2, 0, 2)
    # The breaker keeps time as enforcing: half-open after its cooldown, a real probe.
    clock.advance(10)
    probe = b.acquire()
    assert probe.probe and not probe.shadow
    assert b.acquire().shadow  # every probe slot taken: a shadow "probing"
    assert b.metrics()["shadow_rejected"]["probing"] == 1


def test_an_admitted_call_is_no_shadow_and_the_reasons_follow_the_core():
    b = tripgate.CircuitBreaker(clock=tripgate.FakeClock(), shadow=True, max_in_flight=1)
    first = b.acquire()
    assert first and not first.shadow
    second = b.acquire()
    assert second.shadow
    assert b.metrics()["in_flight"] == 1  # a shadow permit holds no place in flight
    b.isolate()
    third = b.acquire()
    assert third.shadow
    m = b.metrics()
    assert (m["shadow_rejected"]["saturated"], m["shadow_rejected"]["isolated"]) == (1, 1)
    assert tuple(m["shadow_rejected"]) == tripgate.REJECT_REASONS == tuple(m["rejected"])


def test_switching_it_on_and_off_keeps_the_state_and_counts():
    b, _ = tripped()
    assert not b.acquire()
    done = b.reconfigure(failure_threshold=2, min_calls=2, cooldown=10, shadow=True)
    assert done.window_kept and b.state == "open"
    assert b.call(lambda: 1) == 1
    b.reconfigure(failure_threshold=2, min_calls=2, cooldown=10)
    with pytest.raises(tripgate.CircuitOpenError):
        b.call(lambda: 1)
    m = b.metrics()
    assert (m["rejected"]["open"], m["shadow_rejected"]["open"], m["calls"]) == (2, 1, 2)


def test_the_collector_writes_the_shadow_family():
    pytest.importorskip("prometheus_client")
    from prometheus_client import CollectorRegistry, generate_latest

    from tripgate.prometheus import TripgateCollector

    b, _ = tripped(shadow=True, name="ledger")
    for _ in range(3):
        b.acquire().record()
    prom = CollectorRegistry()
    prom.register(TripgateCollector(b))
    family = parse(generate_latest(prom).decode())["tripgate_shadow_rejections_total"]
    assert family["type"] == "counter"
    assert family["help"].startswith("Calls shadow mode let through")
    samples = {dict(labels)["reason"]: value for (_, labels), value in family["samples"].items()}
    assert samples == {"open": 3.0, "probing": 0.0, "isolated": 0.0, "saturated": 0.0, "probing-elsewhere": 0.0}
