"""A ``prometheus_client`` collector over breakers, from the core's exposition table.

The families (names, types, help, units, labels) and each series' value come from the
native module (``tripgate-core``'s ``exposition``), so the names, labels and values are the
ones every tripgate host exposes (``tests/metrics/expected.prom``)::

    from prometheus_client import REGISTRY
    from tripgate.prometheus import TripgateCollector
    REGISTRY.register(TripgateCollector(registry))   # a Registry, a breaker or a list

Needs ``prometheus-client`` (the ``prometheus`` extra). A scrape reads each breaker once.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Iterator, List, Tuple, Union

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from . import _native
from ._breaker import CircuitBreaker
from .registry import Registry

__all__ = ["TripgateCollector", "FAMILIES"]

FAMILIES: Tuple[Dict[str, Any], ...] = tuple(_native.exposition_families())
BREAKER_LABEL = "breaker"

# What a collector reads: a registry, a breaker, breakers, or a callable giving one.
Breakers = Union[Registry, CircuitBreaker, Iterable[CircuitBreaker]]
Source = Union[Breakers, Callable[[], Breakers]]


def _family(spec: Dict[str, Any]) -> Union[CounterMetricFamily, GaugeMetricFamily]:
    labels = [BREAKER_LABEL, *spec["labels"]]
    if spec["type"] == "counter":
        return CounterMetricFamily(spec["name"], spec["help"], labels=labels)
    return GaugeMetricFamily(spec["name"], spec["help"], labels=labels, unit=spec["unit"] or "")


class TripgateCollector(Collector):
    """Collects ``source``: a ``Registry``, a ``CircuitBreaker``, an iterable of breakers,
    or a callable returning one of those (read at every scrape). Each breaker's series are
    labelled ``breaker=<its name>``; of two breakers with one name, the first is kept."""

    def __init__(self, source: Source) -> None:
        self._source = source

    def _breakers(self) -> List[CircuitBreaker]:
        source = self._source
        if callable(source) and not isinstance(source, CircuitBreaker):
            source = source()
        if isinstance(source, CircuitBreaker):
            return [source]
        if isinstance(source, Registry):
            return [b for _, b in source.items()]
        return list(source)

    def describe(self) -> List[Metric]:
        return [_family(spec) for spec in FAMILIES]

    def collect(self) -> Iterator[Metric]:
        readings: Dict[str, List[Union[int, float]]] = {}
        for breaker in self._breakers():
            if breaker.name not in readings:
                readings[breaker.name] = breaker._samples()
        offset = 0
        for spec in FAMILIES:
            family = _family(spec)
            count = len(spec["series"])
            for name, samples in readings.items():
                for i, labels in enumerate(spec["series"]):
                    family.add_metric([name, *labels], samples[offset + i])
            offset += count
            yield family
