#!/usr/bin/env python3
"""Writes the Retry-After scenario vectors (65-67, 69): each scenario step by step, with the
decisions SPEC § Retry-After asks for; every host's runner checks them. (How a header's
value reads is `retry-after/retry-after.json`.)

    python3 tests/vectors/retry_after.py
"""

import json
from pathlib import Path

HERE = Path(__file__).parent
TRIP = [["closed", "open", "failure-threshold"]]


def fault(at, name, retry_after=None, **expect):
    record = {"at": at, "op": "record", "permit": name, "outcome": "status:503",
              "expect": {"class": "fault", **expect}}
    if retry_after is not None:
        record["retry-after-ms"] = retry_after
    return [{"at": at, "op": "acquire", "permit": name, "expect": {"admitted": True}}, record]


def rejected(at, retry_after_ms):
    return {"at": at, "op": "acquire", "expect": {"admitted": False, "rejected": "open", "retry-after-ms": retry_after_ms}}


def faults(at, names):
    return [step for name in names for step in fault(at, name)]


VECTORS = [
    {
        "name": "65-retry-after-holds-the-breaker-open",
        "description": "The fault that trips the breaker asked callers to stay away for a "
        "minute: the breaker opens for that minute (max-cooldown allows two), the "
        "rejections say so, and a fleet member announces it.",
        "spec": ["Retry-After: a trip caused by an answer that asked for longer opens for at least that long"],
        "config": {"max-cooldown-ms": 120000, "fleet-quorum": 1},
        "steps": faults(0, ["f0", "f1", "f2"])
        + fault(0, "f3", retry_after=90000)
        + fault(0, "f4", retry_after=60000, transitions=TRIP, state="open")
        + [{"at": 0, "op": "fleet-announcement", "expect": {"announcement": {"kind": "tripped", "remaining-ms": 60000}}},
           rejected(1000, 59000),
           {"at": 15000, "op": "state", "expect": {"state": "open"}},
           {"at": 59999, "op": "state", "expect": {"state": "open"}},
           {"at": 60000, "op": "state", "expect": {"state": "half-open"}}],
    },
    {
        "name": "69-a-fleets-shorter-opening-keeps-the-upstreams-stay-away",
        "description": "A member opened for the minute its upstream asked; another member's "
        "fleet-open for 15 s re-times nothing shorter: the member stays open the minute.",
        "spec": ["Retry-After: a fleet's opening does not cut short the upstream's stay-away"],
        "config": {"max-cooldown-ms": 120000, "fleet-quorum": 1},
        "steps": faults(0, ["f0", "f1", "f2", "f3"])
        + fault(0, "f4", retry_after=60000, transitions=TRIP)
        + [{"at": 1000, "op": "fleet-apply", "generation": 7, "kind": "open", "remaining-ms": 15000,
            "expect": {"fleet-applied": "applied", "state": "open"}},
           {"at": 16000, "op": "state", "expect": {"state": "open"}},
           {"at": 60000, "op": "state", "expect": {"state": "half-open"}}],
    },
    {
        "name": "66-retry-after-is-bounded-by-max-cooldown",
        "description": "An answer that asks for ten minutes holds the breaker open for "
        "max-cooldown at most; one that asks for less than the cooldown changes nothing.",
        "spec": ["Retry-After: bounded by max-cooldown"],
        "config": {"max-cooldown-ms": 30000},
        "steps": faults(0, ["f0", "f1", "f2", "f3"])
        + fault(0, "f4", retry_after=600000, transitions=TRIP)
        + [rejected(1000, 29000),
           {"at": 30000, "op": "acquire", "permit": "p0",
            "expect": {"admitted": True, "probe": True, "transitions": [["open", "half-open", "cooldown-elapsed"]]}},
           {"at": 30000, "op": "record", "permit": "p0", "outcome": "status:503", "retry-after-ms": 5000,
            "expect": {"class": "fault", "transitions": [["half-open", "open", "probe-fault"]]}},
           rejected(30000, 15000)],
    },
    {
        "name": "67-retry-after-on-a-failed-probe",
        "description": "The probe's answer asks for 45 s: the breaker re-opens for 45 s "
        "instead of its cooldown.",
        "spec": ["Retry-After: a probe's fault that asked for longer re-opens for that long"],
        "config": {"max-cooldown-ms": 120000},
        "steps": faults(0, ["f0", "f1", "f2", "f3"])
        + fault(0, "f4", transitions=TRIP)
        + [rejected(1000, 14000),
           {"at": 15000, "op": "acquire", "permit": "p0",
            "expect": {"admitted": True, "probe": True, "transitions": [["open", "half-open", "cooldown-elapsed"]]}},
           {"at": 15000, "op": "record", "permit": "p0", "outcome": "status:429", "retry-after-ms": 45000,
            "expect": {"class": "fault", "transitions": [["half-open", "open", "probe-fault"]]}},
           rejected(16000, 44000)],
    },
]

for vector in VECTORS:
    path = HERE / f"{vector['name']}.json"
    path.write_text(json.dumps(vector, indent=1) + "\n")
    print(path.name)
