#!/usr/bin/env python3
"""Writes the shadow-mode vectors (62-64): each scenario step by step, with the decisions
SPEC § Shadow mode asks for; every host's runner checks them.

    python3 tests/vectors/shadow.py
"""

import json
from pathlib import Path

HERE = Path(__file__).parent
REASONS = ["open", "probing", "isolated", "saturated", "probing-elsewhere"]


def faults(at, names, last_trips=False):
    steps = []
    for i, name in enumerate(names):
        record = {"class": "fault"}
        if last_trips and i == len(names) - 1:
            record["transitions"] = [["closed", "open", "failure-threshold"]]
        steps += [
            {"at": at, "op": "acquire", "permit": name, "expect": {"admitted": True}},
            {"at": at, "op": "record", "permit": name, "outcome": "status:503", "expect": record},
        ]
    return steps


def metrics(at, **values):
    return {"at": at, "op": "metrics", "expect": {"metrics": {k.replace("_", "-"): v for k, v in values.items()}}}


def shadowed(**counts):
    """Every shadow-rejected counter: the ones given, the others 0."""
    return {f"shadow_rejected_{r.replace('-', '_')}": counts.get(r.replace("-", "_"), 0) for r in REASONS}


VECTORS = [
    {
        "name": "62-shadow-mode-admits-what-it-would-reject",
        "description": "In shadow mode the breaker trips, cools down and probes as it would "
        "enforcing, but admits every call: a call it would have rejected is counted by its "
        "reason and gets a shadow permit whose outcome counts nothing.",
        "spec": ["Shadow mode: every decision made and counted, every call admitted"],
        "config": {"shadow": True},
        "steps": faults(0, ["f0", "f1", "f2", "f3", "f4"], last_trips=True)
        + [{"at": 1000, "op": "acquire", "permit": "s0", "expect": {"admitted": True, "probe": False, "state": "open"}},
           {"at": 1000, "op": "record", "permit": "s0", "outcome": "status:503", "expect": {"class": "fault", "stale": False}},
           {"at": 1000, "op": "acquire", "permit": "s1", "expect": {"admitted": True}},
           {"at": 1000, "op": "record", "permit": "s1", "outcome": "status:200", "expect": {"class": "success"}},
           metrics(1000, admitted_total=5, faults_total=5, successes_total=0, rejected_open=0, **shadowed(open=2)),
           {"at": 15000, "op": "acquire", "permit": "p0",
            "expect": {"admitted": True, "probe": True, "transitions": [["open", "half-open", "cooldown-elapsed"]]}},
           {"at": 15000, "op": "acquire", "permit": "s2", "expect": {"admitted": True, "probe": False}},
           {"at": 15001, "op": "record", "permit": "s2", "outcome": "status:200", "expect": {"class": "success"}},
           metrics(15001, probes_out=1, successes_total=0, rejected_probing=0, **shadowed(open=2, probing=1)),
           {"at": 15002, "op": "record", "permit": "p0", "outcome": "status:200", "expect": {"class": "success"}},
           {"at": 15003, "op": "acquire", "permit": "p1", "expect": {"admitted": True, "probe": True}},
           {"at": 15004, "op": "record", "permit": "p1", "outcome": "status:200",
            "expect": {"class": "success", "transitions": [["half-open", "closed", "probes-succeeded"]], "state": "closed"}}],
    },
    {
        "name": "63-shadow-mode-switched-live",
        "description": "Shadow mode switched on and off by reconfiguring a live breaker: the "
        "state, the window and every count stay; only what happens to a call the breaker "
        "would reject changes.",
        "spec": ["Shadow mode: switching it on and off keeps the measurements"],
        "config": {},
        "steps": faults(0, ["f0", "f1", "f2", "f3", "f4"], last_trips=True)
        + [{"at": 1000, "op": "acquire", "expect": {"admitted": False, "rejected": "open", "retry-after-ms": 14000}},
           {"at": 2000, "op": "reconfigure", "config": {"shadow": True}, "expect": {"window-kept": True, "state": "open"}},
           {"at": 2000, "op": "acquire", "permit": "s0", "expect": {"admitted": True, "probe": False}},
           {"at": 2001, "op": "record", "permit": "s0", "outcome": "status:200", "expect": {"class": "success"}},
           {"at": 3000, "op": "reconfigure", "config": {}, "expect": {"window-kept": True, "state": "open"}},
           {"at": 3000, "op": "acquire", "expect": {"admitted": False, "rejected": "open", "retry-after-ms": 12000}},
           metrics(3000, calls=5, faults=5, successes_total=0, rejected_open=2, **shadowed(open=1))],
    },
    {
        "name": "64-shadow-mode-counts-saturation",
        "description": "A concurrency cap in shadow mode: a call past max-in-flight is a "
        "shadow rejection (saturated), admitted without taking a place in flight.",
        "spec": ["Shadow mode: every decision made and counted, every call admitted"],
        "config": {"shadow": True, "max-in-flight": 1},
        "steps": [
            {"at": 0, "op": "acquire", "permit": "a", "expect": {"admitted": True}},
            {"at": 1, "op": "acquire", "permit": "b", "expect": {"admitted": True}},
            metrics(1, in_flight=1, admitted_total=1, rejected_saturated=0, **shadowed(saturated=1)),
            {"at": 2, "op": "record", "permit": "b", "outcome": "status:503", "expect": {"class": "fault"}},
            {"at": 3, "op": "record", "permit": "a", "outcome": "status:200", "expect": {"class": "success"}},
            metrics(3, in_flight=0, calls=1, faults=0, successes_total=1, faults_total=0),
        ],
    },
]

for vector in VECTORS:
    path = HERE / f"{vector['name']}.json"
    path.write_text(json.dumps(vector, indent=1) + "\n")
    print(path.name)
