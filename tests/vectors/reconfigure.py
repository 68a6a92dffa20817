#!/usr/bin/env python3
"""Writes the reconfiguration vectors (58-61): each scenario is written out here, step by
step, with the decisions SPEC § Reconfiguration asks for; every host's runner checks them.

    python3 tests/vectors/reconfigure.py
"""

import json
from pathlib import Path

HERE = Path(__file__).parent


def call(at, name, outcome, cls="fault", **expect):
    """An admitted call and its outcome, at `at`."""
    return [
        {"at": at, "op": "acquire", "permit": name, "expect": {"admitted": True}},
        {"at": at, "op": "record", "permit": name, "outcome": outcome, "expect": {"class": cls, **expect}},
    ]


def faults(at, names):
    return [step for name in names for step in call(at, name, "status:503")]


def trip(frm="closed", reason="failure-threshold"):
    return [[frm, "open", reason]]


def reconfigure(at, config, **expect):
    return {"at": at, "op": "reconfigure", "config": config, "expect": expect}


VECTORS = [
    {
        "name": "58-reconfigure-keeps-state-and-window",
        "description": "A new failure-threshold on a live closed breaker keeps the window's "
        "outcomes and a permit already out; the next fault is judged by the new rule.",
        "spec": ["Reconfiguration: state, epoch and permits kept; window kept while its shape is the same"],
        "config": {},
        "steps": faults(0, ["f0", "f1", "f2"])
        + [{"at": 5, "op": "acquire", "permit": "out", "expect": {"admitted": True}}]
        + [reconfigure(10, {"failure-threshold": 4, "min-calls": 4}, **{"window-kept": True, "state": "closed"})]
        + [{"at": 10, "op": "metrics", "expect": {"metrics": {"calls": 3, "faults": 3, "epoch": 0}}}]
        + [{"at": 11, "op": "record", "permit": "out", "outcome": "status:503",
            "expect": {"class": "fault", "stale": False, "transitions": trip(), "state": "open"}}],
    },
    {
        "name": "59-reconfigure-restarts-a-reshaped-window",
        "description": "A new window shape (a count window in place of the time window) "
        "starts the window empty: the faults before it no longer count.",
        "spec": ["Reconfiguration: a window whose shape changes starts empty"],
        "config": {},
        "steps": faults(0, ["f0", "f1", "f2", "f3"])
        + [reconfigure(10, {"window-calls": 20}, **{"window-kept": False})]
        + [{"at": 10, "op": "metrics", "expect": {"metrics": {"calls": 0, "faults": 0}}}]
        + faults(20, ["g0", "g1", "g2", "g3"])
        + [{"at": 20, "op": "state", "expect": {"state": "closed"}}]
        + [{"at": 21, "op": "acquire", "permit": "g4", "expect": {"admitted": True}},
           {"at": 21, "op": "record", "permit": "g4", "outcome": "status:503",
            "expect": {"class": "fault", "transitions": trip(), "state": "open"}}],
    },
    {
        "name": "60-reconfigure-keeps-the-cooldown-in-progress",
        "description": "A shorter cooldown while open leaves the opening in progress as it "
        "was; the next opening takes the new cooldown, its backoff starting from it.",
        "spec": ["Reconfiguration: an opening in progress keeps its end; the next uses the new cooldown"],
        "config": {"backoff-factor": 2.0},
        "steps": faults(0, ["f0", "f1", "f2", "f3"])
        + [{"at": 0, "op": "acquire", "permit": "f4", "expect": {"admitted": True}},
           {"at": 0, "op": "record", "permit": "f4", "outcome": "status:503",
            "expect": {"class": "fault", "transitions": trip()}}]
        + [reconfigure(1000, {"cooldown-ms": 2000, "backoff-factor": 2.0}, **{"window-kept": True, "state": "open"})]
        + [{"at": 1000, "op": "acquire", "expect": {"admitted": False, "rejected": "open", "retry-after-ms": 14000}}]
        + [{"at": 15000, "op": "acquire", "permit": "p0",
            "expect": {"admitted": True, "probe": True, "transitions": [["open", "half-open", "cooldown-elapsed"]]}},
           {"at": 15000, "op": "record", "permit": "p0", "outcome": "status:503",
            "expect": {"class": "fault", "transitions": [["half-open", "open", "probe-fault"]]}},
           {"at": 15000, "op": "acquire", "expect": {"admitted": False, "rejected": "open", "retry-after-ms": 4000}}],
    },
    {
        "name": "61-reconfigure-refuses-a-bad-config",
        "description": "A bad config, or a change to a field a live breaker keeps, is refused "
        "with the field and the rule, and the breaker goes on as it was.",
        "spec": ["Reconfiguration: the same validation as create; the breaker unchanged on a bad config"],
        "config": {},
        "steps": faults(0, ["f0", "f1", "f2"])
        + [reconfigure(1, {"failure-threshold": 0},
                       **{"config-error": {"field": "failure-threshold", "message": "failure-threshold must be >= 1"}}),
           reconfigure(2, {"fleet-quorum": 3},
                       **{"config-error": {"field": "fleet-quorum", "message": "fleet-quorum cannot change on a live breaker"}}),
           reconfigure(3, {"slow-call-duration-ms": 1000},
                       **{"config-error": {"field": "slow-call-duration", "message": "slow-call-duration cannot change on a live breaker"}}),
           {"at": 3, "op": "metrics", "expect": {"metrics": {"calls": 3, "faults": 3}}}]
        + faults(4, ["f3"])
        + [{"at": 5, "op": "acquire", "permit": "f4", "expect": {"admitted": True}},
           {"at": 5, "op": "record", "permit": "f4", "outcome": "status:503",
            "expect": {"class": "fault", "transitions": trip(), "state": "open"}}],
    },
]

for vector in VECTORS:
    path = HERE / f"{vector['name']}.json"
    path.write_text(json.dumps(vector, indent=1) + "\n")
    print(path.name)
