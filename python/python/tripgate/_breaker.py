"""``CircuitBreaker``: the native breaker with the Python-side conveniences (asyncio,
decorators, guards with their own timeout and fallback). Every decision is the core's."""

import asyncio
import functools
import inspect
import sys

from . import _native
from ._errors import CallTimeoutError

__all__ = ["CircuitBreaker", "Guard"]

_UNSET = object()

if sys.version_info >= (3, 11):

    async def _bounded(fn, args, kwargs, timeout):
        """fn's result within ``timeout`` seconds; CallTimeoutError when it expired."""
        try:
            async with asyncio.timeout(timeout) as scope:
                return await fn(*args, **kwargs)
        except TimeoutError:
            if scope.expired():
                raise CallTimeoutError(timeout) from None
            raise

else:  # pragma: no cover - exercised on 3.9 and 3.10

    async def _bounded(fn, args, kwargs, timeout):
        try:
            return await asyncio.wait_for(fn(*args, **kwargs), timeout)
        except asyncio.TimeoutError:
            raise CallTimeoutError(timeout) from None


def _fall_back(fallback, error):
    return fallback(error) if callable(fallback) else fallback


# What the native call_async returns: one coroutine frame around the call's awaitable,
# its permit already taken.


async def _run(permit, awaitable):
    try:
        result = await awaitable
    except BaseException as error:
        permit.record_error(error)
        raise
    permit.record_result(result)
    return result


async def _run_fallback(permit, awaitable, fallback):
    try:
        result = await awaitable
    except BaseException as error:
        permit.record_error(error)
        # A caller that gave up (a cancelled task, KeyboardInterrupt) gets no fallback.
        if isinstance(error, Exception):
            return _fall_back(fallback, error)
        raise
    permit.record_result(result)
    return result


async def _raise(error):
    raise error


async def _value(value):
    return value


async def _guarded_async(breaker, fn, args, kwargs, timeout, has_fallback, fallback):
    """A guarded await with a timeout (the native awaitable serves calls without one)."""
    permit = breaker.acquire()
    if not permit:
        error = permit.error()
        if has_fallback:
            return _fall_back(fallback, error)
        raise error
    try:
        if timeout is None:
            result = await fn(*args, **kwargs)
        else:
            result = await _bounded(fn, args, kwargs, timeout)
    except CallTimeoutError as error:
        permit.record("timeout")
        if has_fallback:
            return _fall_back(fallback, error)
        raise
    except BaseException as error:
        permit.record_error(error)
        # A caller that gave up (a cancelled task, KeyboardInterrupt) gets no fallback.
        if has_fallback and isinstance(error, Exception):
            return _fall_back(fallback, error)
        raise
    permit.record_result(result)
    return result


def _timeout_seconds(timeout):
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        if hasattr(timeout, "total_seconds"):
            timeout = timeout.total_seconds()
        else:
            error = TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
            error.option = "timeout"
            raise error
    if not (timeout > 0 and timeout < float("inf")):
        error = ValueError("timeout must be > 0 and finite")
        error.option = "timeout"
        raise error
    return float(timeout)


class Guard:
    """A breaker with its own ``timeout`` and ``fallback`` for the calls made through it:
    ``breaker.guard(timeout=2.0, fallback=None)``. Use it as a decorator (sync or async
    functions) or call ``guard.call(fn, ...)`` / ``await guard.call_async(fn, ...)``."""

    __slots__ = ("breaker", "timeout", "_has_fallback", "_fallback")

    def __init__(self, breaker, timeout, has_fallback, fallback):
        self.breaker = breaker
        self.timeout = timeout
        self._has_fallback = has_fallback
        self._fallback = fallback

    def call(self, fn, /, *args, **kwargs):
        return self.breaker._call_with(
            fn, args, kwargs, self.timeout, self._has_fallback, self._fallback
        )

    def call_async(self, fn, /, *args, **kwargs):
        """An awaitable of ``fn(*args, **kwargs)`` guarded by the breaker (see
        ``CircuitBreaker.call_async``)."""
        return self.breaker._call_async_with(
            fn, args, kwargs, self.timeout, self._has_fallback, self._fallback
        )

    def __call__(self, fn):
        return _decorate(self, fn)


def _decorate(guard, fn):
    if not callable(fn):
        raise TypeError(f"a breaker decorates a function, not {type(fn).__name__}")
    if inspect.iscoroutinefunction(fn):
        breaker, timeout = guard.breaker, guard.timeout
        has_fallback, fallback = guard._has_fallback, guard._fallback

        start = breaker._call_async_with

        @functools.wraps(fn)
        async def guarded_async(*args, **kwargs):
            return await start(fn, args, kwargs, timeout, has_fallback, fallback)

        guarded_async.breaker = breaker
        return guarded_async
    guarded = _native.GuardedFunction(
        guard.breaker, fn, guard.timeout, guard._has_fallback, guard._fallback
    )
    functools.update_wrapper(guarded, fn)
    return guarded


class CircuitBreaker(_native.Breaker):
    """A circuit breaker for one upstream, safe to share between threads and tasks.

    ``CircuitBreaker(**options)``: every core option by its snake-case name (durations in
    seconds, or a ``timedelta``), plus ``name`` (the metrics' ``breaker`` label),
    ``clock`` (a ``tripgate.FakeClock`` or a callable returning monotonic seconds),
    ``timeout`` and ``fallback`` (defaults of ``call`` and ``call_async``), ``classify``
    (your own reading of results and exceptions) and ``on_listener_error``. A wrong type is
    a ``TypeError``, a value out of range a ``ValueError``, each naming the option
    (``error.option``).

    Calls: ``breaker.call(fn, *args, **kwargs)``, ``await breaker.call_async(fn, ...)``,
    ``@breaker`` on a function or coroutine function, ``with breaker:`` / ``async with
    breaker:``, or ``breaker.acquire()`` then ``permit.record(outcome)``.
    """

    __slots__ = ()

    def guard(self, *, timeout=_UNSET, fallback=_UNSET):
        """This breaker with another ``timeout`` and/or ``fallback`` (see ``Guard``)."""
        timeout = self.timeout if timeout is _UNSET else _timeout_seconds(timeout)
        if fallback is _UNSET:
            return Guard(self, timeout, self._has_fallback, self._fallback)
        return Guard(self, timeout, True, fallback)

    def __call__(self, fn):
        """``@breaker``: the function's (or coroutine function's) calls go through the
        breaker with its default timeout and fallback."""
        return _decorate(self.guard(), fn)

    async def __aenter__(self):
        return self.__enter__()

    async def __aexit__(self, exc_type, exc, traceback):
        return self.__exit__(exc_type, exc, traceback)

    @classmethod
    def from_state(cls, state, elapsed=0.0, **options):
        """A breaker made with ``options`` and the exported ``state`` imported (see
        ``import_state``)."""
        breaker = cls(**options)
        breaker.import_state(state, elapsed)
        return breaker
