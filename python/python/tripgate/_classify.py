"""How a raised exception reads to the breaker, as an outcome name.

The rules are the core's (SPEC.md, Outcomes): a timeout and a connection that failed are
faults; an HTTP status and a gRPC code are handed to the core, which decides by its fault
sets (a 503 or a 429 is a fault, a 404 is not). This module only says what was seen:

* ``TimeoutError`` and its subclasses (``socket.timeout``, ``asyncio.TimeoutError``), and
  the timeout errors of ``requests``, ``httpx``/``httpcore``, ``urllib3`` and ``aiohttp``:
  ``timeout``;
* ``ConnectionError`` and its subclasses, an ``OSError`` whose errno says the connection
  was refused, reset, aborted or unreachable, a failed name lookup (``socket.gaierror``),
  and the connection errors of ``requests``, ``httpx``/``httpcore``, ``urllib3`` and
  ``aiohttp``: ``connection-error``;
* an error that carries an HTTP status (``requests.HTTPError`` and
  ``httpx.HTTPStatusError`` through ``response``, ``aiohttp.ClientResponseError`` through
  ``status``): ``status:N``;
* a gRPC error (``grpc.RpcError``, ``grpc.aio.AioRpcError``) by ``code()``: ``grpc:N``;
* anything else: ``failure``.

Client libraries wrap their causes (``requests.ConnectionError`` around a ``urllib3``
error around a ``ConnectionRefusedError``), so the chain of ``__cause__`` (or
``__context__``) is followed, the exception itself included, at most ``MAX_CAUSES``
exceptions deep (the core's constant, read from the native module): the first one that
says something decides, and a chain that loops still ends.
"""

import asyncio
import errno
import socket
from typing import AbstractSet, Optional, Tuple

from . import _native

__all__ = ["classify_error", "MAX_CAUSES"]

MAX_CAUSES: int = _native.MAX_CAUSES

_CLIENTS = ("requests", "httpx", "httpcore", "urllib3", "aiohttp")

# (top-level package, class name): any class of that name in that package's hierarchy.
_TIMEOUTS = {
    ("requests", "Timeout"),
    ("httpx", "TimeoutException"),
    ("httpcore", "TimeoutException"),
    ("urllib3", "TimeoutError"),
    ("aiohttp", "ServerTimeoutError"),
    ("aiohttp", "ConnectionTimeoutError"),
    ("aiohttp", "SocketTimeoutError"),
}
_CONNECTION = {
    ("requests", "ConnectionError"),
    ("httpx", "NetworkError"),
    ("httpx", "RemoteProtocolError"),
    ("httpcore", "NetworkError"),
    ("httpcore", "RemoteProtocolError"),
    ("urllib3", "NewConnectionError"),
    ("urllib3", "ProtocolError"),
    ("urllib3", "MaxRetryError"),
    ("aiohttp", "ClientConnectionError"),
}

_CONNECTION_ERRNOS = frozenset(
    getattr(errno, name)
    for name in (
        "ECONNREFUSED",
        "ECONNRESET",
        "ECONNABORTED",
        "ENOTCONN",
        "EADDRNOTAVAIL",
        "EPIPE",
        "EHOSTUNREACH",
        "ENETUNREACH",
        "ENETDOWN",
    )
    if hasattr(errno, name)
)

_TIMEOUT_TYPES = (TimeoutError, asyncio.TimeoutError)


def _named(error: BaseException, names: AbstractSet[Tuple[str, str]]) -> bool:
    for cls in type(error).__mro__:
        package = (getattr(cls, "__module__", "") or "").split(".", 1)[0]
        if package in _CLIENTS and (package, cls.__name__) in names:
            return True
    return False


def _http_status(error: BaseException) -> Optional[int]:
    for holder in (error, getattr(error, "response", None)):
        if holder is None:
            continue
        for attr in ("status_code", "status"):
            try:
                value = getattr(holder, attr, None)
            except Exception:  # a property that raises says nothing
                value = None
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def _grpc_code(error: BaseException) -> Optional[int]:
    if not any(
        (getattr(cls, "__module__", "") or "").split(".", 1)[0] == "grpc"
        for cls in type(error).__mro__
    ):
        return None
    code = getattr(error, "code", None)
    if not callable(code):
        return None
    try:
        code = code()
    except Exception:
        return None
    # grpc.StatusCode members are (int, name) tuples; accept a plain int too.
    value = getattr(code, "value", code)
    if isinstance(value, tuple) and value:
        value = value[0]
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _one(error: BaseException) -> Optional[str]:
    """What one exception of the chain says, or None."""
    if isinstance(error, _TIMEOUT_TYPES) or _named(error, _TIMEOUTS):
        return "timeout"
    if isinstance(error, ConnectionError) or isinstance(error, socket.gaierror):
        return "connection-error"
    if _named(error, _CONNECTION):
        return "connection-error"
    if isinstance(error, OSError) and error.errno is not None:
        if error.errno in _CONNECTION_ERRNOS:
            return "connection-error"
        if error.errno == errno.ETIMEDOUT:
            return "timeout"
    code = _grpc_code(error)
    if code is not None:
        return f"grpc:{code}" if 0 <= code <= 16 else "failure"
    status = _http_status(error)
    if status is not None:
        # A status no HTTP upstream may send is a failure, as in the Rust hosts.
        return f"status:{status}" if 100 <= status <= 599 else "failure"
    return None


def classify_error(error: BaseException) -> str:
    """The outcome name of a raised exception (see the module's docs)."""
    if not isinstance(error, Exception):
        return "cancelled"
    seen: BaseException = error
    for _ in range(MAX_CAUSES):
        said = _one(seen)
        if said is not None:
            return said
        nxt = seen.__cause__
        if nxt is None and not seen.__suppress_context__:
            nxt = seen.__context__
        if nxt is None:
            break
        seen = nxt
    return "failure"
