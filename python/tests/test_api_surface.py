"""What `help()`, `inspect` and a mistake show: every public method and property of the
package's classes has a docstring, `guard`'s defaults read as what they mean, positional
options are refused naming the class called, and the two kinds of window are refused
together naming both."""

import inspect

import pytest

import tripgate
from tripgate.registry import Registry

PUBLIC = [
    tripgate.CircuitBreaker,
    tripgate.Guard,
    tripgate.Permit,
    tripgate.Rejection,
    tripgate.Transition,
    tripgate.Reconfigured,
    tripgate.Retries,
    tripgate.FakeClock,
    tripgate.Registry,
]


@pytest.mark.parametrize("cls", PUBLIC, ids=lambda c: c.__name__)
def test_every_public_member_has_a_docstring(cls):
    undocumented = []
    for name in dir(cls):
        if name.startswith("_"):
            continue
        member = inspect.getattr_static(cls, name)
        if not (getattr(member, "__doc__", None) or "").strip():
            undocumented.append(name)
    assert cls.__doc__ and not undocumented, f"{cls.__name__}: {undocumented}"


def test_registry_get_and_rejection_reason_say_what_they_do():
    assert "made on the first call" in Registry.get.__doc__
    assert "returns None" in Registry.reconfigure.__doc__
    assert "cannot change" in tripgate.CircuitBreaker.reconfigure.__doc__
    doc = tripgate.Rejection.reason.__doc__
    for reason in tripgate.REJECT_REASONS:
        assert f"`{reason}`" in doc


def test_shadow_mode_and_the_stay_away_say_what_they_do():
    assert "shadow mode" in tripgate.Permit.shadow.__doc__
    doc = tripgate.Permit.record.__doc__
    assert "retry_after" in doc and "max_cooldown" in doc and "Retry-After" in doc
    assert str(inspect.signature(tripgate.Permit.record)) == "(self, /, outcome=None, *, retry_after=None)"
    doc = tripgate.retry_after_of.__doc__
    assert "Retry-After" in doc and "grpc-retry-pushback-ms" in doc and "None" in doc
    assert "retry_after_of" in tripgate.__all__


def test_retries_say_what_they_do_and_where_they_go():
    b = tripgate.CircuitBreaker()
    doc = tripgate.CircuitBreaker.retries.__doc__
    for option in ("max_attempts", "base_delay", "max_delay", "budget_percent", "min_retries_per_second", "seed"):
        assert option in doc
    assert "guard(retries=" in doc and "Retries" in tripgate.__all__
    assert "retries" in inspect.signature(b.guard).parameters
    assert inspect.signature(b.guard).parameters["retries"].default is None
    assert str(inspect.signature(tripgate.Retries.next)) == "(self, /, attempt, outcome_class, retry_after=None)"
    for reason in ("answered", "attempts", "budget", "stay-away"):
        assert f"`{reason}`" in tripgate.Retries.next.__doc__


def test_guard_signature_shows_what_its_defaults_mean():
    b = tripgate.CircuitBreaker()
    params = inspect.signature(b.guard).parameters
    assert repr(params["timeout"].default) == "<the breaker's timeout>"
    assert repr(params["fallback"].default) == "<the breaker's fallback>"
    assert "object at 0x" not in str(inspect.signature(b.guard))
    # The defaults still mean the breaker's own.
    timed = tripgate.CircuitBreaker(timeout=2.5, fallback="cached")
    assert timed.guard().timeout == 2.5 and timed.guard().call(lambda: 1 / 0) == "cached"
    assert timed.guard(timeout=None).timeout is None


class Payments(tripgate.CircuitBreaker):
    """A subclass, as an application may write one."""


@pytest.mark.parametrize("cls", [tripgate.CircuitBreaker, Payments], ids=lambda c: c.__name__)
def test_positional_options_are_refused_naming_the_class_called(cls):
    with pytest.raises(TypeError) as caught:
        cls(5, 15)
    message = str(caught.value)
    assert message.startswith(f"{cls.__name__}() takes keyword options only")
    assert "Breaker()" not in message.replace(f"{cls.__name__}()", "")
    assert "2 positional arguments (5, ...)" in message


@pytest.mark.parametrize("time_option", [{"window": 10}, {"buckets": 4}, {"window": 10, "buckets": 5}])
def test_a_time_window_and_a_count_window_are_refused_together(time_option):
    # The core's rule (vectors 56 and 57), in the package's option names.
    with pytest.raises(ValueError) as caught:
        tripgate.CircuitBreaker(window_calls=20, **time_option)
    assert caught.value.option == "window_calls"
    assert "window_calls must not be set with " + next(iter(time_option)) in str(caught.value)
    # Through a registry's defaults as well.
    with pytest.raises(ValueError, match="window_calls must not be set with window"):
        Registry(window=10).get("search", window_calls=20)
    # Each alone is a breaker; None is "not given".
    tripgate.CircuitBreaker(window_calls=20, window=None)
    tripgate.CircuitBreaker(window=10, buckets=5)


class Upstream(tripgate.CircuitBreaker):
    """A subclass with an ordinary ``__init__`` of its own, as an application writes one."""

    def __init__(self, upstream, *, clock=None, **options):
        super().__init__(name=f"upstream-{upstream}", clock=clock, **options)
        self.upstream = upstream


def test_a_subclass_with_its_own_init_takes_its_own_arguments():
    clock = tripgate.FakeClock()
    b = Upstream("payments", clock=clock, failure_threshold=2, min_calls=2)
    assert (b.name, b.upstream) == ("upstream-payments", "payments")
    for _ in range(2):
        b.acquire().record("status:503")
    assert b.state == "open" and isinstance(b, tripgate.CircuitBreaker)
    # Its options are still checked, naming the option.
    with pytest.raises(ValueError) as caught:
        Upstream("search", failure_threshold=0)
    assert caught.value.option == "failure_threshold"


def test_a_subclass_whose_init_forgets_the_breaker_says_so():
    class Forgetful(tripgate.CircuitBreaker):
        def __init__(self, upstream):
            self.upstream = upstream

    b = Forgetful("payments")
    with pytest.raises(RuntimeError, match=r"Forgetful.__init__ did not call CircuitBreaker.__init__"):
        b.acquire()
    with pytest.raises(RuntimeError, match="did not call"):
        b.state  # noqa: B018


def test_a_name_that_is_no_text_says_what_is_wrong():
    with pytest.raises(ValueError) as caught:
        tripgate.CircuitBreaker(name="\udcff")
    assert caught.value.option == "name"
    message = str(caught.value)
    assert "not str" not in message and "surrogate" in message and "'\\udcff'" in message


@pytest.mark.parametrize(
    "clock, kind, cause",
    [(lambda: 1 / 0, TypeError, ZeroDivisionError), (lambda: "soon", ValueError, None)],
    ids=["raises", "not-seconds"],
)
def test_a_clock_that_fails_at_once_says_so_once(clock, kind, cause):
    with pytest.raises(kind) as caught:
        tripgate.CircuitBreaker(clock=clock)
    message = str(caught.value)
    assert caught.value.option == "clock"
    assert not message.startswith(("ValueError", "TypeError")), message
    assert message.count("Error:") <= 1, message
    if cause is not None:
        assert isinstance(caught.value.__cause__, cause)
        assert "ZeroDivisionError: division by zero" in message
