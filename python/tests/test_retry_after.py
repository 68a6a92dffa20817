"""The upstream's Retry-After (SPEC.md § Retry-After) in the package, against a real HTTP
server and a real gRPC server on 127.0.0.1: an answer that trips the breaker and asks its
callers to stay away keeps it open that long (bounded by max_cooldown), whichever way the
call went through the breaker; an answer the header does not apply to, or one that trips
nothing, asks nothing. Time is a FakeClock's (and, for an HTTP date, a replaced
``time.time``)."""

import asyncio
import time
from datetime import timedelta

import pytest

import tripgate

from servers import HttpServer, grpc_server

requests = pytest.importorskip("requests")
httpx = pytest.importorskip("httpx")


@pytest.fixture(scope="module")
def server():
    s = HttpServer()
    yield s
    s.close()


def breaker(**options):
    clock = tripgate.FakeClock()
    config = dict(failure_threshold=2, min_calls=2, cooldown=5, max_cooldown=120)
    config.update(options)
    return tripgate.CircuitBreaker(clock=clock, **config), clock


def open_for(b, clock):
    """How many whole seconds the breaker stays open, read off its rejection and its clock."""
    assert b.state == "open"
    rejection = b.acquire()
    assert not rejection and rejection.reason == "open"
    seconds = rejection.retry_after
    clock.advance(seconds - 0.001)
    assert b.state == "open"
    clock.advance(0.001)
    assert b.state == "half-open"
    return seconds


def trip(b, fetch, url):
    for _ in range(2):
        try:
            b.call(fetch, url)
        except Exception:  # noqa: BLE001 - an error raised for the status
            pass


def raising(get):
    def fetch(url):
        response = get(url)
        response.raise_for_status()
        return response

    return fetch


CLIENTS = {
    "requests": requests.get,
    "httpx": httpx.get,
    "requests, raise_for_status": raising(requests.get),
    "httpx, raise_for_status": raising(httpx.get),
}


@pytest.mark.parametrize("client", CLIENTS, ids=str)
def test_a_503_asking_for_a_minute_keeps_the_breaker_open_a_minute(server, client):
    b, clock = breaker()
    trip(b, CLIENTS[client], f"{server.url}/status/503?retry-after=60")
    assert open_for(b, clock) == 60.0


@pytest.mark.parametrize("client", CLIENTS, ids=str)
def test_a_500_with_a_retry_after_keeps_the_cooldown(server, client):
    b, clock = breaker()
    trip(b, CLIENTS[client], f"{server.url}/status/500?retry-after=60")
    assert open_for(b, clock) == 5.0


def test_the_delay_is_bounded_by_max_cooldown_and_without_it_the_cooldown_stands(server):
    b, clock = breaker(max_cooldown=30)
    trip(b, requests.get, f"{server.url}/status/429?retry-after=600")
    assert open_for(b, clock) == 30.0
    # No max_cooldown and no backoff: an opening never outlasts the cooldown.
    b, clock = breaker(max_cooldown=None)
    trip(b, requests.get, f"{server.url}/status/503?retry-after=60")
    assert open_for(b, clock) == 5.0


def test_only_the_answer_that_trips_counts(server):
    b, clock = breaker()
    b.call(requests.get, f"{server.url}/status/503?retry-after=90")
    b.call(requests.get, f"{server.url}/status/503")
    assert open_for(b, clock) == 5.0
    # A success that asks for a stay-away asks the breaker nothing either.
    b, clock = breaker(failure_threshold=1, min_calls=1)
    b.call(requests.get, f"{server.url}/status/200?pushback=60000")
    assert b.state == "closed"
    b.call(requests.get, f"{server.url}/status/503?retry-after=45")
    assert open_for(b, clock) == 45.0


def test_an_http_date_is_read_against_time_time(server, monkeypatch):
    monkeypatch.setattr(time, "time", lambda: 784111717.0)  # Sun, 06 Nov 1994 08:48:37 GMT
    b, clock = breaker()
    url = f"{server.url}/status/503"
    for _ in range(2):
        b.call(requests.get, url, params={"retry-after": "Sun, 06 Nov 1994 08:49:37 GMT"})
    assert open_for(b, clock) == 60.0


def test_a_pushback_header_and_a_failed_probe_round(server):
    b, clock = breaker(half_open_max_probes=1, half_open_required_successes=1)
    trip(b, httpx.get, f"{server.url}/status/502?pushback=20000")
    assert open_for(b, clock) == 20.0
    # The probe fails asking for 40 s: the breaker opens again for that long.
    b.call(httpx.get, f"{server.url}/status/503?retry-after=40")
    assert open_for(b, clock) == 40.0


def test_decorators_with_blocks_and_record_result_read_the_headers(server):
    b, clock = breaker()

    @b
    def fetch(path):
        return requests.get(f"{server.url}{path}")

    fetch("/status/503?retry-after=70")
    with b as permit:
        permit.record(requests.get(f"{server.url}/status/503?retry-after=80"))
    assert open_for(b, clock) == 80.0

    b, clock = breaker()
    for _ in range(2):
        try:
            with b:
                raising(httpx.get)(f"{server.url}/status/429?retry-after=65")
        except httpx.HTTPStatusError:
            pass
    assert open_for(b, clock) == 65.0

    b, clock = breaker()
    for _ in range(2):
        b.acquire().record_result(httpx.get(f"{server.url}/status/503?retry-after=75"))
    assert open_for(b, clock) == 75.0


def test_call_async_reads_httpx_and_aiohttp_answers(server):
    aiohttp = pytest.importorskip("aiohttp")

    async def main():
        b, clock = breaker()
        async with httpx.AsyncClient() as client:
            for _ in range(2):
                await b.call_async(client.get, f"{server.url}/status/503?retry-after=50")
        assert open_for(b, clock) == 50.0

        b, clock = breaker(timeout=5)  # the timed frame records the same way
        async with aiohttp.ClientSession() as session:

            async def get(path, **kw):
                async with session.get(f"{server.url}{path}", **kw) as response:
                    await response.read()
                    return response

            await b.call_async(get, "/status/503?retry-after=55")
            with pytest.raises(aiohttp.ClientResponseError):
                await b.call_async(get, "/status/503?retry-after=57", raise_for_status=True)
        assert open_for(b, clock) == 57.0

    asyncio.run(main())


def test_classify_decides_the_outcome_and_the_headers_still_ask(server):
    # A 503 the application reads as a plain failure still carries its Retry-After.
    b, clock = breaker(classify=lambda value: "failure" if getattr(value, "status_code", 0) == 503 else None)
    trip(b, requests.get, f"{server.url}/status/503?retry-after=60")
    assert open_for(b, clock) == 60.0


def test_a_grpc_pushback_in_trailing_metadata():
    grpc = pytest.importorskip("grpc")
    server, target = grpc_server()
    try:
        with grpc.insecure_channel(target) as channel:
            fail = channel.unary_unary("/tripgate.Test/Fail")
            with pytest.raises(grpc.RpcError) as caught:
                fail(b"14 60000", timeout=5)
            assert tripgate.retry_after_of(caught.value) == 60.0
            b, clock = breaker()
            for _ in range(2):
                with pytest.raises(grpc.RpcError):
                    b.call(fail, b"14 60000", timeout=5)
            assert open_for(b, clock) == 60.0
            # A negative pushback ("do not retry") asks the breaker nothing.
            b, clock = breaker()
            for _ in range(2):
                with pytest.raises(grpc.RpcError):
                    b.call(fail, b"14 -1", timeout=5)
            assert open_for(b, clock) == 5.0
    finally:
        server.stop(None)


def test_record_takes_a_stay_away_of_its_own():
    b, clock = breaker()
    b.acquire().record("status:503", retry_after=30)
    assert b.acquire().record(503, retry_after=timedelta(seconds=90)) == "fault"
    assert open_for(b, clock) == 90.0
    # Given, it replaces what the answer's headers say; 0 asks nothing.
    b, clock = breaker()
    answer = httpx.Response(503, headers={"Retry-After": "60"})
    b.acquire().record(answer)
    b.acquire().record(answer, retry_after=0)
    assert open_for(b, clock) == 5.0


@pytest.mark.parametrize(
    "value, error",
    [(-1, ValueError), (float("nan"), ValueError), (float("inf"), ValueError),
     (timedelta(seconds=-1), ValueError), ("60", TypeError), (True, TypeError), ([60], TypeError)],
    ids=repr,
)
def test_a_stay_away_the_breaker_cannot_read_leaves_the_permit_out(value, error):
    b, _ = breaker()
    permit = b.acquire()
    with pytest.raises(error, match="retry_after must be"):
        permit.record("status:503", retry_after=value)
    assert permit.pending
    assert permit.record("status:503", retry_after=2**80) == "fault"  # saturates
