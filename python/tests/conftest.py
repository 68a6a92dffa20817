"""Shared test helpers: the repository's shared files, and breakers on a fake clock."""

import json
import pathlib

import pytest

import tripgate

REPO = pathlib.Path(__file__).resolve().parents[2]
VECTORS = REPO / "tests" / "vectors"
METRICS = REPO / "tests" / "metrics"

# Core field name -> (Python option, kind), from the native module's table.
FIELDS = {name: (option, kind) for name, option, kind in tripgate.CONFIG_FIELDS}


def option_of_key(key):
    """A vector config key (`cooldown-ms`) as the Python option (`cooldown`)."""
    if key.endswith("-ms") and FIELDS.get(key[:-3], (None, None))[1] == "duration":
        return FIELDS[key[:-3]][0]
    return FIELDS[key][0]


def options_of(config):
    """A vector's config as CircuitBreaker options (durations in seconds)."""
    options = {}
    for key, value in config.items():
        if key.endswith("-ms") and key[:-3] in FIELDS:
            options[option_of_key(key)] = value / 1000
        else:
            options[option_of_key(key)] = value
    return options


def python_message(message):
    """A core message with its field names as Python options."""
    return " ".join(FIELDS[w][0] if w in FIELDS else w for w in message.split(" "))


def load_vectors():
    return [(p.name, json.loads(p.read_text())) for p in sorted(VECTORS.glob("*.json"))]


class Recorder:
    """A breaker on a fake clock that records every transition as (from, to, reason)."""

    def __init__(self, **options):
        self.clock = options.pop("clock", None) or tripgate.FakeClock()
        self.breaker = tripgate.CircuitBreaker(clock=self.clock, **options)
        self.transitions = []
        self.breaker.on_transition(lambda t: self.transitions.append(t.as_tuple()))

    def take(self):
        got, self.transitions = self.transitions, []
        return got


@pytest.fixture
def make():
    return Recorder
