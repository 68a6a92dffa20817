"""SPEC.md's four failure modes, which every host's tests show the breaker prevents."""

import threading

import tripgate


def test_pool_starvation_hung_calls_trip_before_any_times_out(make):
    # 1. With hang detection, five calls out past slow_call_duration trip the breaker
    # before the first of them times out; callers are then turned away at once.
    r = make(failure_threshold=5, min_calls=5, slow_call_duration=0.2)
    held = [r.breaker.acquire() for _ in range(5)]
    r.clock.advance(0.22)
    rejection = r.breaker.acquire()
    assert not rejection and rejection.reason == "open"
    assert r.take() == [("closed", "open", "hung-calls")]
    for p in held:
        assert p.record("timeout") == "fault"
        assert p.stale


def test_half_open_stampede_admits_exactly_k(make):
    # 2. 200 callers arrive together once the cooldown is over: exactly K get through.
    r = make(half_open_max_probes=3, cooldown=1)
    for _ in range(5):
        r.breaker.acquire().record(503)
    r.clock.advance(1)
    barrier = threading.Barrier(200)
    admitted = []
    lock = threading.Lock()

    def caller():
        barrier.wait()
        p = r.breaker.acquire()
        if p:
            with lock:
                admitted.append(p)

    threads = [threading.Thread(target=caller) for _ in range(200)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(admitted) == 3 and all(p.probe for p in admitted)
    assert r.breaker.metrics()["rejected"]["probing"] == 197


def test_client_errors_never_trip(make):
    # 3. Twenty consecutive 404s (or 400, 401, 403, 422) never trip.
    r = make()
    for status in (404, 400, 401, 403, 422):
        for _ in range(20):
            assert r.breaker.call(lambda: type("R", (), {"status_code": status})()).status_code == status
    assert r.breaker.state == "closed" and r.take() == []


def test_old_faults_are_forgotten(make):
    # 4. A single fault every hour, over five hours, never trips.
    r = make()
    for _ in range(5):
        r.breaker.acquire().record("timeout")
        r.clock.advance(3600)
    assert r.breaker.state == "closed" and r.take() == []
