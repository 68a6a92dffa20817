"""The Python API: options, the guarded call, permits, rejections, context managers,
listeners, manual states, export and import, metrics. Time comes from a FakeClock."""

import datetime
import gc
import logging
import threading
import weakref

import pytest

import tripgate
from tripgate import CircuitBreaker, CircuitOpenError, FakeClock


class Response:
    """A response as HTTP clients shape it (duck-typed on status_code)."""

    def __init__(self, status_code):
        self.status_code = status_code


def trip(recorder, n=5):
    for _ in range(n):
        recorder.breaker.acquire().record("status:503")


# Options


def test_defaults_are_the_specs():
    b = CircuitBreaker(clock=FakeClock())
    assert b.state == "closed"
    assert b.name == "default"
    assert b.timeout is None
    m = b.metrics()
    assert m["epoch"] == 0 and m["admitted_total"] == 0


@pytest.mark.parametrize(
    "options,kind,option,text",
    [
        ({"failure_threshold": 0}, ValueError, "failure_threshold", "failure_threshold must be >= 1"),
        ({"failure_threshold": -3}, ValueError, "failure_threshold", "failure_threshold must be >= 1"),
        ({"failure_threshold": "5"}, TypeError, "failure_threshold", "failure_threshold must be an int, not str"),
        ({"failure_threshold": True}, TypeError, "failure_threshold", "must be an int, not bool"),
        ({"failure_threshold": 2**32}, ValueError, "failure_threshold", "failure_threshold must be <= 4294967295"),
        ({"buckets": 65}, ValueError, "buckets", "buckets must be between 1 and 64"),
        ({"cooldown": 0}, ValueError, "cooldown", "cooldown must be > 0"),
        ({"cooldown": -1.5}, ValueError, "cooldown", "cooldown must be > 0"),
        ({"cooldown": float("nan")}, ValueError, "cooldown", "finite"),
        ({"cooldown": "15s"}, TypeError, "cooldown", "cooldown must be a number of seconds or a timedelta"),
        ({"max_cooldown": 1, "cooldown": 2}, ValueError, "max_cooldown", "max_cooldown must be >= cooldown"),
        ({"jitter_percent": -1}, ValueError, "jitter_percent", "jitter_percent must be between 0 and 100"),
        ({"backoff_factor": 0.5}, ValueError, "backoff_factor", "between 1 and 1000"),
        ({"fault_statuses": [503, 600]}, ValueError, "fault_statuses", "must be a list of valid codes"),
        ({"fault_statuses": "503"}, TypeError, "fault_statuses", "iterable of ints"),
        ({"fault_grpc_codes": [17]}, ValueError, "fault_grpc_codes", "must be a list of valid codes"),
        ({"jitter_seed": -1}, ValueError, "jitter_seed", "between 0 and 18446744073709551615"),
        (
            {"slow_call_duration": 0.2, "max_in_flight": 2},
            ValueError,
            "max_in_flight",
            "max_in_flight must be >= failure_threshold when slow_call_duration is set",
        ),
        ({"cooldown_ms": 100}, TypeError, "cooldown_ms", "unknown option cooldown_ms (did you mean cooldown?)"),
        ({"failureThreshold": 3}, TypeError, "failureThreshold", "did you mean failure_threshold?"),
        ({"timeout": 0}, ValueError, "timeout", "timeout must be > 0"),
        ({"clock": 5}, TypeError, "clock", "clock must be a tripgate.FakeClock or a callable"),
        ({"clock": lambda: "now"}, ValueError, "clock", "clock must return monotonic seconds"),
        ({"name": 3}, TypeError, "name", "name must be a str"),
        ({"classify": 3}, TypeError, "classify", "classify must be callable"),
    ],
)
def test_bad_options_name_the_option(options, kind, option, text):
    options.setdefault("clock", FakeClock())
    with pytest.raises(kind) as caught:
        CircuitBreaker(**options)
    assert caught.value.option == option
    assert text in str(caught.value)


def test_durations_take_seconds_and_timedeltas_and_none_is_the_default():
    clock = FakeClock()
    b = CircuitBreaker(
        clock=clock, cooldown=datetime.timedelta(milliseconds=1500), failure_rate=None
    )
    trip_b = [b.acquire().record(503) for _ in range(5)]
    assert trip_b[-1] == "fault" and b.state == "open"
    clock.advance(1.499)
    assert b.state == "open"
    clock.advance(0.001)
    assert b.state == "half-open"


# The guarded call


def test_call_returns_the_result_and_counts_a_503_response_as_a_fault(make):
    r = make(failure_threshold=2, min_calls=2)
    assert r.breaker.call(lambda x, y=0: x + y, 1, y=2) == 3
    assert r.breaker.call(Response, 503).status_code == 503
    assert r.breaker.call(Response, 503).status_code == 503
    assert r.take() == [("closed", "open", "failure-threshold")]


def test_call_raises_circuit_open_error_with_retry_after(make):
    r = make(cooldown=10)
    trip(r)
    r.clock.advance(2.5)
    ran = []
    with pytest.raises(CircuitOpenError) as caught:
        r.breaker.call(ran.append, 1)
    assert ran == []
    error = caught.value
    assert (error.reason, error.state, error.retry_after, error.breaker) == ("open", "open", 7.5, "default")
    assert str(error) == "circuit breaker 'default' rejected the call (open, open); retry after 7.5s"


def test_call_reraises_the_callers_exception_after_recording_it(make):
    r = make(failure_threshold=1, min_calls=1)

    def refused():
        raise ConnectionRefusedError("no")

    with pytest.raises(ConnectionRefusedError):
        r.breaker.call(refused)
    assert r.take() == [("closed", "open", "failure-threshold")]


def test_a_fallback_replaces_a_rejection_and_a_failure_but_not_a_result(make):
    r = make(failure_threshold=1, min_calls=1, fallback=lambda error: f"fallback: {type(error).__name__}")

    def boom():
        raise ConnectionResetError()

    assert r.breaker.call(lambda: Response(503)).status_code == 503  # returned as is
    assert r.breaker.state == "open"
    assert r.breaker.call(lambda: 1) == "fallback: CircuitOpenError"
    r.breaker.reset()
    assert r.breaker.call(boom) == "fallback: ConnectionResetError"
    assert CircuitBreaker(clock=FakeClock(), fallback=None).guard().call(boom) is None


def test_a_fallback_value_and_none(make):
    r = make(fallback=None)
    r.breaker.isolate()
    assert r.breaker.call(lambda: 1) is None
    assert r.breaker.guard(fallback={"queued": True}).call(lambda: 1) == {"queued": True}


def test_a_sync_call_past_its_timeout_is_a_timeout_fault(make):
    r = make(failure_threshold=1, min_calls=1, timeout=1.0)

    def slow():
        r.clock.advance(1.5)
        return "late"

    assert r.breaker.call(slow) == "late"
    assert r.take() == [("closed", "open", "failure-threshold")]
    assert r.breaker.metrics()["faults_total"] == 1


def test_keyboard_interrupt_is_cancelled_and_never_falls_back(make):
    r = make(failure_threshold=1, min_calls=1, fallback="fb")

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        r.breaker.call(interrupted)
    m = r.breaker.metrics()
    assert (m["state"], m["faults_total"], m["successes_total"], m["in_flight"]) == ("closed", 0, 0, 0)


def test_decorators_sync_and_guarded(make):
    r = make(failure_threshold=1, min_calls=1)

    @r.breaker
    def charge(amount):
        return {"charged": amount}

    assert charge(5) == {"charged": 5}
    assert charge.breaker is r.breaker
    assert charge.__name__ == "charge"

    @r.breaker.guard(fallback="later")
    def fails():
        raise TimeoutError

    assert fails() == "later"
    assert r.breaker.state == "open"
    assert charge.__wrapped__(1) == {"charged": 1}
    with pytest.raises(CircuitOpenError):
        charge(5)


def test_a_custom_classifier_replaces_the_rules(make):
    r = make(failure_threshold=1, min_calls=1, classify=lambda v: "ignored" if isinstance(v, ValueError) else "failure")
    with pytest.raises(ValueError):
        r.breaker.call(int, "x")
    assert r.breaker.state == "closed"
    r.breaker.call(lambda: "any result")
    assert r.breaker.state == "open"


# Two steps


def test_acquire_gives_a_permit_or_a_falsy_rejection(make):
    r = make(cooldown=15)
    p = r.breaker.acquire()
    assert p and p.admitted and not p.probe and p.pending
    assert p.record(404) == "success"
    assert (p.outcome_class, p.slow, p.stale, p.pending) == ("success", False, False, False)
    trip(r)
    rejection = r.breaker.acquire()
    assert not rejection
    assert (rejection.admitted, rejection.reason, rejection.state, rejection.retry_after) == (False, "open", "open", 15.0)
    assert isinstance(rejection.error(), CircuitOpenError)


@pytest.mark.parametrize(
    "outcome,cls",
    [
        (None, "success"),
        ("success", "success"),
        ("timeout", "fault"),
        ("connection-error", "fault"),
        ("connection_error", "fault"),
        ("failure", "fault"),
        ("cancelled", "neutral"),
        ("ignored", "neutral"),
        (503, "fault"),
        (429, "fault"),
        (404, "success"),
        ("status:500", "fault"),
        ("grpc:14", "fault"),
        ("grpc:5", "success"),
        (Response(502), "fault"),
        (Response(401), "success"),
        (ConnectionRefusedError(), "fault"),
        (TimeoutError(), "fault"),
        (ValueError(), "fault"),
    ],
)
def test_record_reads_every_outcome_form(make, outcome, cls):
    r = make(failure_threshold=100)
    p = r.breaker.acquire()
    assert (p.record() if outcome is None else p.record(outcome)) == cls


@pytest.mark.parametrize(
    "bad,kind",
    [(700, ValueError), ("status:99", ValueError), ("grpc:17", ValueError), ("teapot", ValueError), (True, TypeError), (object(), TypeError)],
)
def test_an_unreadable_outcome_raises_and_leaves_the_permit_out(make, bad, kind):
    r = make()
    p = r.breaker.acquire()
    with pytest.raises(kind):
        p.record(bad)
    assert p.pending and r.breaker.metrics()["in_flight"] == 1
    assert p.record("success") == "success"
    with pytest.raises(RuntimeError):
        p.record("success")


def test_a_dropped_permit_is_cancelled(make):
    r = make(half_open_max_probes=1, cooldown=1)
    trip(r)
    r.clock.advance(1)
    probe = r.breaker.acquire()
    assert probe.probe
    assert not r.breaker.acquire()  # the one slot is taken
    del probe
    gc.collect()
    assert r.breaker.metrics()["probes_out"] == 0
    assert r.breaker.acquire().probe


def test_probe_rejection_as_probing(make):
    r = make(cooldown=1)
    trip(r)
    r.clock.advance(1)
    held = r.breaker.acquire()
    rejection = r.breaker.acquire()
    assert (rejection.reason, rejection.state) == ("probing", "half-open")
    held.cancel()


# Context managers


def test_with_records_success_or_the_exception(make):
    r = make(failure_threshold=2, min_calls=2)
    with r.breaker as permit:
        assert permit.pending
    assert permit.outcome_class == "success"
    with pytest.raises(ConnectionError):
        with r.breaker:
            raise ConnectionError
    with r.breaker as permit:
        permit.record(Response(503))  # the block's own outcome
    assert permit.outcome_class == "fault"
    assert r.take() == [("closed", "open", "failure-threshold")]
    with pytest.raises(CircuitOpenError):
        with r.breaker:
            pytest.fail("the block must not run")


def test_with_nests_and_threads_see_their_own_permits(make):
    r = make()
    with r.breaker as outer:
        with r.breaker as inner:
            pass
        assert inner.outcome_class == "success" and outer.pending
    assert outer.outcome_class == "success"
    seen = []

    def worker(n):
        for _ in range(200):
            with r.breaker as p:
                seen.append(p)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(p.outcome_class == "success" for p in seen)
    assert r.breaker.metrics()["in_flight"] == 0


# Listeners


def test_listeners_get_transitions_after_the_breaker_is_released(make):
    r = make(failure_threshold=1, min_calls=1)
    seen = []

    @r.breaker.on_transition
    def listener(t):
        # The breaker is free: a listener may use it.
        seen.append((t.from_state, t.to_state, t.reason, t.epoch, r.breaker.state, t.at))

    r.clock.set(3.5)
    r.breaker.acquire().record("timeout")
    assert seen == [("closed", "open", "failure-threshold", 1, "open", 3.5)]
    r.breaker.remove_listener(listener)
    r.breaker.reset()
    assert len(seen) == 1


def test_a_listener_that_raises_is_counted_and_logged_and_the_call_goes_on(make, caplog):
    r = make(failure_threshold=1, min_calls=1)
    later = []

    def bad(t):
        raise RuntimeError("listener bug")

    r.breaker.on_transition(bad)
    r.breaker.on_transition(later.append)
    with caplog.at_level(logging.ERROR, logger="tripgate"):
        with pytest.raises(ConnectionError):
            r.breaker.call(_raise, ConnectionError())
    assert r.breaker.state == "open"
    assert len(later) == 1  # the next listener still heard
    assert r.breaker.metrics()["listener_errors"] == 1
    assert "listener raised" in caplog.text and "listener bug" in caplog.text


def test_on_listener_error_receives_the_error():
    got = []
    b = CircuitBreaker(clock=FakeClock(), on_listener_error=lambda e, t: got.append((type(e), t.to_state)))
    b.on_transition(lambda t: 1 / 0)
    b.isolate()
    assert got == [(ZeroDivisionError, "isolated")]


def _raise(error):
    raise error


def test_a_breaker_in_a_cycle_with_its_listener_is_collected():
    class Service:
        def __init__(self):
            self.breaker = CircuitBreaker(clock=FakeClock())
            self.breaker.on_transition(self.on_transition)

        def on_transition(self, t):
            pass

    service = Service()
    ref = weakref.ref(service.breaker)
    del service
    gc.collect()
    assert ref() is None


# Manual states, export and import


def test_manual_states_return_their_transitions(make):
    r = make()
    assert [t.as_tuple() for t in r.breaker.isolate()] == [("closed", "isolated", "isolated")]
    assert r.breaker.acquire().reason == "isolated"
    assert [t.as_tuple() for t in r.breaker.release()] == [("isolated", "closed", "released")]
    assert [t.as_tuple() for t in r.breaker.disable()] == [("closed", "disabled", "disabled")]
    trip(r, 10)
    assert r.breaker.state == "disabled"
    assert [t.as_tuple() for t in r.breaker.reset()] == [("disabled", "closed", "reset")]
    assert r.breaker.release() == []


def test_export_and_import(make):
    r = make(cooldown=10)
    trip(r)
    r.clock.advance(4)
    state = r.breaker.export_state()
    assert isinstance(state, bytes) and state[:3] == b"TGB"
    other = CircuitBreaker.from_state(state, 1.0, clock=FakeClock(), cooldown=10)
    m = other.metrics()
    assert (m["state"], m["cooldown_remaining"]) == ("open", 5.0)
    with pytest.raises(tripgate.StateError) as caught:
        other.import_state(state[:3])
    assert caught.value.kind == "truncated"
    with pytest.raises(tripgate.StateError) as caught:
        CircuitBreaker(clock=FakeClock(), buckets=5).import_state(state)
    assert caught.value.kind == "window-shape"
    with pytest.raises(ValueError):
        other.import_state(state, -1)


def test_metrics_snapshot(make):
    r = make(cooldown=10)
    trip(r)
    r.breaker.acquire()
    r.clock.advance(2)
    m = r.breaker.metrics()
    assert m["rejected"] == {"open": 1, "probing": 0, "isolated": 0, "saturated": 0, "probing-elsewhere": 0}
    assert m["transitions_by_route"][("closed", "open", "failure-threshold")] == 1
    assert sum(m["transitions_by_route"].values()) == m["transitions_total"] == 1
    assert (m["time_in_state"], m["cooldown_remaining"]) == (2.0, 8.0)
    assert m["last_transition"].as_tuple() == ("closed", "open", "failure-threshold")
    assert (m["calls"], m["faults"]) == (5, 5)


# Clocks


def test_a_callable_clock_in_seconds_and_readings_that_are_not_observed(caplog):
    now = [100.0]

    def clock():
        if now[0] is None:
            raise OSError("clock broke")
        return now[0]

    b = CircuitBreaker(clock=clock, cooldown=10, failure_threshold=1, min_calls=1)
    b.acquire().record("timeout")
    now[0] = 105.0
    assert b.metrics()["cooldown_remaining"] == 5.0
    with caplog.at_level(logging.WARNING, logger="tripgate"):
        for bad in (float("nan"), -1.0, "soon", None):
            now[0] = bad
            assert b.state == "open"  # the last reading stands
    assert b.metrics()["clock_errors"] == 5  # four bad readings, then metrics() read it again
    assert "no reading" in caplog.text
    now[0] = 110.0
    assert b.state == "half-open"


def test_fake_clock():
    c = FakeClock(1.5)
    assert (c.now(), c.now_ns(), c()) == (1.5, 1_500_000_000, 1.5)
    c.advance(0.25)
    c.set_ns(2**64 - 1)
    assert c.now_ns() == 2**64 - 1
    with pytest.raises(ValueError):
        c.advance(-1)


def test_the_tables_come_from_the_core():
    assert tripgate.STATES == ("closed", "open", "half-open", "isolated", "disabled")
    assert "probing-elsewhere" in tripgate.REJECT_REASONS
    assert tripgate.MAX_CAUSES == 8
    assert ("failure-threshold", "failure_threshold", "count") in tripgate.CONFIG_FIELDS


def test_a_registry_makes_each_breaker_once():
    clock = FakeClock()
    registry = tripgate.Registry(clock=clock, cooldown=5)
    a = registry.get("payments", failure_threshold=3)
    assert registry.get("payments") is a
    assert a.name == "payments" and list(registry) == ["payments"] and "payments" in registry
    with pytest.raises(ValueError):
        tripgate.Registry(cooldown=0)


def test_a_decorated_method_binds_like_a_function(make):
    r = make()

    class Client:
        def __init__(self):
            self.sent = []

        @r.breaker
        def send(self, what):
            """Sends."""
            self.sent.append(what)
            return len(self.sent)

    client = Client()
    assert client.send("a") == 1 and client.send("b") == 2
    assert client.sent == ["a", "b"]
    assert Client.send.__doc__ == "Sends." and Client.send.__name__ == "send"
    assert Client.send(client, "c") == 3
    assert r.breaker.metrics()["successes_total"] == 3


def test_threads_listeners_and_a_python_clock_that_gives_up_the_gil_never_deadlock():
    # The clock and the listener are Python code that releases the GIL (time.sleep(0)):
    # were either run inside the breaker's lock, another thread holding the GIL could spin
    # on that lock forever. Both run outside it.
    import time as _time

    ticks = [0.0]
    running = [True]

    def clock():
        _time.sleep(0)
        if running[0]:
            ticks[0] += 0.001
        return ticks[0]

    b = CircuitBreaker(clock=clock, failure_threshold=3, min_calls=3, cooldown=0.01, half_open_required_successes=1)
    heard = []

    def listener(t):
        _time.sleep(0)
        heard.append((t.to_state, b.state, b.metrics()["epoch"]))

    b.on_transition(listener)

    def worker(n):
        for i in range(300):
            try:
                if (i + n) % 4 == 0:
                    b.call(_raise, ConnectionError())
                else:
                    b.call(lambda: None)
            except (ConnectionError, CircuitOpenError):
                pass

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    # Read at the last instant the breaker saw: a later one could make a transition due
    # that the metrics count (they play time forward) and no listener has heard yet.
    running[0] = False
    m = b.metrics()
    assert m["in_flight"] == 0 and m["probes_out"] == 0
    assert heard and m["transitions_total"] == len(heard)


def test_a_block_that_records_its_own_outcome_leaves_the_outer_block_alone(make):
    r = make(failure_threshold=100)
    with r.breaker as outer:
        with r.breaker as inner:
            inner.record(503)
        assert inner.outcome_class == "fault" and outer.pending
        with r.breaker as again:
            pass
        assert again.outcome_class == "success" and outer.pending
    assert outer.outcome_class == "success"
    with pytest.raises(RuntimeError):
        r.breaker.__exit__(None, None, None)
    m = r.breaker.metrics()
    assert (m["successes_total"], m["faults_total"], m["in_flight"]) == (2, 1, 0)


def test_rejections_are_values_a_caller_may_keep(make):
    r = make(cooldown=10)
    trip(r)
    first = r.breaker.acquire()
    r.clock.advance(1)
    second = r.breaker.acquire()
    # Each rejection keeps its own reading, whatever came after it.
    assert (first.retry_after, second.retry_after) == (10.0, 9.0)
    r.breaker.isolate()
    third = r.breaker.acquire()
    assert (first.reason, second.reason, third.reason) == ("open", "open", "isolated")
    assert first is not second and second is not third
    assert r.breaker.metrics()["rejected"]["open"] == 2
