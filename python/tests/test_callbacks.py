"""The user's callbacks: a listener that raises keeps its traceback (in the log and in
what `on_listener_error` gets); a `classify` that raises or answers what is not an outcome
is counted and logged, and the package's rules decide instead, so a broken classifier
never trips the breaker by itself. Time is a FakeClock."""

import logging
import traceback

import pytest

from tripgate import CircuitBreaker, FakeClock

from fakeloop import run


def broken_listener(transition):
    raise RuntimeError("listener bug")


def test_a_listener_error_is_logged_with_its_traceback(make, caplog):
    r = make()
    r.breaker.on_transition(broken_listener)
    with caplog.at_level(logging.ERROR, logger="tripgate"):
        r.breaker.isolate()
    (record,) = [rec for rec in caplog.records if rec.exc_info]
    kind, error, tb = record.exc_info
    assert kind is RuntimeError and tb is not None
    assert error.__traceback__ is tb
    # The frame of the listener that raised is in it.
    assert "broken_listener" in "".join(traceback.format_tb(tb))
    assert "broken_listener" in caplog.text


def test_on_listener_error_gets_the_exception_with_its_traceback():
    got = []
    b = CircuitBreaker(clock=FakeClock(), on_listener_error=lambda e, t: got.append((e, t.to_state)))
    b.on_transition(broken_listener)
    b.isolate()
    ((error, state),) = got
    assert state == "isolated" and isinstance(error, RuntimeError)
    assert "broken_listener" in "".join(traceback.format_tb(error.__traceback__))
    assert b.metrics()["listener_errors"] == 1


def test_a_failing_on_listener_error_is_logged_with_its_traceback(caplog):
    def hook(error, transition):
        raise ValueError("hook bug")

    b = CircuitBreaker(clock=FakeClock(), on_listener_error=hook)
    b.on_transition(broken_listener)
    with caplog.at_level(logging.ERROR, logger="tripgate"):
        b.isolate()
    (record,) = [rec for rec in caplog.records if rec.exc_info]
    assert record.exc_info[0] is ValueError and record.exc_info[2] is not None
    assert "hook" in "".join(traceback.format_tb(record.exc_info[2]))
    assert b.metrics()["listener_errors"] == 2


def test_a_fallback_gets_the_exception_with_its_traceback(make):
    seen = []
    r = make(fallback=seen.append)

    def fails():
        raise ConnectionError("down")

    r.breaker.call(fails)
    assert "fails" in "".join(traceback.format_tb(seen[0].__traceback__))


def raises(value):
    raise ZeroDivisionError("classifier bug")


@pytest.mark.parametrize(
    "classify, why",
    [
        (raises, "ZeroDivisionError"),
        (lambda value: True, "not an outcome"),
        (lambda value: "broken", "not an outcome"),
        (lambda value: 700, "not an outcome"),
        (lambda value: object(), "not an outcome"),
    ],
    ids=["raises", "bool", "unknown-name", "bad-status", "object"],
)
def test_a_broken_classifier_is_counted_and_logged_and_never_trips_alone(make, caplog, classify, why):
    r = make(failure_threshold=1, min_calls=1, classify=classify)
    with caplog.at_level(logging.ERROR, logger="tripgate"):
        for _ in range(10):
            assert r.breaker.call(lambda: {"ok": True}) == {"ok": True}
        with r.breaker:
            pass
        r.breaker.acquire().record_result(None)
    m = r.breaker.metrics()
    assert (m["state"], m["faults_total"], m["successes_total"]) == ("closed", 0, 12)
    assert m["classify_errors"] == 11  # the with block's success needs no classifier
    assert len(caplog.records) == 11
    assert "classify failed" in caplog.records[0].getMessage()
    assert why in caplog.text
    assert caplog.records[0].exc_info[2] is not None or why == "not an outcome"


def test_with_a_broken_classifier_the_rules_still_count_faults(make, caplog):
    r = make(failure_threshold=2, min_calls=2, classify=raises)

    class Response:
        status_code = 503

    with caplog.at_level(logging.ERROR, logger="tripgate"):
        r.breaker.call(Response)
        with pytest.raises(ConnectionRefusedError):
            r.breaker.call(_raise, ConnectionRefusedError())
    assert r.breaker.state == "open"  # two faults by the package's rules
    assert r.breaker.metrics()["classify_errors"] == 2


def test_a_classifier_that_returns_none_leaves_it_to_the_rules(make, caplog):
    seen = []

    def classify(value):
        seen.append(value)
        return "ignored" if isinstance(value, KeyError) else None

    r = make(failure_threshold=1, min_calls=1, classify=classify)
    with caplog.at_level(logging.ERROR, logger="tripgate"):
        with pytest.raises(KeyError):
            r.breaker.call(_raise, KeyError("cache miss"))
        assert r.breaker.state == "closed"
        with pytest.raises(TimeoutError):
            r.breaker.call(_raise, TimeoutError())
    assert r.breaker.state == "open"
    assert r.breaker.metrics()["classify_errors"] == 0 and not caplog.records
    assert len(seen) == 2


def test_a_broken_classifier_on_async_calls(make, caplog):
    r = make(failure_threshold=1, min_calls=1, classify=raises)

    async def answer():
        return 200

    async def main():
        for timeout in (None, 5.0):
            assert await r.breaker.guard(timeout=timeout).call_async(answer) == 200

    with caplog.at_level(logging.ERROR, logger="tripgate"):
        run(main())
    m = r.breaker.metrics()
    assert (m["state"], m["successes_total"], m["classify_errors"]) == ("closed", 2, 2)


def _raise(error):
    raise error
