"""Timed async calls (`guard(timeout=...).call_async`, a breaker's `timeout`): each call's
deadline is its loop's time plus the budget, one timer handle per loop serves every call
whatever its budget, and a call still out at its deadline is cancelled, recorded as `timeout` and
raises CallTimeoutError (or gives the fallback). Breaker time is a FakeClock; the event
loop jumps its own clock, except where a real loop is the point (nothing expires there)."""

import asyncio

import pytest

from tripgate import CallTimeoutError, CircuitBreaker, FakeClock

from fakeloop import FakeTimeLoop, run


def test_concurrent_calls_expire_at_their_own_deadlines(make):
    r = make(failure_threshold=100, timeout=1.0)

    async def takes(seconds):
        await asyncio.sleep(seconds)
        return seconds

    async def call(delay, seconds):
        await asyncio.sleep(delay)
        loop = asyncio.get_running_loop()
        start = loop.time()
        try:
            return await r.breaker.call_async(takes, seconds)
        except CallTimeoutError:
            return ("timeout", round(loop.time() - start, 6))

    async def main():
        # Started at 0, 0.3, 0.6, ... each with one second: those taking longer time out
        # one second after their own start.
        plan = [(0.0, 0.5), (0.3, 1.5), (0.6, 0.2), (0.9, 3.0), (1.2, 0.9), (1.5, 1.1)]
        return await asyncio.gather(*(call(d, s) for d, s in plan))

    assert run(main()) == [0.5, ("timeout", 1.0), 0.2, ("timeout", 1.0), 0.9, ("timeout", 1.0)]
    m = r.breaker.metrics()
    assert (m["successes_total"], m["faults_total"], m["in_flight"]) == (3, 3, 0)


def test_one_timer_handle_serves_every_call_with_one_budget(make):
    r = make(failure_threshold=1000)
    guard = r.breaker.guard(timeout=10.0)

    async def main():
        loop = asyncio.get_running_loop()
        gate = asyncio.Event()
        before = len(loop._scheduled)
        tasks = [asyncio.ensure_future(guard.call_async(gate.wait)) for _ in range(200)]
        await asyncio.sleep(0)
        assert len(loop._scheduled) - before == 1  # not one timer per call
        gate.set()
        await asyncio.gather(*tasks)

    run(main())
    assert r.breaker.metrics()["successes_total"] == 200


def test_budgets_of_every_size_each_keep_their_own_deadlines(make):
    r = make(failure_threshold=1000)

    async def main():
        loop = asyncio.get_running_loop()
        start = loop.time()
        # 100 budgets in one heap: each still expires on time.
        budgets = [0.01 * (i + 1) for i in range(100)]
        results = await asyncio.gather(
            *(r.breaker.guard(timeout=b, fallback=lambda e: loop.time() - start).call_async(asyncio.sleep, 60) for b in budgets)
        )
        assert [round(x, 6) for x in results] == [round(b, 6) for b in budgets]

    run(main())
    assert r.breaker.metrics()["faults_total"] == 100


def scheduled(loop):
    """The loop's timer handles still to run (a cancelled one is only waiting to go)."""
    return sum(1 for handle in loop._scheduled if not handle.cancelled())


def test_per_call_budgets_share_one_timer_and_leave_none_behind(make):
    # A request's deadline passed down: every call its own budget (`deadline - loop.time()`).
    r = make(failure_threshold=10_000)

    async def main():
        loop = asyncio.get_running_loop()
        before = scheduled(loop)
        for i in range(500):
            await r.breaker.guard(timeout=30.0 + i / 1000).call_async(asyncio.sleep, 0)
        after_sequential = scheduled(loop) - before
        gate = asyncio.Event()
        tasks = [
            asyncio.ensure_future(r.breaker.guard(timeout=60.0 - i / 1000).call_async(gate.wait)) for i in range(300)
        ]
        await asyncio.sleep(0)
        while_out = scheduled(loop) - before
        gate.set()
        await asyncio.gather(*tasks)
        return after_sequential, while_out, scheduled(loop) - before

    after_sequential, while_out, after = asyncio.run(main())
    assert after_sequential <= 1, f"{after_sequential} timer handles left by 500 finished calls"
    assert while_out <= 1, f"{while_out} timer handles for 300 calls out"
    assert after <= 1
    assert r.breaker.metrics()["successes_total"] == 800


def test_earlier_deadlines_set_later_still_expire_first(make):
    r = make(failure_threshold=1000)

    async def main():
        loop = asyncio.get_running_loop()
        start = loop.time()
        # Each call started later with a shorter budget than the one before: its deadline
        # comes first, ahead of the timer already set.
        budgets = [1.0 - 0.009 * i for i in range(100)]
        calls = []
        for b in budgets:
            calls.append(asyncio.ensure_future(
                r.breaker.guard(timeout=b, fallback=lambda e: loop.time() - start).call_async(asyncio.sleep, 60)
            ))
            await asyncio.sleep(0.001)
        results = await asyncio.gather(*calls)
        assert [round(x, 6) for x in results] == [round(0.001 * i + b, 6) for i, b in enumerate(budgets)]

    run(main())
    assert r.breaker.metrics()["faults_total"] == 100


def test_a_call_that_swallows_its_cancellation_is_a_timeout_but_answers(make):
    r = make(failure_threshold=1, min_calls=1)

    async def stubborn():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "late answer"

    async def main():
        return await r.breaker.guard(timeout=1.0).call_async(stubborn)

    assert run(main()) == "late answer"
    assert r.breaker.metrics()["faults_total"] == 1 and r.breaker.state == "open"


def test_a_cancellation_from_someone_else_at_the_deadline_is_not_a_timeout(make):
    r = make(failure_threshold=1, min_calls=1, fallback="fallback")
    outer = []

    async def cancelled_twice():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            # At the deadline, someone else cancels the task too: that one must go on.
            asyncio.current_task().cancel()
            outer.append(True)
            raise

    async def main():
        task = asyncio.ensure_future(r.breaker.guard(timeout=1.0).call_async(cancelled_twice))
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    assert outer == [True]
    m = r.breaker.metrics()
    assert (m["faults_total"], m["in_flight"], m["state"]) == (0, 0, "closed")


def test_a_timed_call_outside_a_task_is_refused_and_gives_its_permit_back(make):
    r = make()

    async def answer():
        return 1

    call = r.breaker.guard(timeout=1.0).call_async(answer)
    assert r.breaker.metrics()["in_flight"] == 1
    with pytest.raises(RuntimeError):
        call.send(None)  # no running loop
    assert r.breaker.metrics()["in_flight"] == 0


def test_timed_calls_on_real_loops_one_after_another():
    # The loops of asyncio read time.monotonic(): the deadlines are read from the same
    # clock without asking the loop. Nothing here reaches its budget.
    b = CircuitBreaker(clock=FakeClock())
    guard = b.guard(timeout=60.0)

    async def answer(n):
        await asyncio.sleep(0)
        return n

    async def main():
        return await asyncio.gather(*(guard.call_async(answer, n) for n in range(50)))

    for _ in range(3):  # a fresh loop each time, the same budget
        assert asyncio.run(main()) == list(range(50))
    m = b.metrics()
    assert (m["successes_total"], m["faults_total"], m["in_flight"]) == (150, 0, 0)


def test_one_budget_on_two_loops_in_turn(make):
    r = make(failure_threshold=100, timeout=1.0)

    async def hangs():
        await asyncio.Event().wait()

    async def main():
        with pytest.raises(CallTimeoutError):
            await r.breaker.call_async(hangs)

    for _ in range(3):
        loop = FakeTimeLoop()
        try:
            loop.run_until_complete(main())
        finally:
            loop.close()
    assert r.breaker.metrics()["faults_total"] == 3


def test_a_loop_dropped_with_timed_calls_out_takes_them_along(make):
    # The deadlines hold their loop and tasks weakly: a loop closed and let go with a
    # call still out is collected, and the call's coroutine, closed, gives its permit back.
    import gc
    import weakref

    r = make()
    guard = r.breaker.guard(timeout=30.0)

    async def hangs():
        await asyncio.Event().wait()

    loop = FakeTimeLoop()
    task = loop.create_task(guard.call_async(hangs))
    loop.run_until_complete(asyncio.sleep(0.01))
    assert r.breaker.metrics()["in_flight"] == 1
    gone = weakref.ref(loop)
    loop.close()
    del loop, task
    gc.collect()
    assert gone() is None
    m = r.breaker.metrics()
    assert (m["in_flight"], m["faults_total"], m["successes_total"]) == (0, 0, 0)
