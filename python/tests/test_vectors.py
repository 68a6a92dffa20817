"""Every shared vector (tests/vectors/*.json, format in tests/vectors/README.md) against the
package: the same decisions as every other host."""

import math

import pytest

import tripgate

from conftest import load_vectors, options_of, python_message

VECTORS = load_vectors()
MS = 1_000_000


def metrics_view(m):
    return {
        "state": m["state"],
        "epoch": m["epoch"],
        "calls": m["calls"],
        "faults": m["faults"],
        "slow": m["slow"],
        "in-flight": m["in_flight"],
        "hung": m["hung"],
        "probes-out": m["probes_out"],
        "admitted-total": m["admitted_total"],
        "rejected-open": m["rejected"]["open"],
        "rejected-probing": m["rejected"]["probing"],
        "rejected-isolated": m["rejected"]["isolated"],
        "rejected-saturated": m["rejected"]["saturated"],
        "rejected-probing-elsewhere": m["rejected"]["probing-elsewhere"],
        "successes-total": m["successes_total"],
        "faults-total": m["faults_total"],
        "stale-total": m["stale_total"],
        "transitions-total": m["transitions_total"],
        "time-in-state-ms": m["time_in_state_ns"] // 1_000_000,
        "cooldown-remaining-ms": m["cooldown_remaining_ns"] // 1_000_000,
    }


class Subject:
    def __init__(self, options, at_ms):
        self.clock = tripgate.FakeClock()
        self.clock.set_ns(at_ms * 1_000_000)
        self.breaker = tripgate.CircuitBreaker(clock=self.clock, **options)
        self.transitions = []
        self.breaker.on_transition(lambda t: self.transitions.append(list(t.as_tuple())))

    def at(self, step):
        reading = step.get("reading-ns")
        self.clock.set_ns(int(reading) if reading is not None else step["at"] * 1_000_000)
        self.transitions = []


# long: to be split with the rework of python/ under issue 39
def run(vector):
    options = options_of(vector.get("config", {}))
    if "config-error" in vector:
        want = vector["config-error"]
        with pytest.raises((ValueError, TypeError)) as caught:
            tripgate.CircuitBreaker(clock=tripgate.FakeClock(), **options)
        option = python_message(want["field"])
        assert caught.value.option == option
        assert python_message(want["message"]) in str(caught.value)
        return
    subject = Subject(options, 0)
    permits, snapshots, last = {}, {}, 0
    for index, step in enumerate(vector["steps"]):
        where = f"step {index} {step}"
        if step["at"] < last and not step.get("clock-steps-back"):
            pytest.fail(f"{where}: time goes backwards")
        last = max(last, step["at"])
        expect = step.get("expect", {})
        want_transitions = expect.get("transitions", [])
        op = step["op"]
        b = subject.breaker
        if op == "acquire":
            count = step.get("count", 1)
            admitted = rejected = 0
            caused = []
            for _ in range(count):
                subject.at(step)
                p = b.acquire()
                caused += subject.transitions
                if p:
                    if count == 1:
                        if "admitted" in expect:
                            assert expect["admitted"] is True, f"{where}: admitted"
                        if "probe" in expect:
                            assert p.probe == expect["probe"], f"{where}: probe"
                    if "permit" in step:
                        name = step["permit"] if count == 1 else f"{step['permit']}.{admitted}"
                        permits[name] = p
                    else:
                        # Unnamed permits stay out (never recorded): keep them alive.
                        permits[f"__unnamed.{index}.{admitted}"] = p
                    admitted += 1
                else:
                    if count == 1:
                        if "admitted" in expect:
                            assert expect["admitted"] is False, f"{where}: admitted"
                        if "rejected" in expect:
                            assert p.reason == expect["rejected"], f"{where}: rejected"
                        if "retry-after-ms" in expect:
                            assert p.retry_after_ns // 1_000_000 == expect["retry-after-ms"], where
                    rejected += 1
            if "admitted-count" in expect:
                assert admitted == expect["admitted-count"], f"{where}: admitted-count"
            if "rejected-count" in expect:
                assert rejected == expect["rejected-count"], f"{where}: rejected-count"
            assert caused == want_transitions, f"{where}: transitions"
        elif op == "record":
            assert step["permit"] in permits, f"{where}: no permit {step['permit']}"
            p = permits.pop(step["permit"])
            subject.at(step)
            try:
                cls = p.record(step["outcome"])
            except (ValueError, TypeError) as error:
                assert expect.get("error"), f"{where}: record failed: {error}"
                assert str(error), where
                assert p.pending, f"{where}: a refused outcome leaves the permit out"
                # Keep it alive: a permit the core refused stays out.
                permits[f"__refused.{index}"] = p
            else:
                assert not expect.get("error"), f"{where}: record succeeded; expected an error"
                if "class" in expect:
                    assert cls == expect["class"], f"{where}: class"
                if "slow" in expect:
                    assert p.slow == expect["slow"], f"{where}: slow"
                if "stale" in expect:
                    assert p.stale == expect["stale"], f"{where}: stale"
                assert subject.transitions == want_transitions, f"{where}: transitions"
        elif op == "state":
            subject.at(step)
            assert subject.transitions == want_transitions, f"{where}: transitions"
        elif op == "metrics":
            subject.at(step)
            got = metrics_view(b.metrics())
            for key, want in expect.get("metrics", {}).items():
                assert key in got, f"{where}: metrics lack {key}"
                assert got[key] == want, f"{where}: metrics.{key}"
        elif op in ("isolate", "release", "disable", "reset"):
            subject.at(step)
            returned = [list(t.as_tuple()) for t in getattr(b, op)()]
            assert returned == want_transitions, f"{where}: transitions"
            assert subject.transitions == want_transitions, f"{where}: listener"
        elif op == "export":
            subject.at(step)
            snapshots[step["snapshot"]] = b.export_state()
        elif op == "import":
            data = bytearray(snapshots[step["snapshot"]])
            damage = step.get("damage")
            if damage == "truncate":
                data = data[:-1]
            elif damage == "flip":
                data[len(data) >> 1] ^= 0xFF
            elif damage is not None:
                pytest.fail(f"{where}: unknown damage {damage}")
            if step.get("fresh"):
                # The importer's own configuration, when the step gives one.
                own = options_of(step["config"]) if "config" in step else options
                subject = Subject(own, step["at"])
                b = subject.breaker
                permits.clear()
            subject.at(step)
            error = None
            try:
                b.import_state(bytes(data), step.get("elapsed-ms", 0) / 1000)
            except tripgate.StateError as e:
                error = e
            if expect.get("error"):
                assert error is not None, f"{where}: import succeeded; expected an error"
                assert error.kind and str(error), where
            else:
                assert error is None, f"{where}: import failed: {error}"
            assert subject.transitions == want_transitions, f"{where}: transitions"
        elif op == "fleet-apply":
            subject.at(step)
            applied, caused = b._fleet_apply(step["generation"], step["kind"], step.get("remaining-ms", 0) * MS)
            if "fleet-applied" in expect:
                assert applied == expect["fleet-applied"], f"{where}: fleet-applied"
            assert [list(t.as_tuple()) for t in caused] == want_transitions, f"{where}: transitions"
            assert subject.transitions == want_transitions, f"{where}: listener"
        elif op == "fleet-votes":
            subject.at(step)
            reached = b._fleet_votes([(member, age * MS) for member, age in step["votes"]])
            if "quorum" in expect:
                assert reached == expect["quorum"], f"{where}: quorum"
        elif op == "fleet-store":
            subject.at(step)
            lease = step.get("lease-ms")
            b._fleet_store(step.get("reachable", True), None if lease is None else lease * MS)
        elif op == "fleet-announcement":
            got = b._fleet_take_announcement()
            if "announcement" in expect:
                got = None if got is None else {"kind": got[0], "remaining-ms": got[1] // MS}
                assert got == expect["announcement"], f"{where}: announcement"
        elif op == "fleet-status":
            subject.at(step)
            got = {key.replace("_", "-"): value for key, value in b.fleet_status().items()}
            for key, want in expect.get("fleet", {}).items():
                assert key in got, f"{where}: fleet status lacks {key}"
                assert got[key] == want, f"{where}: fleet.{key}"
        else:
            pytest.fail(f"{where}: unknown op {op}")
        if "state" in expect:
            subject.at(step)
            assert b.state == expect["state"], f"{where}: state"


@pytest.mark.parametrize("name,vector", VECTORS, ids=[n for n, _ in VECTORS])
def test_vector(name, vector):
    run(vector)


def test_every_vector_file_is_found():
    assert len(VECTORS) >= 53
