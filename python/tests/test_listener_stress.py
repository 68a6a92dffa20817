"""Every transition reaches the listeners, under contention too: sixteen threads drive one
breaker through thousands of trips and recoveries, and the listeners hear each transition
once, by epoch, without a gap. A read (``metrics()``, ``state``) also counts the
transitions time alone has made due (an open breaker past its cooldown reads half-open,
SPEC.md § effective state) before any call makes them; the next call makes them, dated
when they fell due, and the listeners hear them then. Time is a FakeClock that the
threads move."""

import random
import threading

import tripgate

THREADS = 16
CALLS = 4000


def test_a_read_counts_what_time_made_due_and_the_next_call_tells_it(make):
    r = make(failure_threshold=1, min_calls=1, cooldown=1.0)
    r.breaker.acquire().record("status:503")
    assert r.take() == [("closed", "open", "failure-threshold")]
    r.clock.advance(1.0)
    m = r.breaker.metrics()
    # The read plays time forward and changes nothing: nobody has made the transition.
    assert (m["state"], m["transitions_total"], m["epoch"]) == ("half-open", 2, 2)
    assert r.breaker.state == "half-open" and r.take() == []
    r.clock.advance(0.5)
    probe = r.breaker.acquire()
    assert probe and probe.probe
    assert r.take() == [("open", "half-open", "cooldown-elapsed")]
    assert r.breaker.metrics()["last_transition"].at == 1.0, "dated when it fell due, not when a call came"
    probe.record("success")


def test_sixteen_threads_every_transition_reaches_the_listener_once_in_order():
    clock = tripgate.FakeClock(1.0)
    breaker = tripgate.CircuitBreaker(
        clock=clock, failure_threshold=3, min_calls=3, cooldown=0.0005,
        half_open_required_successes=1, probe_timeout=0.01,
    )
    heard = []
    breaker.on_transition(lambda t: heard.append(t.epoch))
    start = threading.Barrier(THREADS)

    def drive(seed):
        outcomes = random.Random(seed)
        start.wait()
        for _ in range(CALLS):
            clock.advance_ns(outcomes.randrange(0, 200_000))
            permit = breaker.acquire()
            if permit:
                permit.record("status:503" if outcomes.random() < 0.5 else "success")

    threads = [threading.Thread(target=drive, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # A last call makes whatever time made due since the others' last one.
    clock.advance(1.0)
    permit = breaker.acquire()
    if permit:
        permit.cancel()
    m = breaker.metrics()
    assert m["transitions_total"] > 1000, "the stress moved the breaker"
    assert len(heard) == m["transitions_total"] == m["epoch"]
    assert sorted(heard) == list(range(1, m["epoch"] + 1)), "each transition heard once"
