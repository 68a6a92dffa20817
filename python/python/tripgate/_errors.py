"""The exceptions tripgate raises, made by the native module (``src/errors.rs``), and the
option errors the Python side raises."""

from typing import Type, TypeVar

from ._native import CallTimeoutError, CircuitOpenError, StateError

__all__ = ["CircuitOpenError", "CallTimeoutError", "StateError"]

E = TypeVar("E", bound=BaseException)


def option_error(kind: Type[E], option: str, message: str) -> E:
    """An error of ``kind`` that names the option it is about (``error.option``)."""
    error = kind(message)
    setattr(error, "option", option)
    return error
