"""Bad input never crashes the interpreter nor reaches Python as a Rust panic: every
option, outcome, state and clock reading a caller can hand the package, drawn at random
from values of every type, ends in a result or a ValueError/TypeError (StateError for
bytes) naming what was wrong."""

import datetime
import math
import random

import pytest

import tripgate
from tripgate import CircuitBreaker, FakeClock

ODD_VALUES = [
    None, True, False, 0, 1, -1, 7, 2**31, 2**32, 2**63, 2**64, 2**200, -(2**200),
    0.5, -0.5, 1e-12, 1e300, math.inf, -math.inf, math.nan, "", "5", "cooldown", b"x",
    [], [503], [99, 600], (1, 2), {503}, {"a": 1}, object(), datetime.timedelta(seconds=3),
    datetime.timedelta(days=-1), range(500, 503), iter([1, 2]), lambda: 1,
]
OPTIONS = [option for _, option, _ in tripgate.CONFIG_FIELDS] + ["timeout", "name"]


def is_panic(error):
    return type(error).__name__ == "PanicException"


def test_random_options_are_refused_cleanly_or_accepted():
    rng = random.Random(23)
    for _ in range(3000):
        options = {rng.choice(OPTIONS): rng.choice(ODD_VALUES) for _ in range(rng.randint(1, 4))}
        try:
            b = CircuitBreaker(clock=FakeClock(), **options)
        except (ValueError, TypeError) as error:
            assert getattr(error, "option", None), (options, error)
            assert str(error)
        except BaseException as error:  # noqa: BLE001
            pytest.fail(f"{options}: {type(error).__name__}: {error}")
        else:
            p = b.acquire()
            if p:
                p.record()


class Unavailable:
    """A response that is a 503."""

    status_code = 503

    def __eq__(self, other):
        return isinstance(other, Unavailable)


RETRY_OPTIONS = ["max_attempts", "base_delay", "max_delay", "budget_percent", "min_retries_per_second", "seed"]


def test_random_retry_policies_are_refused_cleanly_or_retry():
    rng = random.Random(31)
    for _ in range(2000):
        options = {rng.choice(RETRY_OPTIONS): rng.choice(ODD_VALUES) for _ in range(rng.randint(1, 3))}
        b = CircuitBreaker(clock=FakeClock(), failure_threshold=50, min_calls=50)
        try:
            retries = b.retries(**options)
        except (ValueError, TypeError) as error:
            assert getattr(error, "option", None) in RETRY_OPTIONS, (options, error)
            assert str(error)
        except BaseException as error:  # noqa: BLE001
            pytest.fail(f"{options}: {type(error).__name__}: {error}")
        else:
            # Whatever the policy, a failing call ends, its waits on the FakeClock.
            assert b.guard(retries=retries).call(Unavailable) == Unavailable()
            assert 1 <= b.metrics()["faults_total"] <= retries.max_attempts
            assert retries.next(rng.randint(1, 300), "fault", rng.choice([None, 0, 1e9])) is not None


def test_random_outcomes_and_states_are_refused_cleanly():
    rng = random.Random(42)
    clock = FakeClock()
    b = CircuitBreaker(clock=clock, failure_threshold=3, min_calls=3, cooldown=1)
    outcomes = ODD_VALUES + ["status:", "status:abc", "grpc:-1", "grpc:99999999999999999999", "status:503:1",
                             "timeout", "status:503", "grpc:14", ValueError(), KeyboardInterrupt()]
    for _ in range(5000):
        clock.advance(rng.choice([0, 0.001, 0.5, 2]))
        p = b.acquire()
        if not p:
            assert p.reason in tripgate.REJECT_REASONS
            continue
        try:
            p.record(rng.choice(outcomes))
        except (ValueError, TypeError):
            p.cancel()
        except BaseException as error:  # noqa: BLE001
            assert not is_panic(error), error
            raise
    for data in (b"", b"TGB", bytes(range(256)) * 5, b"\xff" * 2000, b.export_state()[:-3] + b"abc"):
        with pytest.raises(tripgate.StateError):
            b.import_state(data)
    for elapsed in (-1, math.nan, math.inf):
        with pytest.raises(ValueError):
            b.import_state(b.export_state(), elapsed)
    b.import_state(b.export_state(), 1e30)  # an absurd elapsed saturates; nothing breaks


def test_random_stay_aways_are_refused_cleanly_or_recorded():
    rng = random.Random(5)
    clock = FakeClock()
    b = CircuitBreaker(clock=clock, failure_threshold=1, min_calls=1, cooldown=1, max_cooldown=30)
    for _ in range(3000):
        clock.advance(rng.choice([0, 0.5, 31]))
        p = b.acquire()
        if not p:
            assert 0 <= p.retry_after <= 30
            continue
        try:
            p.record(rng.choice(["status:503", "success", 429]), retry_after=rng.choice(ODD_VALUES))
        except (ValueError, TypeError) as error:
            assert "retry_after must be" in str(error)
            assert p.pending
            p.cancel()
        except BaseException as error:  # noqa: BLE001
            assert not is_panic(error), error
            raise
        assert tripgate.retry_after_of(rng.choice(ODD_VALUES)) is None


def test_a_clock_that_returns_anything_is_not_observed():
    rng = random.Random(7)

    def anything():
        value = rng.choice(ODD_VALUES + [2.0] * 10)
        if isinstance(value, list):
            raise RuntimeError("the clock broke")
        return value

    breaker = CircuitBreaker(clock=_Switching(anything), cooldown=1, failure_threshold=2, min_calls=2)
    for _ in range(2000):
        p = breaker.acquire()
        if p:
            p.record(rng.choice(["success", "timeout"]))
        assert breaker.state in tripgate.STATES
    assert breaker.metrics()["clock_errors"] > 0


class _Switching:
    """A clock that gives a reading when first read, then anything."""

    def __init__(self, then):
        self.first = True
        self.then = then

    def __call__(self):
        if self.first:
            self.first = False
            return 1.0
        return self.then()
