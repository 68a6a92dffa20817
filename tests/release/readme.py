"""What the consumer test reads from a README: its first example in a language, and what
the README says that example prints."""

import re

FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```", re.M | re.S)


def example(readme: str, language: str) -> str:
    """The first fenced block of `language` (`rust`, `toml`, `python`, `js`, `ts`)."""
    for found in FENCE.finditer(readme):
        if found.group(1) == language:
            return found.group(2)
    raise SystemExit(f"the README has no {language} example")


def expected_output(readme: str) -> str:
    """The text of the first "It prints `…`" after the README's first runnable example."""
    found = re.search(r"[Ii]t prints `([^`]+)`", readme)
    if not found:
        raise SystemExit("the README does not say what its first example prints (It prints `…`)")
    return " ".join(found.group(1).split())
