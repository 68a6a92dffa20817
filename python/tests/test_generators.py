"""Guarded generators: `@breaker` on a generator function or an async generator function
guards the iteration, not the creation. One permit for the whole iteration, taken at the
first item; exhausted is a success, an exception raised out of it a classified fault,
closed early a neutral `cancelled`. A fallback stands in for an iteration that yielded
nothing; a timeout is refused. Plain calls that return unrun work are refused. Time is a
FakeClock; the event loop jumps its own clock."""

import asyncio
import gc

import pytest

from tripgate import CircuitOpenError

from fakeloop import run


def counts(breaker):
    m = breaker.metrics()
    return m["successes_total"], m["faults_total"], m["in_flight"]


def test_a_generator_is_guarded_for_its_whole_iteration(make):
    r = make(failure_threshold=1, min_calls=1)
    seen = []

    @r.breaker
    def pages(n):
        for i in range(n):
            seen.append(("in flight", r.breaker.metrics()["in_flight"]))
            yield i

    gen = pages(3)
    assert counts(r.breaker) == (0, 0, 0)  # nothing runs, nothing is taken, until iterated
    assert list(gen) == [0, 1, 2]
    assert seen == [("in flight", 1)] * 3
    assert counts(r.breaker) == (1, 0, 0)
    assert pages.__name__ == "pages" and pages.breaker is r.breaker


def test_a_fault_raised_out_of_a_generator_is_classified_and_raised(make):
    r = make(failure_threshold=1, min_calls=1)

    @r.breaker
    def rows():
        yield 1
        raise ConnectionResetError

    gen = rows()
    assert next(gen) == 1
    with pytest.raises(ConnectionResetError):
        next(gen)
    assert counts(r.breaker) == (0, 1, 0) and r.breaker.state == "open"
    with pytest.raises(CircuitOpenError):
        next(rows())  # the rejection comes with the first item


def test_a_generator_closed_early_is_cancelled(make):
    r = make(failure_threshold=1, min_calls=1)

    @r.breaker
    def endless():
        i = 0
        while True:
            yield i
            i += 1

    for i in endless():
        if i == 3:
            break
    gc.collect()
    gen = endless()
    next(gen)
    gen.close()
    gen = endless()
    next(gen)
    del gen
    gc.collect()
    assert counts(r.breaker) == (0, 0, 0) and r.breaker.state == "closed"


def test_send_throw_and_the_return_value_pass_through(make):
    r = make(classify=lambda value: "ignored" if value == "skip" else None)

    @r.breaker
    def echo():
        total = 0
        while True:
            try:
                got = yield total
            except ValueError:
                got = 100
            if got is None:
                return "skip" if total > 1000 else total
            total += got

    gen = echo()
    assert next(gen) == 0
    assert gen.send(5) == 5
    assert gen.throw(ValueError()) == 105
    with pytest.raises(StopIteration) as stop:
        gen.send(None)
    assert stop.value.value == 105
    assert counts(r.breaker) == (1, 0, 0)
    gen = echo()
    next(gen)
    gen.send(2000)
    with pytest.raises(StopIteration):
        next(gen)
    assert counts(r.breaker) == (1, 0, 0)  # "skip" was ignored by the classifier


def test_an_interrupt_inside_a_generator_is_cancelled_and_raised(make):
    r = make(failure_threshold=1, min_calls=1, fallback=None)

    @r.breaker
    def interrupted():
        yield 1
        raise KeyboardInterrupt

    gen = interrupted()
    next(gen)
    with pytest.raises(KeyboardInterrupt):
        next(gen)
    assert counts(r.breaker) == (0, 0, 0)


def test_a_fallback_stands_in_for_an_iteration_that_yielded_nothing(make):
    r = make(failure_threshold=2, min_calls=2)

    @r.breaker.guard(fallback=lambda error: ["cached", type(error).__name__])
    def rows(fail_after):
        for i in range(3):
            if i == fail_after:
                raise ConnectionRefusedError
            yield i

    assert list(rows(0)) == ["cached", "ConnectionRefusedError"]  # a fault before any item
    gen = rows(1)
    assert next(gen) == 0
    with pytest.raises(ConnectionRefusedError):
        next(gen)  # the consumer has real items already: raised, not mixed with cached ones
    assert r.breaker.state == "open"
    assert list(rows(5)) == ["cached", "CircuitOpenError"]

    @r.breaker.guard(fallback=None)
    def nothing():
        yield 1

    assert list(nothing()) == []  # a fallback of None stands in with no items


def test_a_generator_refuses_a_timeout_and_a_fallback_that_is_no_iterable(make):
    r = make(timeout=2.0)

    def rows():
        yield 1

    async def arows():
        yield 1

    for fn in (rows, arows):
        with pytest.raises(TypeError, match="timeout"):
            r.breaker(fn)
        r.breaker.guard(timeout=None)(fn)  # the way out the message names
    with pytest.raises(TypeError, match="iterable"):
        r.breaker.guard(timeout=None, fallback=5)(rows)


def test_an_async_generator_is_guarded_for_its_whole_iteration(make):
    r = make(failure_threshold=2, min_calls=2)

    @r.breaker
    async def stream(n, fail=False):
        for i in range(n):
            await asyncio.sleep(0)
            yield i
        if fail:
            raise TimeoutError

    @r.breaker.guard(fallback=lambda error: ["cached"])
    async def guarded_stream():
        raise ConnectionResetError
        yield  # an async generator

    async def main():
        assert [i async for i in stream(3)] == [0, 1, 2]
        assert counts(r.breaker) == (1, 0, 0)
        agen = stream(10)
        assert await agen.__anext__() == 0
        assert r.breaker.metrics()["in_flight"] == 1
        await agen.aclose()  # closed early: cancelled
        assert counts(r.breaker) == (1, 0, 0)
        with pytest.raises(TimeoutError):
            async for _ in stream(1, fail=True):
                pass
        assert [i async for i in guarded_stream()] == ["cached"]
        assert r.breaker.state == "open"
        with pytest.raises(CircuitOpenError):
            await stream(1).__anext__()
        assert [i async for i in guarded_stream()] == ["cached"]

    run(main())
    assert counts(r.breaker) == (1, 2, 0)


def test_an_async_generator_passes_asend_and_athrow_through(make):
    r = make()

    @r.breaker
    async def running_total():
        total = 0
        while True:
            try:
                total += yield total
            except ValueError:
                total = -1

    async def main():
        agen = running_total()
        assert await agen.asend(None) == 0
        assert await agen.asend(3) == 3
        assert await agen.athrow(ValueError()) == -1
        await agen.aclose()

    run(main())
    assert counts(r.breaker) == (0, 0, 0)


def test_an_async_generator_in_a_cancelled_task_is_cancelled(make):
    r = make(failure_threshold=1, min_calls=1)

    @r.breaker
    async def hangs():
        yield 1
        await asyncio.Event().wait()
        yield 2

    async def consume():
        async for _ in hangs():
            pass

    async def main():
        task = asyncio.ensure_future(consume())
        for _ in range(3):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    assert counts(r.breaker) == (0, 0, 0) and r.breaker.state == "closed"


def test_a_plain_call_that_returns_unrun_work_is_refused(make):
    r = make(failure_threshold=1, min_calls=1)

    def rows():
        yield 1

    async def fetch():
        return 1

    async def stream():
        yield 1

    for fn, advice in ((rows, "decorate the generator function"), (fetch, "call_async"), (stream, "decorate")):
        with pytest.raises(TypeError, match=advice) as caught:
            r.breaker.call(fn)
        assert fn.__qualname__ in str(caught.value)
    # The decorated plain function that returns a generator expression is refused too.
    with pytest.raises(TypeError, match="generator"):
        r.breaker(lambda: (i for i in range(3)))()
    assert counts(r.breaker) == (0, 0, 0) and r.breaker.state == "closed"
