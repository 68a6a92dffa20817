"""The Prometheus text format, read back normalised: what tests/metrics/expected.prom's
header says hosts are compared on (families, HELP, TYPE, label sets in any order, values
as numbers)."""

import re

_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def _unescape(value):
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), value)


def parse(text):
    """{family: {"help", "type", "samples": {(name, frozenset(labels)): float}}}."""
    families = {}
    current = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            current = families.setdefault(name, {"samples": {}})
            current["help"] = help_text
            continue
        if line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            families.setdefault(name, {"samples": {}})["type"] = kind
            continue
        if line.startswith("#"):
            continue
        if "{" in line:
            name, rest = line.split("{", 1)
            body, value = rest.rsplit("}", 1)
            labels = frozenset((k, _unescape(v)) for k, v in _LABEL.findall(body))
        else:
            name, value = line.split(" ", 1)
            labels = frozenset()
        family = name if name in families else next(
            (f for f in families if name.startswith(f)), name
        )
        families.setdefault(family, {"samples": {}})["samples"][(name, labels)] = float(
            value.split()[0]
        )
    return families
