"""Retries that cannot become a storm (SPEC.md § Retries) through the package, against a
real HTTP server on 127.0.0.1 that counts the requests it gets: a fault is retried up to
``max_attempts``, each attempt admitted by the breaker, whose rejection ends the retries;
the budget the breaker's callers share (threads too) bounds them; an upstream asking to
be left alone longer than ``max_delay`` is not retried; only faults are. Plain calls wait
on the breaker's ``FakeClock`` (no wall time); awaited ones in ``asyncio.sleep`` on the
fake-time loop (tests/fakeloop.py), where a cancelled task ends its wait and leaves no
attempt in flight."""

import asyncio
import threading
import time
import uuid

import pytest

import tripgate

from fakeloop import run
from servers import HttpServer, closed_port

requests = pytest.importorskip("requests")
httpx = pytest.importorskip("httpx")


@pytest.fixture(scope="module")
def server():
    s = HttpServer()
    yield s
    s.close()


def breaker(**options):
    """A breaker that trips late unless told otherwise, on a FakeClock."""
    clock = tripgate.FakeClock(100.0)
    config = dict(failure_threshold=50, min_calls=50, cooldown=30)
    config.update(options)
    return tripgate.CircuitBreaker(clock=clock, **config), clock


def path():
    """A path of the server's no other test has asked for."""
    return f"/flaky/{uuid.uuid4().hex}"


def test_a_503_is_retried_up_to_max_attempts_on_the_breakers_clock(server):
    b, clock = breaker()
    retried = b.guard(retries=b.retries(max_attempts=4, base_delay=5, max_delay=30))
    where = path()
    started = time.monotonic()
    response = retried.call(requests.get, f"{server.url}{where}?fails=10")
    assert response.status_code == 503
    assert server.hits(where) == 4
    # Three waits of up to 5, 10 and 20 s went by on the FakeClock, not on the wall.
    assert 0 < clock.now() - 100.0 <= 35.0
    assert time.monotonic() - started < 5.0
    assert b.metrics()["faults_total"] == 4 and b.metrics()["in_flight"] == 0


@pytest.mark.parametrize("get", [requests.get, httpx.get], ids=["requests", "httpx"])
def test_an_upstream_that_recovers_answers_the_call(server, get):
    b, _ = breaker()
    where = path()
    response = b.guard(retries=b.retries()).call(get, f"{server.url}{where}?fails=2")
    assert response.status_code == 200 and server.hits(where) == 3
    assert (b.metrics()["faults_total"], b.metrics()["successes_total"]) == (2, 1)


def test_a_raised_fault_is_retried_and_the_last_one_raised_or_fallen_back(server):
    b, _ = breaker()
    retries = b.retries(max_attempts=3)

    def fetch(url):
        response = httpx.get(url)
        response.raise_for_status()
        return response

    where = path()
    with pytest.raises(httpx.HTTPStatusError):
        b.guard(retries=retries).call(fetch, f"{server.url}{where}?fails=10")
    assert server.hits(where) == 3
    # A connection refused is a fault too; the fallback answers for the last attempt.
    seen = []
    answer = b.guard(retries=retries, fallback=lambda error: seen.append(error) or "cached").call(
        requests.get, f"http://127.0.0.1:{closed_port()}/"
    )
    assert answer == "cached" and isinstance(seen[0], requests.ConnectionError)
    assert b.metrics()["faults_total"] == 6


def test_what_is_no_fault_is_not_retried(server):
    b, _ = breaker()
    retried = b.guard(retries=b.retries(max_attempts=5))
    for status in (200, 404, 418):
        before = server.hits(f"/status/{status}")
        assert retried.call(requests.get, f"{server.url}/status/{status}").status_code == status
        assert server.hits(f"/status/{status}") == before + 1
    assert b.metrics()["faults_total"] == 0


def test_once_the_breaker_trips_its_rejection_ends_the_retries(server):
    b, _ = breaker(failure_threshold=2, min_calls=2)
    retried = b.guard(retries=b.retries(max_attempts=6))
    where = path()
    with pytest.raises(tripgate.CircuitOpenError) as caught:
        retried.call(requests.get, f"{server.url}{where}?fails=100")
    assert caught.value.reason == "open" and caught.value.breaker == "default"
    # Two attempts tripped it; the third was turned away and never reached the server.
    assert server.hits(where) == 2 and b.state == "open"
    for _ in range(5):
        with pytest.raises(tripgate.CircuitOpenError):
            retried.call(requests.get, f"{server.url}{where}?fails=100")
    assert server.hits(where) == 2
    # With a fallback, the rejection is the fallback's to answer.
    fallen = b.guard(retries=b.retries(), fallback=lambda error: error.reason)
    assert fallen.call(requests.get, f"{server.url}{where}") == "open"
    assert server.hits(where) == 2


def test_no_budget_no_retry(server):
    b, _ = breaker()
    retried = b.guard(retries=b.retries(max_attempts=5, budget_percent=0, min_retries_per_second=0))
    where = path()
    assert retried.call(requests.get, f"{server.url}{where}?fails=10").status_code == 503
    assert server.hits(where) == 1


def test_the_floor_alone_allows_its_retries_each_second(server):
    b, clock = breaker()
    retried = b.guard(retries=b.retries(max_attempts=2, budget_percent=0, min_retries_per_second=2))
    where = path()
    for _ in range(4):
        retried.call(requests.get, f"{server.url}{where}?fails=100")
    # Four calls within one second of the breaker's clock: two of them retried.
    assert server.hits(where) == 6
    clock.advance(1.0)
    retried.call(requests.get, f"{server.url}{where}?fails=100")
    assert server.hits(where) == 8


def test_a_stay_away_longer_than_max_delay_is_not_retried_and_a_shorter_one_is_waited(server):
    b, clock = breaker()
    retried = b.guard(retries=b.retries(max_attempts=3, max_delay=2))
    where = path()
    response = retried.call(requests.get, f"{server.url}{where}?fails=10&retry-after=60")
    assert response.status_code == 503 and server.hits(where) == 1
    assert clock.now() == 100.0
    # Asked for 1 s, longer than any draw under a 0.05 s base: each wait is the second.
    where = path()
    retried.call(requests.get, f"{server.url}{where}?fails=10&retry-after=1")
    assert server.hits(where) == 3 and clock.now() == pytest.approx(102.0)


def test_the_callers_of_one_breaker_share_one_budget_across_threads(server):
    b, _ = breaker()
    retries = b.retries(max_attempts=4, budget_percent=0, min_retries_per_second=3)
    assert b.retries() == retries and b.retries(max_attempts=4, min_retries_per_second=3, budget_percent=0) == retries
    where = path()
    url = f"{server.url}{where}?fails=1000"
    callers = [threading.Thread(target=b.guard(retries=retries).call, args=(requests.get, url)) for _ in range(8)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(30)
    # Eight calls, and the three retries this second allows among all of them.
    assert server.hits(where) == 8 + 3
    assert b.metrics()["in_flight"] == 0


def test_a_decorated_function_retries_and_a_generator_cannot(server):
    b, _ = breaker()
    retries = b.retries(max_attempts=3)
    where = path()

    @b.guard(retries=retries)
    def fetch(url):
        return requests.get(url)

    assert fetch(f"{server.url}{where}?fails=1").status_code == 200
    assert server.hits(where) == 2
    assert b.guard(retries=retries).retries == retries and b.guard().retries is None
    with pytest.raises(TypeError, match="cannot be retried"):

        @b.guard(retries=retries)
        def items():
            yield 1


def test_retries_are_one_per_breaker(server):
    b, _ = breaker()
    retries = b.retries(max_attempts=4, base_delay=0.1)
    with pytest.raises(ValueError) as caught:
        b.retries(max_attempts=5)
    assert caught.value.option == "max_attempts"
    assert "one retry policy" in str(caught.value)
    other, _ = breaker()
    with pytest.raises(ValueError) as caught:
        other.guard(retries=retries)
    assert caught.value.option == "retries"
    with pytest.raises(TypeError) as caught:
        b.guard(retries=3)
    assert caught.value.option == "retries"
    assert retries.breaker is b and "4 attempts" in repr(retries)


BAD_POLICIES = [
    (dict(max_attempts=0), ValueError, "max_attempts", "max_attempts must be between 1 and 10"),
    (dict(max_attempts=11), ValueError, "max_attempts", "max_attempts must be between 1 and 10"),
    (dict(max_attempts=3.0), TypeError, "max_attempts", "max_attempts must be an int, not float"),
    (dict(base_delay=0), ValueError, "base_delay", "base_delay must be > 0"),
    (dict(base_delay="50ms"), TypeError, "base_delay", "base_delay must be a number of seconds"),
    (dict(max_delay=0.01), ValueError, "max_delay", "max_delay must be >= base_delay"),
    (dict(budget_percent=1001), ValueError, "budget_percent", "budget_percent must be between 0 and 1000"),
    (dict(budget_percent=-1), ValueError, "budget_percent", "budget_percent must be between 0 and 1000"),
    (dict(min_retries_per_second=2**32), ValueError, "min_retries_per_second", "must be <= 4294967295"),
    (dict(seed=-1), ValueError, "seed", "seed must be between 0 and 18446744073709551615"),
    (dict(retries=3), TypeError, "retries", "unknown retries option retries (did you mean max_attempts?)"),
    (dict(base_delay_ms=50), TypeError, "base_delay_ms", "(did you mean base_delay?)"),
]


@pytest.mark.parametrize("options, kind, option, message", BAD_POLICIES, ids=[m for *_, m in BAD_POLICIES])
def test_a_bad_policy_is_refused_naming_the_option(options, kind, option, message):
    b = tripgate.CircuitBreaker()
    with pytest.raises(kind) as caught:
        b.retries(**options)
    assert caught.value.option == option and message in str(caught.value)
    # Nothing was made: the defaults are still to be had.
    assert b.retries().max_attempts == 3


# Awaited calls: httpx's AsyncClient on the fake-time loop (no client timeout, so the loop
# only jumps its clock over the retries' waits and the guards' budgets).


def test_an_awaited_503_is_retried_up_to_max_attempts_in_asyncio_sleep(server):
    b, clock = breaker()
    retries = b.retries(max_attempts=4, base_delay=5, max_delay=30)
    where = path()

    async def main():
        loop = asyncio.get_running_loop()
        async with httpx.AsyncClient(timeout=None) as client:
            began = loop.time()
            response = await b.guard(retries=retries).call_async(client.get, f"{server.url}{where}?fails=10")
            return response, loop.time() - began

    started = time.monotonic()
    response, waited = run(main())
    assert response.status_code == 503 and server.hits(where) == 4
    # Three waits of up to 5, 10 and 20 s on the loop's clock; the breaker's stood still.
    assert 0 < waited <= 35.0 and clock.now() == 100.0
    assert time.monotonic() - started < 5.0
    assert b.metrics()["faults_total"] == 4 and b.metrics()["in_flight"] == 0


def test_an_awaited_call_ends_at_the_breakers_rejection_or_its_fallback(server):
    b, _ = breaker(failure_threshold=2, min_calls=2)
    retries = b.retries(max_attempts=6)
    where = path()

    @b.guard(retries=retries)
    async def fetch(client):
        return await client.get(f"{server.url}{where}?fails=100")

    async def main():
        async with httpx.AsyncClient(timeout=None) as client:
            with pytest.raises(tripgate.CircuitOpenError):
                await fetch(client)
            fallen = b.guard(retries=retries, fallback="cached")
            return await fallen.call_async(client.get, f"{server.url}{where}")

    assert run(main()) == "cached"
    assert server.hits(where) == 2 and b.state == "open"


def test_cancelling_a_task_during_a_wait_ends_the_wait_with_nothing_in_flight(server):
    b, _ = breaker()
    retries = b.retries(max_attempts=3, max_delay=60)
    where = path()

    async def main():
        loop = asyncio.get_running_loop()
        answered = asyncio.Event()
        async with httpx.AsyncClient(timeout=None) as client:

            async def get():
                # Asked to stay away 50 s: the wait before the retry is those 50 s.
                response = await client.get(f"{server.url}{where}?fails=10&retry-after=50")
                answered.set()
                return response

            began = loop.time()
            task = asyncio.ensure_future(b.guard(retries=retries).call_async(get))
            await answered.wait()
            assert b.metrics()["in_flight"] == 0, "the first attempt was recorded"
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return loop.time() - began

    assert run(main()) < 50.0
    assert server.hits(where) == 1
    assert b.metrics()["in_flight"] == 0 and b.metrics()["faults_total"] == 1


def test_cancelling_a_task_during_a_retry_releases_that_attempt_as_cancelled(server):
    b, _ = breaker()
    retries = b.retries(max_attempts=3)
    where = path()

    async def main():
        second = asyncio.Event()
        attempts = []
        async with httpx.AsyncClient(timeout=None) as client:

            async def get():
                attempts.append(1)
                if len(attempts) == 2:
                    second.set()
                # A 503, then a request the server holds.
                return await client.get(f"{server.url}{where}?fails=1&then=stall")

            task = asyncio.ensure_future(b.guard(retries=retries).call_async(get))
            await second.wait()
            assert b.metrics()["in_flight"] == 1, "the retry is in flight"
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return len(attempts)

    assert run(main()) == 2
    assert b.metrics()["in_flight"] == 0
    # The first attempt's 503 counted; the cancelled retry counted nothing.
    assert (b.metrics()["faults_total"], b.metrics()["successes_total"]) == (1, 0)


def test_each_attempt_has_the_guards_timeout(server):
    b, _ = breaker()
    retries = b.retries(max_attempts=3)
    where = path()

    async def main():
        async with httpx.AsyncClient(timeout=None) as client:
            guard = b.guard(timeout=1.0, retries=retries)
            with pytest.raises(tripgate.CallTimeoutError):
                await guard.call_async(client.get, f"{server.url}{where}?fails=0&then=stall")

    run(main())
    # Three attempts, each cancelled at its budget and counted a timeout fault.
    assert b.metrics()["faults_total"] == 3 and b.metrics()["in_flight"] == 0
