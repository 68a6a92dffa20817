"""Live reconfiguration (SPEC.md § Reconfiguration) through the package: the options of
``CircuitBreaker(...)`` put in force on a live breaker, refused as at creation (the breaker
unchanged), permits and probes out still counted, transitions heard by the listeners, and
a registry that reconfigures by name or makes the breaker. The shared vectors 58-61 run in
test_vectors.py."""

import random

import pytest

import tripgate
from tripgate import CircuitBreaker, FakeClock, Registry, _native

from test_hostile import ODD_VALUES, OPTIONS


def fault(breaker):
    permit = breaker.acquire()
    assert permit, permit
    return permit.record("status:503")


def counts(breaker):
    """What a refused reconfiguration must leave as it was."""
    m = breaker.metrics()
    keys = ("state", "epoch", "calls", "faults", "in_flight", "admitted_total", "transitions_total")
    return {key: m[key] for key in keys}


BAD = [
    ({"failure_threshold": 0}, ValueError, "failure_threshold", "failure_threshold must be >= 1"),
    ({"cooldown": "soon"}, TypeError, "cooldown", "cooldown must be a number of seconds or a timedelta, not str"),
    ({"cooldown": 5, "max_cooldown": 1}, ValueError, "max_cooldown", "max_cooldown must be >= cooldown"),
    ({"cooldown_ms": 5}, TypeError, "cooldown_ms", "unknown option cooldown_ms (did you mean cooldown?)"),
    ({"window_calls": 20, "window": 10}, ValueError, "window_calls", "window_calls must not be set with window"),
    ({"fault_statuses": [700]}, ValueError, "fault_statuses", "fault_statuses must be a list of valid codes"),
]


@pytest.mark.parametrize("options, kind, option, message", BAD, ids=[o for _, _, o, _ in BAD])
def test_a_bad_config_raises_as_at_creation_and_changes_nothing(make, options, kind, option, message):
    r = make(failure_threshold=3, min_calls=3, cooldown=5)
    b = r.breaker
    fault(b)
    fault(b)
    before = counts(b)
    with pytest.raises(kind) as caught:
        b.reconfigure(**options)
    assert caught.value.option == option
    assert message in str(caught.value)
    with pytest.raises(kind) as made:
        CircuitBreaker(**options)
    assert type(made.value) is type(caught.value) and str(made.value) == str(caught.value)
    assert counts(b) == before and r.take() == []
    # The old rules still decide: the third fault trips, for the old cooldown.
    fault(b)
    assert b.state == "open" and r.take() == [("closed", "open", "failure-threshold")]
    assert b.acquire().retry_after == 5


def test_options_are_keywords():
    with pytest.raises(TypeError):
        CircuitBreaker().reconfigure(5)


@pytest.mark.parametrize(
    "options, option",
    [
        ({"slow_call_duration": 2, "fleet_quorum": 2}, "slow_call_duration"),
        ({"slow_call_duration": 1, "fleet_quorum": 3}, "fleet_quorum"),
        # Not given is off: a change too.
        ({"fleet_quorum": 2}, "slow_call_duration"),
        ({"slow_call_duration": 1}, "fleet_quorum"),
    ],
)
def test_fleet_quorum_and_slow_call_duration_cannot_change(options, option):
    b = CircuitBreaker(clock=FakeClock(), slow_call_duration=1, fleet_quorum=2)
    before = counts(b)
    with pytest.raises(ValueError) as caught:
        b.reconfigure(**options)
    assert caught.value.option == option
    assert f"{option} cannot change on a live breaker" in str(caught.value)
    assert counts(b) == before
    # As they were made, they pass.
    done = b.reconfigure(slow_call_duration=1, fleet_quorum=2, failure_threshold=2, min_calls=2)
    assert done.window_kept and done.transitions == []
    assert b.fleet_status()["enabled"]
    fault(b)
    fault(b)
    assert b.state == "open"


def test_the_packages_own_options_may_be_given_as_made_never_changed():
    clock = FakeClock()

    def fallback(error):
        return "cached"

    b = CircuitBreaker(name="payments", clock=clock, timeout=2, fallback=fallback, failure_threshold=2, min_calls=2)
    done = b.reconfigure(name="payments", clock=clock, timeout=2.0, fallback=fallback, failure_threshold=3, min_calls=3)
    assert done.window_kept
    for option, value in [
        ("name", "search"),
        ("clock", FakeClock()),
        ("timeout", 3),
        ("fallback", None),
        ("classify", lambda value: None),
        ("on_listener_error", print),
    ]:
        with pytest.raises(ValueError) as caught:
            b.reconfigure(failure_threshold=1, min_calls=1, **{option: value})
        assert caught.value.option == option
        assert str(caught.value) == f"{option} cannot change on a live breaker"
    # A wrong type is the constructor's TypeError.
    with pytest.raises(TypeError) as caught:
        b.reconfigure(timeout="2s")
    assert caught.value.option == "timeout"
    assert (b.name, b.timeout) == ("payments", 2.0)
    # The accepted configuration stands: two faults leave it closed, a third trips.
    fault(b)
    fault(b)
    assert b.state == "closed"
    assert b.call(lambda: 1 / 0) == "cached"
    assert b.state == "open"


def test_permits_and_probes_out_before_a_reconfigure_count_by_the_new_rules(make):
    r = make(failure_threshold=5, min_calls=5, cooldown=1)
    b = r.breaker
    fault(b)
    fault(b)
    out = b.acquire()
    done = b.reconfigure(failure_threshold=3, min_calls=3, cooldown=1)
    assert done.window_kept and done.transitions == []
    assert b.metrics()["in_flight"] == 1
    assert out.record("status:503") == "fault" and out.stale is False
    assert b.state == "open" and r.take() == [("closed", "open", "failure-threshold")]
    # A probe out across a reconfigure: its success is judged by the new rule (one success
    # closes).
    r.clock.advance(1)
    probe = b.acquire()
    assert probe and probe.probe
    r.take()
    b.reconfigure(failure_threshold=3, min_calls=3, cooldown=1, half_open_required_successes=1)
    assert b.metrics()["probes_out"] == 1
    assert probe.record("success") == "success" and probe.stale is False
    assert b.state == "closed" and r.take() == [("half-open", "closed", "probes-succeeded")]


def test_a_reshaped_window_starts_empty(make):
    r = make(failure_threshold=3, min_calls=3)
    b = r.breaker
    fault(b)
    fault(b)
    done = b.reconfigure(failure_threshold=3, min_calls=3, window_calls=10)
    assert done.window_kept is False
    assert b.metrics()["calls"] == 0 and b.metrics()["faults"] == 0
    fault(b)
    fault(b)
    assert b.state == "closed"
    assert b.reconfigure(failure_threshold=2, min_calls=2, window_calls=10).window_kept is True
    assert b.metrics()["faults"] == 2 and b.state == "closed"
    fault(b)
    assert b.state == "open"


def test_the_transitions_it_makes_reach_the_listeners_once(make):
    r = make(failure_threshold=1, min_calls=1, cooldown=1)
    b = r.breaker
    fault(b)
    assert r.take() == [("closed", "open", "failure-threshold")]
    r.clock.advance(2)
    done = b.reconfigure(failure_threshold=2, min_calls=2, cooldown=1)
    got = [t.as_tuple() for t in done.transitions]
    assert got == [("open", "half-open", "cooldown-elapsed")]
    assert r.take() == got
    assert all(isinstance(t, tripgate.Transition) for t in done.transitions)
    assert done.transitions[0].epoch == b.metrics()["epoch"] and done.transitions[0].at == 1.0
    assert repr(done) == "<Reconfigured: window kept, 1 transition>"
    # Made under the old configuration, the new one in force after it.
    assert b.state == "half-open" and b.reconfigure(cooldown=1).transitions == []


def test_a_listener_that_raises_never_breaks_the_reconfigure():
    clock, heard = FakeClock(), []
    b = CircuitBreaker(
        clock=clock, failure_threshold=1, min_calls=1, cooldown=1,
        on_listener_error=lambda error, transition: heard.append((type(error), transition.to_state)),
    )

    @b.on_transition
    def broken(transition):
        raise RuntimeError("listener")

    fault(b)
    clock.advance(1)
    done = b.reconfigure(failure_threshold=1, min_calls=1, cooldown=2)
    assert len(done.transitions) == 1
    assert heard == [(RuntimeError, "open"), (RuntimeError, "half-open")]
    assert b.metrics()["listener_errors"] == 2


def test_decorated_functions_and_guards_follow_the_new_configuration():
    b = CircuitBreaker(clock=FakeClock(), failure_threshold=5, min_calls=5, fallback="cached")

    def refused():
        raise ConnectionError("refused")

    down = b(refused)
    guard = b.guard(fallback=None)
    assert down() == "cached" and b.state == "closed"
    b.reconfigure(failure_threshold=2, min_calls=2, fallback="cached")
    assert guard.call(refused) is None
    assert b.state == "open"
    assert guard.call(lambda: "ran") is None and down() == "cached"


def test_a_fleet_member_joined_after_a_reconfigure_votes_within_the_new_cooldown():
    # A member paces itself by the cooldown it joined with (its votes count within one):
    # leaving and joining again after a reconfigure takes the new one.
    b = CircuitBreaker(clock=FakeClock(), fleet_quorum=1, cooldown=5)
    waker = _native.FleetWaker()
    first = _native.FleetMember(b, "payments", "00000000000000aa", 10**9)
    first.join(waker)
    b.reconfigure(fleet_quorum=1, cooldown=9)
    first.leave()
    member = _native.FleetMember(b, "payments", "00000000000000aa", 10**9)
    member.join(waker)
    assert member.step("up", 0, None)[0] == "read"
    assert member.step("reply", 0, [None, -2, None]) is None
    for _ in range(5):
        fault(b)
    command = member.step("changed", 0, None)
    assert command is not None and command[0] == "vote" and command[1]["window-ms"] == 9000


def test_a_registry_reconfigures_by_name_or_makes_the_breaker():
    clock = FakeClock()
    registry = Registry(clock=clock, failure_threshold=3, min_calls=3, timeout=2)
    assert registry.reconfigure("orders", cooldown=5) is None
    orders = registry["orders"]
    assert (orders.name, orders.timeout) == ("orders", 2.0)
    for _ in range(3):
        fault(orders)
    assert orders.state == "open" and orders.acquire().retry_after == 5
    # A breaker made with its own timeout keeps it: only the options passed are checked.
    search = registry.get("search", timeout=4)
    done = registry.reconfigure("search", failure_threshold=1, min_calls=1)
    assert isinstance(done, tripgate.Reconfigured) and done.window_kept
    assert registry["search"] is search and search.timeout == 4.0
    fault(search)
    assert search.state == "open"
    # The same breaker, its state kept, under the defaults updated with the options.
    done = registry.reconfigure("orders", cooldown=5, failure_threshold=1, min_calls=1)
    assert isinstance(done, tripgate.Reconfigured) and registry["orders"] is orders
    assert orders.state == "open"
    # Bad options raise, change nothing and make nothing.
    before = counts(orders)
    with pytest.raises(ValueError) as caught:
        registry.reconfigure("orders", failure_threshold=0)
    assert caught.value.option == "failure_threshold" and counts(orders) == before
    with pytest.raises(ValueError):
        registry.reconfigure("ledger", failure_threshold=0)
    with pytest.raises(ValueError) as caught:
        registry.reconfigure("orders", timeout=3)
    assert caught.value.option == "timeout"
    assert list(registry) == ["orders", "search"]


def test_random_options_are_refused_cleanly_or_put_in_force():
    rng = random.Random(58)
    clock = FakeClock()
    b = CircuitBreaker(clock=clock)
    accepted = refused = 0
    for _ in range(2000):
        options = {rng.choice(OPTIONS): rng.choice(ODD_VALUES) for _ in range(rng.randint(1, 4))}
        before = counts(b)
        try:
            done = b.reconfigure(**options)
        except (ValueError, TypeError) as error:
            assert getattr(error, "option", None), (options, error)
            assert str(error) and counts(b) == before, options
            refused += 1
        except BaseException as error:  # noqa: BLE001
            pytest.fail(f"{options}: {type(error).__name__}: {error}")
        else:
            assert isinstance(done, tripgate.Reconfigured)
            accepted += 1
        p = b.acquire()
        if p:
            p.record(rng.choice(["success", "status:503"]))
        clock.advance(rng.choice([0, 0.5, 20]))
    assert accepted and refused
