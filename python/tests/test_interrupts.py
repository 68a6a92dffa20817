"""Interrupts (KeyboardInterrupt, SystemExit, a cancelled task, GeneratorExit) are the
caller giving up: never a fault, never replaced by a fallback, recorded as `cancelled` and
raised again, on every path: call, guard, decorators, with, call_async with and without a
timeout, and inside `classify`. Time is a FakeClock; the event loop jumps its own clock."""

import asyncio

import pytest

from tripgate import CircuitOpenError

from fakeloop import run

INTERRUPTS = [KeyboardInterrupt, SystemExit]


def neutral(breaker):
    """Nothing was counted and nothing is out."""
    m = breaker.metrics()
    assert (m["state"], m["faults_total"], m["successes_total"], m["in_flight"]) == ("closed", 0, 0, 0)


def raiser(kind):
    def interrupted(*args, **kwargs):
        raise kind

    return interrupted


@pytest.mark.parametrize("kind", INTERRUPTS)
def test_an_interrupt_after_the_sync_timeout_is_raised_not_a_timeout(make, kind):
    r = make(failure_threshold=1, min_calls=1, timeout=1.0, fallback="fallback")

    def late_interrupt():
        r.clock.advance(5.0)  # well past the budget
        raise kind

    with pytest.raises(kind):
        r.breaker.call(late_interrupt)
    with pytest.raises(kind):
        r.breaker.guard(timeout=0.5, fallback=lambda e: "fallback").call(late_interrupt)

    @r.breaker.guard(timeout=0.5, fallback=None)
    def decorated():
        return late_interrupt()

    with pytest.raises(kind):
        decorated()
    neutral(r.breaker)
    # An Exception past the budget is still a timeout fault, and falls back.
    def late_error():
        r.clock.advance(5.0)
        raise ValueError("late")

    assert r.breaker.call(late_error) == "fallback"
    assert r.breaker.metrics()["faults_total"] == 1 and r.breaker.state == "open"


@pytest.mark.parametrize("kind", INTERRUPTS)
def test_an_interrupt_leaves_every_sync_path_and_counts_nothing(make, kind):
    r = make(failure_threshold=1, min_calls=1, fallback="fallback")
    with pytest.raises(kind):
        r.breaker.call(raiser(kind))
    with pytest.raises(kind):
        r.breaker(raiser(kind))()
    with pytest.raises(kind):
        r.breaker.guard(fallback=0).call(raiser(kind))
    with pytest.raises(kind):
        with r.breaker:
            raise kind
    permit = r.breaker.acquire()
    assert permit.record_error(kind()) == "neutral"
    neutral(r.breaker)


@pytest.mark.parametrize("kind", INTERRUPTS)
@pytest.mark.parametrize("timeout", [None, 5.0])
def test_an_interrupt_leaves_every_async_path_and_counts_nothing(make, kind, timeout):
    r = make(failure_threshold=1, min_calls=1)
    guard = r.breaker.guard(timeout=timeout, fallback="fallback")

    async def interrupted():
        await asyncio.sleep(0)
        raise kind

    @guard
    async def decorated():
        return await interrupted()

    async def main():
        caught = []
        for attempt in (lambda: guard.call_async(interrupted), decorated):
            try:
                await attempt()
            except kind:
                caught.append(kind)
        try:
            async with r.breaker:
                await interrupted()
        except kind:
            caught.append(kind)
        return caught

    assert run(main()) == [kind] * 3
    neutral(r.breaker)


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_an_interrupt_raised_when_the_call_is_made_is_raised_at_once(make, timeout):
    r = make(fallback="fallback")
    guard = r.breaker.guard(timeout=timeout)
    # Not deferred into the returned coroutine, which might never be awaited.
    with pytest.raises(KeyboardInterrupt):
        guard.call_async(raiser(KeyboardInterrupt))
    neutral(r.breaker)


def test_a_timed_call_whose_task_is_cancelled_is_cancelled_not_a_timeout(make):
    r = make(failure_threshold=1, min_calls=1, fallback="fallback")
    guard = r.breaker.guard(timeout=5.0)

    async def hangs():
        await asyncio.Event().wait()

    async def main():
        task = asyncio.ensure_future(guard.call_async(hangs))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    neutral(r.breaker)


def test_an_interrupt_inside_classify_goes_on_and_the_call_counts_nothing(make):
    def classify(value):
        raise KeyboardInterrupt

    r = make(failure_threshold=1, min_calls=1, classify=classify, fallback="fallback")
    with pytest.raises(KeyboardInterrupt):
        r.breaker.call(lambda: 200)
    with pytest.raises(KeyboardInterrupt):
        r.breaker.call(raiser(ValueError))
    with pytest.raises(KeyboardInterrupt):
        with r.breaker:
            raise ValueError
    permit = r.breaker.acquire()
    with pytest.raises(KeyboardInterrupt):
        permit.record_result(200)
    assert not permit.pending  # given back as cancelled

    async def answer():
        return 200

    async def main():
        for timeout in (None, 5.0):
            with pytest.raises(KeyboardInterrupt):
                await r.breaker.guard(timeout=timeout).call_async(answer)

    run(main())
    neutral(r.breaker)
    assert r.breaker.metrics()["classify_errors"] == 0  # an interrupt is not a broken classifier


def test_a_rejection_is_still_a_rejection(make):
    r = make()
    r.breaker.isolate()
    with pytest.raises(CircuitOpenError):
        r.breaker.call(raiser(KeyboardInterrupt))
