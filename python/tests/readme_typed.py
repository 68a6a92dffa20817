"""What a user writes from the package README, checked by `mypy --strict` and run
(test_typing.py): the README's calls on a FakeClock, against httpx's mock transport
instead of the network; fleet mode is type-checked, not run (it needs a Redis)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, Dict, List, Optional

import httpx
from prometheus_client import CollectorRegistry, generate_latest

import tripgate
from tripgate.fleet import FleetStatus, FleetStore
from tripgate.prometheus import TripgateCollector

clock = tripgate.FakeClock()
payments = tripgate.CircuitBreaker(
    name="payments", failure_threshold=5, cooldown=15, window=timedelta(seconds=30), clock=clock
)


def answer(request: httpx.Request) -> httpx.Response:
    return httpx.Response(503 if request.url.path == "/down" else 200, json={"ok": True})


session = httpx.Client(transport=httpx.MockTransport(answer), base_url="https://payments.example")
body: Dict[str, Any] = {"amount": 10}

# One step: run the call, classify its result, record it, return it.
response = payments.call(session.post, "/charge", json=body, timeout=2)
status: int = response.status_code


@payments.guard(fallback=lambda error: {"queued": True})
def charge(body: Dict[str, Any]) -> Dict[str, Any]:
    reply: Dict[str, Any] = session.post("/charge", json=body, timeout=2).json()
    return reply


@payments
def refund(amount: int) -> int:
    return amount


async def charge_async(url: str) -> int:
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        r = await payments.guard(timeout=2.0).call_async(client.post, url, json=body)
        async with payments as permit:
            permit.record(await client.get(url))
        return r.status_code


permit = payments.acquire()
if not permit:
    reason: str = permit.reason
    retry_after: float = permit.retry_after
else:
    permit.record(session.get("/down"))
    was_slow: Optional[bool] = permit.slow


@payments.on_transition
def heard(transition: tripgate.Transition) -> None:
    print(transition.from_state, "->", transition.to_state, transition.reason)


# Shadow mode: every decision made and counted, every call admitted.
shadowed = tripgate.CircuitBreaker(name="search", shadow=True, failure_threshold=1, min_calls=1, clock=clock)
first = shadowed.acquire()
if first:
    first.record(503, retry_after=timedelta(seconds=30))  # the upstream asked for 30 s
second = shadowed.acquire()
would_reject = False
if second:  # admitted, though the breaker is open: a shadow permit
    would_reject = second.shadow
    second.record(session.get("/charge"))
shadow_counts: Dict[str, int] = shadowed.metrics()["shadow_rejected"]
asked: Optional[float] = tripgate.retry_after_of(httpx.Response(503, headers={"Retry-After": "120"}))

# Retries: one policy and one budget per breaker; every attempt admitted by the breaker.
orders_clock = tripgate.FakeClock()
orders = tripgate.CircuitBreaker(name="orders", clock=orders_clock)
retries: tripgate.Retries = orders.retries(max_attempts=4)
retried = orders.guard(retries=retries, timeout=2.0)
down = retried.call(session.get, "/down")  # a 503 tried four times, waits on orders_clock
attempts: int = retries.max_attempts
wait, why = retries.next(1, "neutral")


@orders.guard(retries=retries)
async def order_status(client: httpx.AsyncClient, url: str) -> int:
    return (await client.get(url)).status_code


async def orders_async(url: str) -> int:
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        return await order_status(client, url)


registry = tripgate.Registry(clock=clock, failure_threshold=3)
search = registry.get("search", cooldown=5)
names: List[str] = list(registry)
reloaded: Optional[tripgate.Reconfigured] = registry.reconfigure("search", cooldown=10)
added = registry.reconfigure("orders", cooldown=10)
tightened = payments.reconfigure(failure_threshold=3, cooldown=15, window=timedelta(seconds=30))
kept: bool = tightened.window_kept
made: List[tripgate.Transition] = tightened.transitions
scrape = CollectorRegistry()
scrape.register(TripgateCollector(registry))



def join_fleet(url: str, key: str) -> FleetStatus:
    store = FleetStore.connect(url, key=key, member="web-1")
    fleet = store.join("payments", tripgate.CircuitBreaker(name="payments", fleet_quorum=2))
    status = fleet.status()
    fleet.leave()
    store.close()
    return status


saved: bytes = payments.export_state()
restored = tripgate.CircuitBreaker.from_state(saved, 1.5, name="payments", clock=clock)
transitions: List[tripgate.Transition] = restored.isolate()
metrics: Dict[str, Any] = payments.metrics()

if __name__ == "__main__":
    assert charge(body) == {"ok": True} and refund(3) == 3 and status == 200
    assert asyncio.run(charge_async("https://payments.example/charge")) == 200
    try:
        restored.call(session.get, "/charge")
    except tripgate.CircuitOpenError as error:
        assert error.reason == "isolated" and error.breaker == "payments"
    assert [t.to_state for t in transitions] == ["isolated"] and search.name == "search"
    assert b"tripgate" in generate_latest(scrape) and names == ["search"]
    assert reloaded is not None and reloaded.window_kept and added is None and kept
    assert would_reject and shadow_counts["open"] == 1 and asked == 120.0
    assert down.status_code == 503 and orders.metrics()["faults_total"] == attempts == 4
    assert orders_clock.now() > 0 and wait is None and why == "answered"
    assert asyncio.run(orders_async("https://orders.example/1")) == 200
    print("ran", metrics["successes_total"], "successes")
