"""tripgate: a circuit breaker whose every decision is made by tripgate's Rust core.

    import tripgate

    breaker = tripgate.CircuitBreaker(name="payments", failure_threshold=5, cooldown=15)
    response = breaker.call(session.get, "https://payments.example/charge", timeout=2)

See the package README for the whole API.
"""

from . import _native
from ._breaker import CircuitBreaker, Guard
from ._errors import CallTimeoutError, CircuitOpenError, StateError
from ._native import (
    CONFIG_FIELDS,
    MAX_CAUSES,
    OUTCOMES,
    REJECT_REASONS,
    STATES,
    TRANSITION_REASONS,
    FakeClock,
    Permit,
    Reconfigured,
    Rejection,
    Retries,
    Transition,
    classify_error,
    classify_result,
    retry_after_of,
)
from .registry import Registry

__version__ = "0.1.0"

__all__ = [
    "CircuitBreaker",
    "Guard",
    "Permit",
    "Rejection",
    "Transition",
    "Reconfigured",
    "Retries",
    "FakeClock",
    "Registry",
    "CircuitOpenError",
    "CallTimeoutError",
    "StateError",
    "classify_error",
    "classify_result",
    "retry_after_of",
    "MAX_CAUSES",
    "STATES",
    "TRANSITION_REASONS",
    "REJECT_REASONS",
    "OUTCOMES",
    "CONFIG_FIELDS",
]
