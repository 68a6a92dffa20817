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
        **{f"rejected-{reason}": n for reason, n in m["rejected"].items()},
        **{f"shadow-rejected-{reason}": n for reason, n in m["shadow_rejected"].items()},
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
    Run(options).steps(vector["steps"])


class Run:
    """One vector's steps on one breaker: a method per op, each checking its step's
    expectations."""

    def __init__(self, options):
        self.options = options
        self.subject = Subject(options, 0)
        self.permits, self.snapshots = {}, {}

    def steps(self, steps):
        last = 0
        for index, step in enumerate(steps):
            self.index, self.step, self.where = index, step, f"step {index} {step}"
            if step["at"] < last and not step.get("clock-steps-back"):
                pytest.fail(f"{self.where}: time goes backwards")
            last = max(last, step["at"])
            self.expect = step.get("expect", {})
            self.want_transitions = self.expect.get("transitions", [])
            op = getattr(self, "op_" + step["op"].replace("-", "_"), None)
            if op is None:
                pytest.fail(f"{self.where}: unknown op {step['op']}")
            op()
            if "state" in self.expect:
                self.subject.at(step)
                assert self.b.state == self.expect["state"], f"{self.where}: state"

    @property
    def b(self):
        return self.subject.breaker

    def at(self):
        self.subject.at(self.step)

    def check_transitions(self, got, what="transitions"):
        assert got == self.want_transitions, f"{self.where}: {what}"

    def op_acquire(self):
        step, expect, where = self.step, self.expect, self.where
        count = step.get("count", 1)
        admitted = rejected = 0
        caused = []
        for _ in range(count):
            self.at()
            p = self.b.acquire()
            caused += self.subject.transitions
            if p:
                if count == 1:
                    self.check_admitted(p)
                if "permit" in step:
                    name = step["permit"] if count == 1 else f"{step['permit']}.{admitted}"
                    self.permits[name] = p
                else:
                    # Unnamed permits stay out (never recorded): keep them alive.
                    self.permits[f"__unnamed.{self.index}.{admitted}"] = p
                admitted += 1
            else:
                if count == 1:
                    self.check_rejected(p)
                rejected += 1
        if "admitted-count" in expect:
            assert admitted == expect["admitted-count"], f"{where}: admitted-count"
        if "rejected-count" in expect:
            assert rejected == expect["rejected-count"], f"{where}: rejected-count"
        self.check_transitions(caused)

    def check_admitted(self, p):
        if "admitted" in self.expect:
            assert self.expect["admitted"] is True, f"{self.where}: admitted"
        if "probe" in self.expect:
            assert p.probe == self.expect["probe"], f"{self.where}: probe"

    def check_rejected(self, p):
        expect, where = self.expect, self.where
        if "admitted" in expect:
            assert expect["admitted"] is False, f"{where}: admitted"
        if "rejected" in expect:
            assert p.reason == expect["rejected"], f"{where}: rejected"
        if "retry-after-ms" in expect:
            assert p.retry_after_ns // 1_000_000 == expect["retry-after-ms"], where

    def op_record(self):
        step, expect, where = self.step, self.expect, self.where
        assert step["permit"] in self.permits, f"{where}: no permit {step['permit']}"
        p = self.permits.pop(step["permit"])
        self.at()
        # The stay-away the answer asked for (vectors 65-67), in seconds.
        asked = step.get("retry-after-ms")
        try:
            cls = p.record(step["outcome"], retry_after=None if asked is None else asked / 1000)
        except (ValueError, TypeError) as error:
            assert expect.get("error"), f"{where}: record failed: {error}"
            assert str(error), where
            assert p.pending, f"{where}: a refused outcome leaves the permit out"
            # Keep it alive: a permit the core refused stays out.
            self.permits[f"__refused.{self.index}"] = p
            return
        assert not expect.get("error"), f"{where}: record succeeded; expected an error"
        for key, got in (("class", cls), ("slow", p.slow), ("stale", p.stale)):
            if key in expect:
                assert got == expect[key], f"{where}: {key}"
        self.check_transitions(self.subject.transitions)

    def op_state(self):
        self.at()
        self.check_transitions(self.subject.transitions)

    def op_metrics(self):
        self.at()
        got = metrics_view(self.b.metrics())
        for key, want in self.expect.get("metrics", {}).items():
            assert key in got, f"{self.where}: metrics lack {key}"
            assert got[key] == want, f"{self.where}: metrics.{key}"

    def manual(self):
        self.at()
        returned = [list(t.as_tuple()) for t in getattr(self.b, self.step["op"])()]
        self.check_transitions(returned)
        self.check_transitions(self.subject.transitions, "listener")

    op_isolate = op_release = op_disable = op_reset = manual

    def op_reconfigure(self):
        """A whole new config (absent fields take defaults): the window kept or not and
        the transitions, or the refusal the step expects, with the breaker unchanged."""
        step, expect, where = self.step, self.expect, self.where
        options = options_of(step.get("config", {}))
        self.at()
        try:
            done = self.b.reconfigure(**options)
        except (ValueError, TypeError) as error:
            assert "config-error" in expect, f"{where}: config refused: {error}"
            want = expect["config-error"]
            assert error.option == python_message(want["field"]), f"{where}: config-error field"
            assert python_message(want["message"]) in str(error), f"{where}: config-error message"
            self.check_transitions(self.subject.transitions, "listener")
            return
        assert "config-error" not in expect, f"{where}: config was accepted; expected an error"
        if "window-kept" in expect:
            assert done.window_kept is expect["window-kept"], f"{where}: window-kept"
        # An import into a fresh breaker later takes the configuration now in force.
        self.options = options
        self.check_transitions([list(t.as_tuple()) for t in done.transitions])
        self.check_transitions(self.subject.transitions, "listener")

    def op_export(self):
        self.at()
        self.snapshots[self.step["snapshot"]] = self.b.export_state()

    def op_import(self):
        step, expect, where = self.step, self.expect, self.where
        data = damaged(bytearray(self.snapshots[step["snapshot"]]), step.get("damage"), where)
        if step.get("fresh"):
            # The importer's own configuration, when the step gives one.
            own = options_of(step["config"]) if "config" in step else self.options
            self.subject = Subject(own, step["at"])
            self.permits.clear()
        self.at()
        error = None
        try:
            self.b.import_state(bytes(data), step.get("elapsed-ms", 0) / 1000)
        except tripgate.StateError as e:
            error = e
        if expect.get("error"):
            assert error is not None, f"{where}: import succeeded; expected an error"
            assert error.kind and str(error), where
        else:
            assert error is None, f"{where}: import failed: {error}"
        self.check_transitions(self.subject.transitions)

    def op_fleet_apply(self):
        step = self.step
        self.at()
        applied, caused = self.b._fleet_apply(step["generation"], step["kind"], step.get("remaining-ms", 0) * MS)
        if "fleet-applied" in self.expect:
            assert applied == self.expect["fleet-applied"], f"{self.where}: fleet-applied"
        self.check_transitions([list(t.as_tuple()) for t in caused])
        self.check_transitions(self.subject.transitions, "listener")

    def op_fleet_votes(self):
        self.at()
        reached = self.b._fleet_votes([(member, age * MS) for member, age in self.step["votes"]])
        if "quorum" in self.expect:
            assert reached == self.expect["quorum"], f"{self.where}: quorum"

    def op_fleet_store(self):
        self.at()
        lease = self.step.get("lease-ms")
        self.b._fleet_store(self.step.get("reachable", True), None if lease is None else lease * MS)

    def op_fleet_announcement(self):
        got = self.b._fleet_take_announcement()
        if "announcement" in self.expect:
            got = None if got is None else {"kind": got[0], "remaining-ms": got[1] // MS}
            assert got == self.expect["announcement"], f"{self.where}: announcement"

    def op_fleet_status(self):
        self.at()
        got = {key.replace("_", "-"): value for key, value in self.b.fleet_status().items()}
        for key, want in self.expect.get("fleet", {}).items():
            assert key in got, f"{self.where}: fleet status lacks {key}"
            assert got[key] == want, f"{self.where}: fleet.{key}"


def damaged(data, damage, where):
    """A snapshot's bytes as the step damages them: one byte short, or one flipped."""
    if damage == "truncate":
        return data[:-1]
    if damage == "flip":
        data[len(data) >> 1] ^= 0xFF
    elif damage is not None:
        pytest.fail(f"{where}: unknown damage {damage}")
    return data


@pytest.mark.parametrize("name,vector", VECTORS, ids=[n for n, _ in VECTORS])
def test_vector(name, vector):
    run(vector)


def test_every_vector_file_is_found():
    assert len(VECTORS) >= 67
