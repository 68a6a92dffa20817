"""Classification the way Python users meet failures, against real services on
127.0.0.1: requests, httpx and aiohttp responses and errors, gRPC status codes, and
the cause chain's bound (the core's MAX_CAUSES)."""

import asyncio
import http
import socket

import pytest

import tripgate
from tripgate import classify_error, classify_result

from servers import HttpServer, closed_port, grpc_server


@pytest.fixture(scope="module")
def server():
    s = HttpServer()
    yield s
    s.close()


def outcome_of_call(fn, *args, **kwargs):
    """The class the breaker gave the call (from its counters)."""
    b = tripgate.CircuitBreaker(clock=tripgate.FakeClock(), failure_threshold=100)
    try:
        b.call(fn, *args, **kwargs)
    except Exception:
        pass
    m = b.metrics()
    return "fault" if m["faults_total"] else "success" if m["successes_total"] else "neutral"


# Plain Python


@pytest.mark.parametrize(
    "error,outcome",
    [
        (TimeoutError(), "timeout"),
        (socket.timeout(), "timeout"),
        (asyncio.TimeoutError(), "timeout"),
        (ConnectionRefusedError(), "connection-error"),
        (ConnectionResetError(), "connection-error"),
        (BrokenPipeError(), "connection-error"),
        (socket.gaierror(-2, "Name or service not known"), "connection-error"),
        (OSError(111, "refused"), "connection-error"),
        (OSError(110, "timed out"), "timeout"),
        (OSError(2, "no such file"), "failure"),
        (ValueError("bad"), "failure"),
        (KeyboardInterrupt(), "cancelled"),
        (asyncio.CancelledError(), "cancelled"),
    ],
)
def test_builtin_exceptions(error, outcome):
    assert classify_error(error) == outcome


def test_the_cause_chain_is_followed_at_most_max_causes_deep():
    def chain(depth, root):
        error = root
        for i in range(depth):
            try:
                raise RuntimeError(f"wrapper {i}") from error
            except RuntimeError as wrapped:
                error = wrapped
        return error

    assert tripgate.MAX_CAUSES == 8
    # The error itself and seven causes: the eighth exception of the chain is looked at.
    assert classify_error(chain(7, ConnectionRefusedError())) == "connection-error"
    assert classify_error(chain(8, ConnectionRefusedError())) == "failure"
    # __context__ (an error raised while handling another) counts too...
    try:
        try:
            raise TimeoutError
        except TimeoutError:
            raise RuntimeError("while handling")
    except RuntimeError as error:
        assert classify_error(error) == "timeout"
    # ...unless suppressed (raise ... from None).
    try:
        try:
            raise TimeoutError
        except TimeoutError:
            raise RuntimeError("replaced") from None
    except RuntimeError as error:
        assert classify_error(error) == "failure"


def test_a_chain_that_loops_still_ends():
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__cause__, b.__cause__ = b, a
    assert classify_error(a) == "failure"


def test_returned_values():
    class Aiohttp:
        status = 503

    class Flask:
        status = "200 OK"
        status_code = 200

    class Odd:
        status_code = 700

    assert classify_result(None) == "success"
    assert classify_result({"status": 500}) == "success"  # a dict is data, not a response
    assert classify_result(Aiohttp()) == "status:503"
    assert classify_result(Flask()) == "status:200"
    assert classify_result(Odd()) == "failure"
    assert classify_result(type("R", (), {"status_code": http.HTTPStatus.TOO_MANY_REQUESTS})()) == "status:429"


# requests


def test_requests(server):
    requests = pytest.importorskip("requests")
    assert outcome_of_call(requests.get, f"{server.url}/status/503") == "fault"
    assert outcome_of_call(requests.get, f"{server.url}/status/429") == "fault"
    assert outcome_of_call(requests.get, f"{server.url}/status/404") == "success"
    with pytest.raises(requests.ConnectionError) as refused:
        requests.get(f"http://127.0.0.1:{closed_port()}/")
    assert classify_error(refused.value) == "connection-error"
    with pytest.raises(requests.ReadTimeout) as late:
        requests.get(f"{server.url}/stall", timeout=0.05)
    assert classify_error(late.value) == "timeout"
    with pytest.raises(requests.HTTPError) as status:
        requests.get(f"{server.url}/status/502").raise_for_status()
    assert classify_error(status.value) == "status:502"


# httpx


def test_httpx(server):
    httpx = pytest.importorskip("httpx")
    assert outcome_of_call(httpx.get, f"{server.url}/status/500") == "fault"
    assert outcome_of_call(httpx.get, f"{server.url}/status/401") == "success"
    with pytest.raises(httpx.ConnectError) as refused:
        httpx.get(f"http://127.0.0.1:{closed_port()}/")
    assert classify_error(refused.value) == "connection-error"
    with pytest.raises(httpx.ReadTimeout) as late:
        httpx.get(f"{server.url}/stall", timeout=0.05)
    assert classify_error(late.value) == "timeout"
    with pytest.raises(httpx.HTTPStatusError) as status:
        httpx.get(f"{server.url}/status/503").raise_for_status()
    assert classify_error(status.value) == "status:503"


# aiohttp


def test_aiohttp(server):
    aiohttp = pytest.importorskip("aiohttp")

    async def main():
        b = tripgate.CircuitBreaker(clock=tripgate.FakeClock(), failure_threshold=100)
        async with aiohttp.ClientSession() as session:

            async def get(path, **kw):
                async with session.get(f"{server.url}{path}", **kw) as response:
                    await response.read()
                    return response

            assert (await b.call_async(get, "/status/503")).status == 503
            assert (await b.call_async(get, "/status/404")).status == 404
            m = b.metrics()
            assert (m["faults_total"], m["successes_total"]) == (1, 1)
            with pytest.raises(aiohttp.ClientConnectionError) as refused:
                await session.get(f"http://127.0.0.1:{closed_port()}/")
            assert classify_error(refused.value) == "connection-error"
            with pytest.raises(asyncio.TimeoutError) as late:
                await get("/stall", timeout=aiohttp.ClientTimeout(total=0.05))
            assert classify_error(late.value) == "timeout"
            with pytest.raises(aiohttp.ClientResponseError) as status:
                await get("/status/429", raise_for_status=True)
            assert classify_error(status.value) == "status:429"

    asyncio.run(main())


# gRPC


def test_grpc_status_codes():
    grpc = pytest.importorskip("grpc")
    server, target = grpc_server()
    try:
        with grpc.insecure_channel(target) as channel:
            fail = channel.unary_unary("/tripgate.Test/Fail")
            b = tripgate.CircuitBreaker(clock=tripgate.FakeClock(), failure_threshold=2, min_calls=2)
            for code, outcome in ((14, "grpc:14"), (5, "grpc:5"), (3, "grpc:3"), (4, "grpc:4")):
                with pytest.raises(grpc.RpcError) as caught:
                    b.call(fail, str(code).encode(), timeout=5)
                assert classify_error(caught.value) == outcome
            # UNAVAILABLE and DEADLINE_EXCEEDED are faults; NOT_FOUND and
            # INVALID_ARGUMENT mean the upstream answered.
            assert b.state == "open"
            m = b.metrics()
            assert (m["faults_total"], m["successes_total"]) == (2, 2)
    finally:
        server.stop(None)
