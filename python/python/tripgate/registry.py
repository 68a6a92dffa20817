"""Named breakers, one per upstream, on one clock with shared default options."""

import threading

from ._breaker import CircuitBreaker

__all__ = ["Registry"]


class Registry:
    """``Registry(clock=None, **defaults)``; ``registry.get(name, **options)`` makes the
    breaker the first time (``defaults`` updated with ``options``, named ``name``) and
    returns the same one afterwards. Iterating gives the names; ``items()`` the pairs.
    A ``prometheus.TripgateCollector`` over a registry scrapes every breaker in it."""

    def __init__(self, *, clock=None, **defaults):
        if "name" in defaults:
            error = TypeError("a registry names its breakers: pass name to get()")
            error.option = "name"
            raise error
        self._clock = clock
        self._defaults = defaults
        self._breakers = {}
        self._lock = threading.Lock()
        # Check the defaults once, now, rather than at the first get().
        if defaults:
            CircuitBreaker(clock=clock, **defaults)

    def get(self, name: str, **options) -> CircuitBreaker:
        breaker = self._breakers.get(name)
        if breaker is not None:
            return breaker
        with self._lock:
            breaker = self._breakers.get(name)
            if breaker is None:
                merged = {**self._defaults, **options}
                breaker = CircuitBreaker(name=name, clock=self._clock, **merged)
                self._breakers[name] = breaker
            return breaker

    def __getitem__(self, name: str) -> CircuitBreaker:
        return self._breakers[name]

    def __contains__(self, name) -> bool:
        return name in self._breakers

    def __iter__(self):
        return iter(list(self._breakers))

    def __len__(self) -> int:
        return len(self._breakers)

    def items(self):
        return list(self._breakers.items())
