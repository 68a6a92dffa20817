"""The exceptions tripgate raises. Kept free of the native module so it can raise them."""

import asyncio
import sys
from typing import Any, Tuple, Type, TypeVar

__all__ = ["CircuitOpenError", "CallTimeoutError", "StateError"]

E = TypeVar("E", bound=BaseException)


def option_error(kind: Type[E], option: str, message: str) -> E:
    """An error of ``kind`` that names the option it is about (``error.option``)."""
    error = kind(message)
    setattr(error, "option", option)
    return error


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
        reason: str = self.args[0]
        return reason

    @property
    def state(self) -> str:
        state: str = self.args[1]
        return state

    @property
    def retry_after(self) -> float:
        retry_after: float = self.args[2]
        return retry_after

    @property
    def breaker(self) -> str:
        breaker: str = self.args[3]
        return breaker

    def __str__(self) -> str:
        if len(self.args) != 4:
            return super().__str__()
        reason, state, retry_after, breaker = self.args
        return (
            f"circuit breaker {breaker!r} rejected the call ({state}, {reason}); "
            f"retry after {retry_after:g}s"
        )


class _Timeout:
    args: Tuple[Any, ...]

    @property
    def timeout(self) -> float:
        timeout: float = self.args[0]
        return timeout

    def __str__(self) -> str:
        return f"the call timed out after {self.args[0]:g}s"


_TIMEOUT_DOC = """A guarded async call did not finish within its timeout: it was cancelled and
    recorded as a ``timeout`` fault. ``timeout`` is the budget in seconds."""

if sys.version_info >= (3, 11):

    class CallTimeoutError(_Timeout, TimeoutError):
        __doc__ = _TIMEOUT_DOC

else:  # pragma: no cover - before 3.11 asyncio.TimeoutError is a class of its own

    class CallTimeoutError(_Timeout, TimeoutError, asyncio.TimeoutError):
        __doc__ = _TIMEOUT_DOC


class StateError(ValueError):
    """``import_state`` refused the bytes and changed nothing. ``kind`` is the core's
    reason: ``truncated``, ``trailing-bytes``, ``not-a-state``, ``unsupported-version``,
    ``checksum``, ``window-shape`` or ``corrupt``."""

    @property
    def kind(self) -> str:
        kind: str = self.args[1]
        return kind

    def __str__(self) -> str:
        return str(self.args[0])
