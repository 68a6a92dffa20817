"""The error table's vector (tests/vectors/errors/errors.json) on the package's
``classify_error``: each case's error built as a Python exception (an errno name as an
``OSError``'s errno, a kind as a class of that name and package, a status as ``status``,
a gRPC code as a ``grpc`` error's ``code()``, a chain through ``__cause__``).

Python exceptions carry no client library's error codes, and only the errno names the
platform's ``errno`` module defines: those cases are skipped, and counted."""

import builtins
import errno
import json
import pathlib

import tripgate

VECTOR = pathlib.Path(__file__).resolve().parents[2] / "tests" / "vectors" / "errors" / "errors.json"


class Skip(Exception):
    pass


def kind(name, bases):
    """The class a kind name names: a built-in, or a class of that name in its package."""
    if "." not in name:
        found = getattr(builtins, name, None)
        if isinstance(found, type) and issubclass(found, BaseException):
            return found
        return type(name, bases, {"__module__": "builtins"})
    package, cls = name.rsplit(".", 1)
    return type(cls, bases, {"__module__": package})


def build(spec):
    cause = build(spec["cause"]) if "cause" in spec else None
    if "code" in spec:
        raise Skip("a Python exception carries no library error code")
    bases = (Exception,)
    if "kind" in spec:
        bases = tuple(kind(name, (Exception,)) for name in spec["kind"])
    if "grpc" in spec:
        bases = (type("RpcError", bases, {"__module__": "grpc"}),)
    cls = type("Raised", bases, {"__module__": "app"}) if len(bases) > 1 or "grpc" in spec else bases[0]
    if "errno" in spec:
        number = getattr(errno, spec["errno"], None)
        if number is None:
            raise Skip(f"{spec['errno']} is no errno here")
        error = OSError(number, "failed")
    else:
        error = cls("failed")
    if "status" in spec:
        error.status = spec["status"]
    if "grpc" in spec:
        error.code = lambda: spec["grpc"]
    error.__cause__ = cause
    return error


def test_the_error_table_vector_passes_on_classify_error():
    vector = json.loads(VECTOR.read_text())
    assert vector["max-causes"] == tripgate.MAX_CAUSES
    ran, skipped, failed = 0, [], []
    for case in vector["cases"]:
        try:
            error = build(case["error"])
        except Skip as why:
            skipped.append(f"{case['why']}: {why}")
            continue
        ran += 1
        got = tripgate.classify_error(error)
        if got != case["outcome"]:
            failed.append(f"{case['why']}: got {got}, expected {case['outcome']}")
    assert failed == []
    # Skipped: the library codes, and Node's name-lookup codes (no errno).
    assert len(skipped) <= 12, skipped
    assert ran >= len(vector["cases"]) - 12
