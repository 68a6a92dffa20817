"""The exceptions tripgate raises. Kept free of the native module so it can raise them."""

import asyncio

__all__ = ["CircuitOpenError", "CallTimeoutError", "StateError"]


class CircuitOpenError(Exception):
    """The breaker turned the call away; the call did not run.

    ``reason`` is ``open``, ``probing``, ``isolated``, ``saturated`` or
    ``probing-elsewhere``; ``state`` the breaker's state; ``retry_after`` the seconds until a
    call could be admitted (0 when there is no estimate); ``breaker`` the breaker's name.
    """

    __slots__ = ()

    # Built by the native module with BaseException's own __init__ (no Python frame on
    # the rejection path): args are (reason, state, retry_after, breaker).
    @property
    def reason(self) -> str:
        return self.args[0]

    @property
    def state(self) -> str:
        return self.args[1]

    @property
    def retry_after(self) -> float:
        return self.args[2]

    @property
    def breaker(self) -> str:
        return self.args[3]

    def __str__(self) -> str:
        if len(self.args) != 4:
            return super().__str__()
        reason, state, retry_after, breaker = self.args
        return (
            f"circuit breaker {breaker!r} rejected the call ({state}, {reason}); "
            f"retry after {retry_after:g}s"
        )


_TIMEOUT_BASES = (
    (TimeoutError,)
    if asyncio.TimeoutError is TimeoutError
    else (TimeoutError, asyncio.TimeoutError)
)


class CallTimeoutError(*_TIMEOUT_BASES):
    """A guarded async call did not finish within its timeout: it was cancelled and
    recorded as a ``timeout`` fault. ``timeout`` is the budget in seconds."""

    @property
    def timeout(self) -> float:
        return self.args[0]

    def __str__(self) -> str:
        return f"the call timed out after {self.args[0]:g}s"


class StateError(ValueError):
    """``import_state`` refused the bytes and changed nothing. ``kind`` is the core's
    reason: ``truncated``, ``trailing-bytes``, ``not-a-state``, ``unsupported-version``,
    ``checksum``, ``window-shape`` or ``corrupt``."""

    @property
    def kind(self) -> str:
        return self.args[1]

    def __str__(self) -> str:
        return str(self.args[0])
