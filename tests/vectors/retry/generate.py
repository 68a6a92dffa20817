#!/usr/bin/env python3
"""Writes retry.json: retry policies, the budget their callers share, and the decision
after each attempt (SPEC § Retries). The expected waits are computed here, from the
SPEC's words, with a splitmix64 of this file's own, not by the core.

    python3 tests/vectors/retry/generate.py
"""

import json
from pathlib import Path

MS = 1_000_000
SECOND = 1000 * MS
MASK = (1 << 64) - 1
DEFAULT = {"max-attempts": 3, "base-delay-ms": 50, "max-delay-ms": 2000,
           "budget-percent": 20, "min-retries-per-second": 10, "seed": 0}


class Model:
    """The policy's decisions as SPEC § Retries words them."""

    def __init__(self, policy):
        self.p = {**DEFAULT, **policy}
        self.balance = 0  # thousandths of a retry
        self.floor_left = self.p["min-retries-per-second"]
        self.floor_since = 0
        self.rng = self.p["seed"]

    def splitmix64(self):
        self.rng = (self.rng + 0x9E3779B97F4A7C15) & MASK
        z = self.rng
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def deposit(self):
        cap = self.p["budget-percent"] * 1000
        self.balance = min(self.balance + self.p["budget-percent"] * 10, cap)

    def withdraw(self, now):
        if self.balance >= 1000:
            self.balance -= 1000
            return True
        if now - self.floor_since >= SECOND:
            self.floor_since = now
            self.floor_left = self.p["min-retries-per-second"]
        if self.floor_left > 0:
            self.floor_left -= 1
            return True
        return False

    def next(self, attempt, cls, retry_after, now):
        if cls != "fault":
            return {"stop": "answered"}
        if attempt >= self.p["max-attempts"]:
            return {"stop": "attempts"}
        if retry_after > self.p["max-delay-ms"] * MS:
            return {"stop": "stay-away"}
        if not self.withdraw(now):
            return {"stop": "budget"}
        ceiling = min(self.p["base-delay-ms"] * MS * 2 ** (attempt - 1), self.p["max-delay-ms"] * MS)
        wait = (self.splitmix64() * (ceiling + 1)) >> 64
        return {"retry-ns": max(wait, retry_after)}


def case(name, policy, script):
    """`script`: ("deposit", n) | ("next", at_ms, attempt, class, retry_after_ms)."""
    model, steps = Model(policy), []
    for op in script:
        if op[0] == "deposit":
            for _ in range(op[1]):
                model.deposit()
            steps.append({"op": "deposit", "count": op[1]})
        else:
            _, at, attempt, cls, after = op
            expect = model.next(attempt, cls, after * MS, at * MS)
            steps.append({"op": "next", "at-ms": at, "attempt": attempt, "class": cls,
                          "retry-after-ms": after, "expect": expect})
    return {"name": name, "policy": policy, "steps": steps}


CASES = [
    case("a fault is retried after a full-jitter wait under a doubling ceiling, up to max-attempts",
         {"seed": 7}, [("deposit", 10), ("next", 0, 1, "fault", 0), ("next", 10, 2, "fault", 0),
                       ("next", 20, 3, "fault", 0)]),
    case("a success or a neutral answer (a 4xx) is the call's answer",
         {}, [("deposit", 10), ("next", 0, 1, "success", 0), ("next", 0, 1, "neutral", 0)]),
    case("the budget: a tenth of the calls, no floor",
         {"budget-percent": 10, "min-retries-per-second": 0, "max-attempts": 10},
         [("deposit", 10), ("next", 0, 1, "fault", 0), ("next", 0, 1, "fault", 0),
          ("deposit", 5), ("next", 1, 1, "fault", 0), ("deposit", 5), ("next", 2, 1, "fault", 0)]),
    case("the floor: two retries a second whatever the budget",
         {"budget-percent": 0, "min-retries-per-second": 2, "seed": 3},
         [("deposit", 100), ("next", 0, 1, "fault", 0), ("next", 500, 1, "fault", 0),
          ("next", 999, 1, "fault", 0), ("next", 1000, 1, "fault", 0)]),
    case("the upstream's Retry-After: a longer one is waited, one past max-delay ends the retries",
         {"seed": 11}, [("deposit", 10), ("next", 0, 1, "fault", 500), ("next", 0, 1, "fault", 3000)]),
    case("savings are capped at what a hundred calls pay in",
         {"budget-percent": 20, "min-retries-per-second": 0, "max-attempts": 2},
         [("deposit", 1000)] + [("next", 0, 1, "fault", 0)] * 21),
    case("the floor's second starts over only forward: a reading behind the last refills nothing",
         {"budget-percent": 0, "min-retries-per-second": 2, "seed": 4},
         [("next", 1000, 1, "fault", 0), ("next", 1000, 1, "fault", 0),
          ("next", 400, 1, "fault", 0), ("next", 1999, 1, "fault", 0), ("next", 2000, 1, "fault", 0)]),
    case("the ceiling stops at max-delay",
         {"base-delay-ms": 400, "max-delay-ms": 1000, "max-attempts": 10, "seed": 99},
         [("deposit", 100)] + [("next", 0, n, "fault", 0) for n in range(1, 8)]),
]

vector = {
    "description": "Retry decisions: a policy (absent fields take the defaults in `defaults`), then deposits (a call's first attempt admitted) and the decision after each attempt (`retry-ns`: the wait, or `stop`: why not). Waits are a full-jitter draw: splitmix64 seeded by `seed`, the next output x, wait = x × (ceiling + 1) / 2^64 rounded down, ceiling = min(max-delay, base-delay × 2^(attempt−1)); a longer Retry-After is waited instead.",
    "defaults": DEFAULT,
    "cases": CASES,
}
out = Path(__file__).with_name("retry.json")
out.write_text(json.dumps(vector, indent=1) + "\n")
print(out, len(CASES), "cases")
