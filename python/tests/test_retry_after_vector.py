"""The Retry-After vector (tests/vectors/retry-after/retry-after.json) on the package's
``retry_after_of``, which reads what ``call`` reads: each case's header on real response
types (httpx's and requests', and a stand-in whose headers are a plain dict), directly and
through the exception that carries the response, with ``time.time`` reading the case's
wall clock; and ``applies-to-statuses``: a ``Retry-After`` counts on those statuses only."""

import json
import pathlib
import time

import httpx
import pytest
import requests

import tripgate

VECTOR = pathlib.Path(__file__).resolve().parents[2] / "tests" / "vectors" / "retry-after" / "retry-after.json"
CASES = json.loads(VECTOR.read_text())

# The header as a server spells it: the reading must not depend on case.
SPELLED = {"retry-after": "Retry-After", "grpc-retry-pushback-ms": "Grpc-Retry-Pushback-Ms"}


class StandIn:
    """A response of no library: a status and a plain dict of headers."""

    def __init__(self, status, headers):
        self.status_code = status
        self.headers = dict(headers)


def requests_response(status, headers):
    response = requests.Response()
    response.status_code = status
    response.headers.update(headers)
    return response


def answers(status, headers):
    """The same answer as each kind of response, and as each error carrying one."""
    got = httpx.Response(status, headers=headers, request=httpx.Request("GET", "http://upstream/"))
    yield "httpx", got
    yield "httpx.HTTPStatusError", httpx.HTTPStatusError("failed", request=got.request, response=got)
    made = requests_response(status, headers)
    yield "requests", made
    yield "requests.HTTPError", requests.HTTPError("failed", response=made)
    yield "stand-in", StandIn(status, headers)


def ms(seconds):
    return None if seconds is None else int(seconds * 1000)


def test_every_case_reads_as_the_vector_says(monkeypatch):
    failed, read = [], 0
    for case in CASES["cases"]:
        monkeypatch.setattr(time, "time", lambda now=case["unix-now"]: float(now))
        headers = {SPELLED[case["header"]]: case["value"]}
        # A Retry-After counts on a 503 (and a 429, below); a pushback on any answer.
        statuses = [503, 429] if case["header"] == "retry-after" else [200, 503]
        for status in statuses:
            for kind, answer in answers(status, headers):
                read += 1
                got = ms(tripgate.retry_after_of(answer))
                if got != case["ms"]:
                    failed.append(f"{case['name']} ({kind}, {status}): got {got}, expected {case['ms']}")
    assert failed == []
    assert read == 10 * len(CASES["cases"]) >= 200


def test_a_retry_after_counts_on_the_listed_statuses_only():
    listed = set(CASES["applies-to-statuses"])
    assert listed == {429, 503}
    for status in range(100, 600):
        want = 30.0 if status in listed else None
        for kind, answer in answers(status, {"Retry-After": "30"}):
            assert tripgate.retry_after_of(answer) == want, (kind, status)


def test_the_wall_clock_is_read_at_each_answer(monkeypatch):
    date = "Sun, 06 Nov 1994 08:49:37 GMT"
    answer = httpx.Response(503, headers={"Retry-After": date})
    monkeypatch.setattr(time, "time", lambda: 784111717.9)  # whole seconds count
    assert tripgate.retry_after_of(answer) == 60.0
    monkeypatch.setattr(time, "time", lambda: 784111777.0)
    assert tripgate.retry_after_of(answer) == 0.0


@pytest.mark.parametrize(
    "value",
    [None, 503, "status:503", {"Retry-After": "30"}, ValueError("no answer"), KeyboardInterrupt()],
    ids=repr,
)
def test_what_carries_no_answer_asks_nothing(value):
    assert tripgate.retry_after_of(value) is None
