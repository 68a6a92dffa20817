"""Named breakers, one per upstream, on one clock with shared default options."""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from ._breaker import CircuitBreaker
from ._errors import option_error
from ._native import CONFIG_FIELDS, FakeClock, Reconfigured

__all__ = ["Registry"]

# The core's options (not the package's own: name, clock, timeout, ...).
_CONFIG_OPTIONS = frozenset(option for _, option, _ in CONFIG_FIELDS)

class Registry:
    """``Registry(clock=None, **defaults)``; ``registry.get(name, **options)`` makes the
    breaker the first time (``defaults`` updated with ``options``, named ``name``) and
    returns the same one afterwards; ``registry.reconfigure(name, **options)`` puts new
    options in force on it (or makes it). Iterating gives the names; ``items()`` the pairs.
    A ``prometheus.TripgateCollector`` over a registry scrapes every breaker in it."""

    def __init__(
        self, *, clock: Union[FakeClock, Callable[[], float], None] = None, **defaults: Any
    ) -> None:
        if "name" in defaults:
            raise option_error(TypeError, "name", "a registry names its breakers: pass name to get()")
        self._clock = clock
        self._defaults = defaults
        self._breakers: Dict[str, CircuitBreaker] = {}
        self._lock = threading.Lock()
        # Check the defaults once, now, rather than at the first get().
        if defaults:
            CircuitBreaker(clock=clock, **defaults)

    def get(self, name: str, **options: Any) -> CircuitBreaker:
        """The breaker named ``name``: made on the first call, with the registry's clock and
        its defaults updated with ``options`` (a bad option raises as
        ``CircuitBreaker(**options)`` would, and nothing is kept); every later call returns
        that breaker, whatever ``options`` it passes. Safe to call from many threads: one
        breaker per name."""
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

    def reconfigure(self, name: str, **options: Any) -> Optional[Reconfigured]:
        """Puts the configuration ``get(name, **options)`` would make a breaker with (the
        registry's defaults updated with ``options``) in force on the breaker named
        ``name``, which keeps its state (``CircuitBreaker.reconfigure``), and returns
        what that did; when there is no such breaker, makes it as ``get`` would and
        returns None. A bad option raises as ``CircuitBreaker.reconfigure`` does and
        changes nothing. A configuration reload calls it for each name it lists."""
        with self._lock:
            breaker = self._breakers.get(name)
            if breaker is None:
                merged = {**self._defaults, **options}
                breaker = CircuitBreaker(name=name, clock=self._clock, **merged)
                self._breakers[name] = breaker
                return None
        # Outside the lock: the transitions it makes reach listeners, which may call get().
        # The package's own options the breaker was made with stay; only those passed
        # here are checked against them.
        config = {key: value for key, value in self._defaults.items() if key in _CONFIG_OPTIONS}
        return breaker.reconfigure(**{**config, **options})

    def __getitem__(self, name: str) -> CircuitBreaker:
        return self._breakers[name]

    def __contains__(self, name: object) -> bool:
        return name in self._breakers

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._breakers))

    def __len__(self) -> int:
        return len(self._breakers)

    def items(self) -> List[Tuple[str, CircuitBreaker]]:
        """The ``(name, breaker)`` pairs, in the order the breakers were made."""
        return list(self._breakers.items())
