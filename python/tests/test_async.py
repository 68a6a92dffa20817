"""asyncio: call_async with its timeout and fallback, async with, async decorators,
cancellation. The breaker reads a FakeClock; the event loop jumps its own clock."""

import asyncio

import pytest

import tripgate
from tripgate import CallTimeoutError, CircuitBreaker, CircuitOpenError, FakeClock

from fakeloop import run


class Response:
    def __init__(self, status):
        self.status = status  # aiohttp's spelling


def test_call_async_records_results_and_errors(make):
    r = make(failure_threshold=2, min_calls=2)

    async def answer(status):
        await asyncio.sleep(0)
        return Response(status)

    async def refused():
        raise ConnectionRefusedError

    async def main():
        assert (await r.breaker.call_async(answer, 404)).status == 404
        assert (await r.breaker.call_async(answer, 503)).status == 503
        with pytest.raises(ConnectionRefusedError):
            await r.breaker.call_async(refused)
        with pytest.raises(CircuitOpenError):
            await r.breaker.call_async(answer, 200)

    run(main())
    assert r.take() == [("closed", "open", "failure-threshold")]
    m = r.breaker.metrics()
    assert (m["successes_total"], m["faults_total"]) == (1, 2)


def test_the_timeout_cancels_the_call_and_counts_a_timeout(make):
    r = make(failure_threshold=1, min_calls=1, timeout=2.0)
    cancelled = []

    async def hangs():
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def main():
        with pytest.raises(CallTimeoutError) as caught:
            await r.breaker.call_async(hangs)
        assert isinstance(caught.value, TimeoutError)
        assert caught.value.timeout == 2.0

    run(main())
    assert cancelled == [True]
    assert r.take() == [("closed", "open", "failure-threshold")]


def test_a_guard_gives_its_own_timeout_and_fallback(make):
    r = make(failure_threshold=1, min_calls=1)
    guard = r.breaker.guard(timeout=0.5, fallback=lambda e: f"fallback after {type(e).__name__}")

    async def hangs():
        await asyncio.Event().wait()

    async def main():
        assert await guard.call_async(hangs) == "fallback after CallTimeoutError"
        assert await guard.call_async(hangs) == "fallback after CircuitOpenError"

    run(main())


def test_a_cancelled_task_is_cancelled_not_a_fault_and_gets_no_fallback(make):
    r = make(failure_threshold=1, min_calls=1, fallback="fb")

    async def hangs():
        await asyncio.Event().wait()

    async def main():
        task = asyncio.ensure_future(r.breaker.call_async(hangs))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    m = r.breaker.metrics()
    assert (m["state"], m["faults_total"], m["in_flight"]) == ("closed", 0, 0)


def test_async_with_and_tasks_keep_their_own_permits(make):
    r = make(failure_threshold=3, min_calls=3)

    async def one(n):
        async with r.breaker as permit:
            await asyncio.sleep(0.001 * (5 - n))  # interleave the tasks
            if n % 2:
                raise ConnectionResetError
        return permit

    async def main():
        results = await asyncio.gather(*(one(n) for n in range(5)), return_exceptions=True)
        assert sum(isinstance(x, ConnectionResetError) for x in results) == 2
        assert all(x.outcome_class == "success" for x in results if isinstance(x, tripgate.Permit))

    run(main())
    m = r.breaker.metrics()
    assert (m["successes_total"], m["faults_total"], m["in_flight"]) == (3, 2, 0)


def test_async_decorator(make):
    r = make(failure_threshold=1, min_calls=1)

    @r.breaker
    async def fetch(x):
        return x * 2

    @r.breaker.guard(fallback=[])
    async def broken():
        raise TimeoutError

    async def main():
        assert await fetch(21) == 42
        assert await broken() == []
        with pytest.raises(CircuitOpenError):
            await fetch(1)

    run(main())
    assert fetch.__name__ == "fetch" and fetch.breaker is r.breaker


def test_guard_options_are_checked():
    b = CircuitBreaker(clock=FakeClock())
    for bad, kind in ((0, ValueError), (-1, ValueError), ("2s", TypeError), (float("inf"), ValueError)):
        with pytest.raises(kind) as caught:
            b.guard(timeout=bad)
        assert caught.value.option == "timeout"


def test_call_async_is_a_coroutine_to_asyncio(make):
    r = make()

    async def answer():
        await asyncio.sleep(0)
        return 42

    async def main():
        call = r.breaker.call_async(answer)
        assert asyncio.iscoroutine(call)
        task = asyncio.create_task(call)
        assert await task == 42
        done = await asyncio.gather(*(r.breaker.call_async(answer) for _ in range(3)))
        assert done == [42, 42, 42]
        call = r.breaker.call_async(answer)
        await call
        with pytest.raises(RuntimeError):
            await call  # awaited once only

    run(main())
    m = r.breaker.metrics()
    assert (m["successes_total"], m["in_flight"]) == (5, 0)


def test_call_async_without_a_timeout_records_errors_and_falls_back(make):
    r = make(failure_threshold=3, min_calls=3, fallback=lambda e: type(e).__name__)

    def raises_before_awaiting():
        raise ConnectionRefusedError

    async def raises_after():
        await asyncio.sleep(0)
        raise TimeoutError

    def not_awaitable():
        return 5

    async def main():
        assert await r.breaker.call_async(raises_before_awaiting) == "ConnectionRefusedError"
        assert await r.breaker.call_async(raises_after) == "TimeoutError"
        with pytest.raises(TypeError):
            r.breaker.call_async(not_awaitable)
        assert await r.breaker.call_async(raises_after) == "TimeoutError"
        assert await r.breaker.call_async(raises_after) == "CircuitOpenError"

    run(main())
    m = r.breaker.metrics()
    assert (m["state"], m["faults_total"], m["in_flight"]) == ("open", 3, 0)


def test_a_guarded_call_never_awaited_is_cancelled(make):
    import gc
    import warnings

    r = make()

    async def answer():
        return 1

    # Python warns of a coroutine never awaited (and a recorded warning would keep it,
    # and so its permit, alive): not what this test is about.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        call = r.breaker.call_async(answer)
        assert r.breaker.metrics()["in_flight"] == 1
        call.close()
        gc.collect()
        assert r.breaker.metrics()["in_flight"] == 0
        call = r.breaker.call_async(answer)
        del call
        gc.collect()
    assert r.breaker.metrics()["in_flight"] == 0
