#!/usr/bin/env python3
"""Writes retry-after.json: HTTP `Retry-After` and gRPC `grpc-retry-pushback-ms` values,
the wall clock, and the stay-away every host must read from them (ms, or null for a value
that asks nothing). The expected delays of the HTTP dates come from Python's own calendar
(`calendar.timegm` of `time.strptime`), not from the core's reading.

    python3 tests/vectors/retry-after/generate.py
"""

import calendar
import json
import time
from pathlib import Path

NOW = 784111717  # Sun, 06 Nov 1994 08:48:37 GMT


def date(text):
    """The delay an IMF-fixdate asks at NOW, by Python's calendar (0 once past)."""
    at = calendar.timegm(time.strptime(text, "%a, %d %b %Y %H:%M:%S GMT"))
    return max(at - NOW, 0) * 1000


HTTP = [
    ("delay-seconds", "120", 120_000),
    ("zero seconds", "0", 0),
    ("blanks around", "  30\t", 30_000),
    ("an IMF-fixdate a minute ahead", "Sun, 06 Nov 1994 08:49:37 GMT", date("Sun, 06 Nov 1994 08:49:37 GMT")),
    ("an IMF-fixdate in the past asks nothing more", "Sat, 05 Nov 1994 08:49:37 GMT", 0),
    ("a leap day", "Thu, 29 Feb 1996 00:00:00 GMT", date("Thu, 29 Feb 1996 00:00:00 GMT")),
    ("a date after 2038", "Wed, 01 Jan 2048 12:00:00 GMT", date("Wed, 01 Jan 2048 12:00:00 GMT")),
    ("the wrong weekday", "Mon, 06 Nov 1994 08:49:37 GMT", None),
    ("no such day", "Fri, 30 Feb 1996 00:00:00 GMT", None),
    ("a time zone other than GMT", "Sun, 06 Nov 1994 08:49:37 UTC", None),
    ("RFC 850's obsolete form", "Sunday, 06-Nov-94 08:49:37 GMT", None),
    ("asctime's obsolete form", "Sun Nov  6 08:49:37 1994", None),
    ("a fraction", "1.5", None),
    ("a sign", "-5", None),
    ("a plus sign", "+5", None),
    ("empty", "", None),
    ("words", "soon", None),
    ("digits past u64 saturate", "99999999999999999999999", 18446744073709551615 // 1_000_000),
]

PUSHBACK = [
    ("milliseconds", "250", 250),
    ("zero", "0", 0),
    ("negative: do not retry, asks the breaker nothing", "-1", None),
    ("malformed", "25ms", None),
]

cases = [{"name": n, "header": "retry-after", "value": v, "unix-now": NOW, "ms": ms} for n, v, ms in HTTP]
cases += [{"name": n, "header": "grpc-retry-pushback-ms", "value": v, "unix-now": NOW, "ms": ms} for n, v, ms in PUSHBACK]
vector = {
    "description": "How long an answer's Retry-After (delay-seconds or an IMF-fixdate against the wall clock) or gRPC pushback asks callers to stay away; null asks nothing. The last HTTP case saturates at u64::MAX ns, given here in whole ms.",
    "applies-to-statuses": [429, 503],
    "cases": cases,
}
out = Path(__file__).with_name("retry-after.json")
out.write_text(json.dumps(vector, indent=1) + "\n")
print(out, len(cases), "cases")
