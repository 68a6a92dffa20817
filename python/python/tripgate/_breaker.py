"""``CircuitBreaker``: the native breaker with the Python-side conveniences (asyncio,
decorators, guards with their own timeout and fallback, guarded generators). Every
decision is the core's."""

from __future__ import annotations

import asyncio
import enum
import functools
import inspect
import sys
from datetime import timedelta
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncGenerator,
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Literal,
    Optional,
    TypeVar,
    Union,
    cast,
)

from . import _native
from ._errors import CallTimeoutError, option_error

if sys.version_info >= (3, 10):
    from typing import ParamSpec

    P = ParamSpec("P")
elif TYPE_CHECKING:  # pragma: no cover - annotations only, on 3.9
    from typing_extensions import ParamSpec

    P = ParamSpec("P")

__all__ = ["CircuitBreaker", "Guard"]

T = TypeVar("T")
_B = TypeVar("_B", bound="CircuitBreaker")


class _Default(enum.Enum):
    """What a guard takes from its breaker for an option it is not given."""

    TIMEOUT = "the breaker's timeout"
    FALLBACK = "the breaker's fallback"

    def __repr__(self) -> str:
        return f"<{self.value}>"


def _fall_back(fallback: Any, error: BaseException) -> Any:
    return fallback(error) if callable(fallback) else fallback


# What the native call_async returns: one coroutine frame around the call's awaitable,
# its permit already taken.


async def _run(permit: _native.Permit, awaitable: Awaitable[T]) -> T:
    try:
        result = await awaitable
    except BaseException as error:
        permit.record_error(error)
        raise
    permit.record_result(result)
    return result


async def _run_fallback(permit: _native.Permit, awaitable: Awaitable[Any], fallback: Any) -> Any:
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


async def _raise(error: BaseException) -> Any:
    raise error


async def _value(value: T) -> T:
    return value


# A timed call: its deadline is the native module's (`start_deadline`: one queue and one
# timer handle per event loop and budget, never a timer per call); when it passes, the
# call's task is cancelled, as `asyncio.timeout` would, and the cancellation becomes a
# `timeout` outcome and a `CallTimeoutError`.

_start_deadline = _native.start_deadline
_IN_TIME, _EXPIRED = 0, 1


async def _run_timed(
    permit: _native.Permit,
    awaitable: Awaitable[Any],
    budget: float,
    has_fallback: bool,
    fallback: Any,
) -> Any:
    try:
        deadline = _start_deadline(budget)
    except BaseException:
        permit.cancel()
        close = getattr(awaitable, "close", None)
        if close is not None:
            close()
        raise
    try:
        result = await awaitable
    except BaseException as error:
        if deadline.end() == _EXPIRED and isinstance(error, asyncio.CancelledError):
            timeout = CallTimeoutError(budget)
            permit.record("timeout")
            if has_fallback:
                return _fall_back(fallback, timeout)
            raise timeout from None
        permit.record_error(error)
        # A caller that gave up (a cancelled task, KeyboardInterrupt) gets no fallback.
        if has_fallback and isinstance(error, Exception):
            return _fall_back(fallback, error)
        raise
    if deadline.end() != _IN_TIME:
        # The call swallowed its cancellation and answered late: a timeout, answered.
        permit.record("timeout")
        return result
    permit.record_result(result)
    return result


# A retried call (a guard's `retries`): each attempt awaited as above, its outcome
# recorded; `call.after(permit)` is the core's decision on the breaker's shared budget
# (None: the retries end, and this attempt's answer is the call's), `call.again()` the
# next attempt, admitted by the breaker (its rejection ends the retries). Cancelled while
# an attempt is in flight, the attempt is released as `cancelled`; while it waits, the
# wait just ends.


async def _run_retrying(
    call: _native._Retrying,
    permit: _native.Permit,
    awaitable: Awaitable[Any],
    budget: Optional[float],
    has_fallback: bool,
    fallback: Any,
) -> Any:
    while True:
        try:
            if budget is None:
                result = await _run(permit, awaitable)
            else:
                result = await _run_timed(permit, awaitable, budget, False, None)
        except BaseException as error:
            wait = call.after(permit)
            if wait is None:
                # A caller that gave up (a cancelled task, KeyboardInterrupt) gets no fallback.
                if has_fallback and isinstance(error, Exception):
                    return _fall_back(fallback, error)
                raise
        else:
            wait = call.after(permit)
            if wait is None:
                return result
        await asyncio.sleep(wait)
        try:
            permit, awaitable = call.again()
        except _native.CircuitOpenError as rejected:
            if has_fallback:
                return _fall_back(fallback, rejected)
            raise


# The native call_async returns frames of these; it imports nothing of this package's.
_native._install_coroutines(_run, _run_fallback, _run_timed, _raise, _value, _run_retrying)


def _timeout_seconds(timeout: object) -> Optional[float]:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        total_seconds = getattr(timeout, "total_seconds", None)
        if total_seconds is None:
            raise option_error(
                TypeError, "timeout", f"timeout must be a number of seconds, not {type(timeout).__name__}"
            )
        timeout = total_seconds()
    seconds = cast(float, timeout)
    if not (seconds > 0 and seconds < float("inf")):
        raise option_error(ValueError, "timeout", "timeout must be > 0 and finite")
    return float(seconds)


class Guard(_native.Guard):
    """A breaker with its own ``timeout``, ``fallback`` and ``retries`` for the calls made
    through it: ``breaker.guard(timeout=2.0, fallback=None, retries=breaker.retries())``.
    Use it as a decorator (functions, coroutine functions, generator functions) or call
    ``guard.call(fn, ...)`` / ``await guard.call_async(fn, ...)``; ``breaker``, ``timeout``
    (seconds, or None) and ``retries`` (None: one attempt) say what it is. ``call`` and
    ``call_async`` are native: no Python frame of their own."""

    __slots__ = ()

    if TYPE_CHECKING:

        @property
        def breaker(self) -> CircuitBreaker: ...

    def __call__(self, fn: Callable[P, T]) -> Callable[P, T]:
        """Decorates ``fn``: its calls (or, for a generator function, its iterations) go
        through the breaker with this guard's timeout and fallback."""
        return _decorate(self, fn)


def _decorate(guard: Guard, fn: Callable[P, T]) -> Callable[P, T]:
    if not callable(fn):
        raise TypeError(f"a breaker decorates a function, not {type(fn).__name__}")
    if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
        return _decorate_generator(guard, cast("Callable[P, T]", fn))
    if inspect.iscoroutinefunction(fn):
        breaker, timeout, retries = guard.breaker, guard.timeout, guard.retries
        has_fallback, fallback = guard._has_fallback, guard._fallback
        start = breaker._call_async_with

        @functools.wraps(fn)
        async def guarded_async(*args: Any, **kwargs: Any) -> Any:
            return await start(fn, args, kwargs, timeout, has_fallback, fallback, retries)

        guarded_async.breaker = breaker  # type: ignore[attr-defined]
        return cast("Callable[P, T]", guarded_async)
    guarded = _native.GuardedFunction(
        guard.breaker, fn, guard.timeout, guard._has_fallback, guard._fallback, guard.retries
    )
    functools.update_wrapper(guarded, fn)
    return cast("Callable[P, T]", guarded)


# Guarded generators: one permit for the whole iteration, taken when it starts (the first
# `next`) and recorded when it ends: exhausted is a success (its return value classified),
# an exception raised out of it is classified and raised, closed early (`close()`,
# `aclose()`, `break`, garbage-collected) or interrupted is `cancelled`. With a fallback,
# a rejection, or a failure before the first item, gives the fallback's items instead
# (None: none); a failure after an item is raised, since the consumer has real items
# already. A timeout does not apply: the time between items is the consumer's.


def _decorate_generator(guard: Guard, fn: Callable[P, T]) -> Callable[P, T]:
    is_async = inspect.isasyncgenfunction(fn)
    name = getattr(fn, "__qualname__", repr(fn))
    kind = "an async generator function" if is_async else "a generator function"
    if guard.timeout is not None:
        raise TypeError(
            f"{name} is {kind}: a timeout does not bound its iteration (the time between "
            "items is its consumer's); guard it with breaker.guard(timeout=None)"
        )
    if guard.retries is not None:
        raise TypeError(
            f"{name} is {kind}: its iteration cannot be retried (its consumer has its "
            "items already); guard it without retries"
        )
    fallback = guard._fallback
    if guard._has_fallback and not callable(fallback):
        _items(fallback, is_async)
    wrapper = _guarded_async_generator if is_async else _guarded_generator
    guarded: Any = functools.wraps(fn)(wrapper(guard.breaker, fn, guard._has_fallback, fallback))
    guarded.breaker = guard.breaker
    return cast("Callable[P, T]", guarded)


def _items(value: Any, is_async: bool) -> Any:
    """A fallback's value as the items that stand in for a generator's."""
    if value is None:
        return ()
    if hasattr(value, "__iter__") or (is_async and hasattr(value, "__aiter__")):
        return value
    raise TypeError(
        "the fallback of a guarded generator gives the items that stand in for it: an "
        f"iterable{' or an async iterable' if is_async else ''} or None, not {type(value).__name__}"
    )


def _guarded_generator(
    breaker: _native.Breaker, fn: Callable[..., Any], has_fallback: bool, fallback: Any
) -> Callable[..., Generator[Any, Any, Any]]:
    def guarded(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        permit = breaker.acquire()
        if not permit:
            if not has_fallback:
                raise permit.error()
            yield from _items(_fall_back(fallback, permit.error()), False)
            return None
        yielded = False
        failed: Optional[BaseException] = None
        try:
            inner = fn(*args, **kwargs)
            method: Callable[[Any], Any] = inner.send
            arg: Any = None
            while True:
                try:
                    item = method(arg)
                except StopIteration as stop:
                    result = stop.value
                    break
                yielded = True
                try:
                    arg = yield item
                    method = inner.send
                except GeneratorExit:
                    inner.close()
                    raise
                except BaseException as thrown:  # given to the generator, as yield from does
                    method, arg = inner.throw, thrown
        except GeneratorExit:
            permit.cancel()
            raise
        except BaseException as error:
            permit.record_error(error)
            if not has_fallback or yielded or not isinstance(error, Exception):
                raise
            failed = error
        if failed is not None:
            yield from _items(_fall_back(fallback, failed), False)
            return None
        permit.record_result(result)
        return result

    return guarded


def _guarded_async_generator(
    breaker: _native.Breaker, fn: Callable[..., Any], has_fallback: bool, fallback: Any
) -> Callable[..., AsyncGenerator[Any, Any]]:
    async def stand_in(error: BaseException) -> AsyncGenerator[Any, Any]:
        items = _items(_fall_back(fallback, error), True)
        if hasattr(items, "__aiter__"):
            async for item in items:
                yield item
        else:
            for item in items:
                yield item

    async def guarded(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
        permit = breaker.acquire()
        if not permit:
            if not has_fallback:
                raise permit.error()
            async for item in stand_in(permit.error()):
                yield item
            return
        yielded = False
        failed: Optional[BaseException] = None
        try:
            inner = fn(*args, **kwargs)
            method: Callable[[Any], Awaitable[Any]] = inner.asend
            arg: Any = None
            while True:
                try:
                    item = await method(arg)
                except StopAsyncIteration:
                    break
                yielded = True
                try:
                    arg = yield item
                    method = inner.asend
                except GeneratorExit:
                    await inner.aclose()
                    raise
                except BaseException as thrown:  # given to the generator
                    method, arg = inner.athrow, thrown
        except GeneratorExit:
            permit.cancel()
            raise
        except BaseException as error:
            permit.record_error(error)
            if not has_fallback or yielded or not isinstance(error, Exception):
                raise
            failed = error
        if failed is not None:
            async for item in stand_in(failed):
                yield item
            return
        permit.record_result(None)

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
    ``@breaker`` on a function, coroutine function or generator function, ``with
    breaker:`` / ``async with breaker:``, or ``breaker.acquire()`` then
    ``permit.record(outcome)``. Retried: ``breaker.guard(retries=breaker.retries(...))``.
    """

    __slots__ = ()

    def guard(
        self,
        *,
        timeout: Union[float, timedelta, None, _Default] = _Default.TIMEOUT,
        fallback: Any = _Default.FALLBACK,
        retries: Optional[_native.Retries] = None,
    ) -> Guard:
        """This breaker with another ``timeout`` (seconds, a ``timedelta``, or None for
        no budget) and/or ``fallback`` (a value, or a function of the exception); an
        option not given is the breaker's (see ``Guard``). ``retries``: this breaker's
        ``retries(...)``, by which its calls retry a fault (the timeout is each
        attempt's; the fallback answers for the last)."""
        budget = self.timeout if timeout is _Default.TIMEOUT else _timeout_seconds(timeout)
        if fallback is _Default.FALLBACK:
            return Guard(self, budget, self._has_fallback, self._fallback, retries)
        return Guard(self, budget, True, fallback, retries)

    def __call__(self, fn: Callable[P, T]) -> Callable[P, T]:
        """``@breaker``: the function's (or coroutine function's) calls, or the generator
        function's iterations, go through the breaker with its default timeout and
        fallback."""
        return _decorate(self.guard(), fn)

    async def __aenter__(self) -> _native.Permit:
        return self.__enter__()

    async def __aexit__(self, exc_type: Any, exc: Any, traceback: Any) -> Literal[False]:
        return self.__exit__(exc_type, exc, traceback)

    @classmethod
    def from_state(cls: type[_B], state: bytes, elapsed: float = 0.0, **options: Any) -> _B:
        """A breaker made with ``options`` and the exported ``state`` imported (see
        ``import_state``)."""
        breaker = cls(**options)
        breaker.import_state(state, elapsed)
        return breaker
