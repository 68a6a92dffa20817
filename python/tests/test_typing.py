"""The package's types: `mypy --strict` passes on the installed package and on a script
written from the README (readme_typed.py, which then runs), and finds the mistakes the
types are there to catch. mypy is pinned in requirements-test.txt."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("mypy", reason="mypy (requirements-test.txt) runs on CPython 3.10 or later")

HERE = pathlib.Path(__file__).resolve().parent


def mypy(tmp_path, *targets):
    """mypy --strict's exit code and report, its cache in cargo's target dir when the test
    script says where that is."""
    cache = pathlib.Path(os.environ.get("TRIPGATE_TARGET_DIR", tmp_path)) / "mypy-cache"
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), "--no-color-output", *targets],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    return done.returncode, done.stdout + done.stderr


def test_the_installed_package_passes_mypy_strict(tmp_path):
    code, report = mypy(tmp_path, "-p", "tripgate")
    assert code == 0, report
    assert "Success: no issues found" in report


def test_a_script_from_the_readme_passes_mypy_strict_and_runs(tmp_path):
    code, report = mypy(tmp_path, str(HERE / "readme_typed.py"))
    assert code == 0, report
    ran = subprocess.run([sys.executable, str(HERE / "readme_typed.py")], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("ran ")


# Each line marked `# error: CODE` must be reported with that code, and no other line.
MISTAKES = textwrap.dedent(
    """\
    import asyncio
    import tripgate

    breaker = tripgate.CircuitBreaker(failure_threshold=5)


    @breaker
    def refund(amount: int) -> int:
        return amount


    @breaker.guard(fallback=0)
    async def fetch(path: str) -> bytes:
        return b""


    refund("ten")  # error: arg-type
    breaker.call(refund, "ten")  # error: arg-type
    total: str = breaker.call(refund, 1)  # error: assignment
    body: str = asyncio.run(fetch("/"))  # error: assignment
    tripgate.CircuitBreaker(failure_treshold=5)  # error: call-arg
    tripgate.CircuitBreaker(shadow="on")  # error: arg-type
    breaker.reconfigure(failure_treshold=5)  # error: call-arg
    kept: str = breaker.reconfigure(cooldown=5).window_kept  # error: assignment
    breaker.guard(timeout="2s")  # error: arg-type
    retries = breaker.retries(max_attempt=4)  # error: call-arg
    breaker.retries(base_delay="50ms")  # error: arg-type
    breaker.guard(retries=3)  # error: arg-type
    wait, why = retries.next(1, "fault")
    waited: float = wait  # error: assignment
    permit = breaker.acquire()
    permit.record(503)  # error: union-attr
    if not permit:
        permit.record(503)  # error: attr-defined
    else:
        permit.reason  # error: attr-defined
        permit.record(503, retry_after="60")  # error: arg-type
        asked: float = tripgate.retry_after_of(permit)  # error: assignment
    tripgate.Registry().get(5)  # error: arg-type
    """
)


def test_mypy_finds_the_mistakes_the_types_forbid(tmp_path):
    script = tmp_path / "mistakes.py"
    script.write_text(MISTAKES)
    code, report = mypy(tmp_path, str(script))
    assert code == 1, report
    expected = {
        (n, line.rsplit("# error: ", 1)[1])
        for n, line in enumerate(MISTAKES.splitlines(), 1)
        if "# error: " in line
    }
    found = set()
    for line in report.splitlines():
        if line.startswith("mistakes.py:") or line.startswith(str(script) + ":"):
            where, _, rest = line.partition(": error: ")
            if rest:
                found.add((int(where.split(":")[-1]), rest.rsplit("[", 1)[1].rstrip("]")))
    assert found == expected, report
