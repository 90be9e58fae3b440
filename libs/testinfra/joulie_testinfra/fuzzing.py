"""Shared strategies for fuzzing the loaders of user files (cluster spec, hardware profiles,
traces) with hypothesis: start from a valid document and break one field at a time, or throw
arbitrary bytes. What a user's error may never show is listed once here, and so is the line each
fuzz module prints at its end (:class:`FuzzTally`, :func:`fuzz_report`).

Test support only (imported by ``*_fuzz_test.py``); hypothesis and pytest are test dependencies.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# What an error shown to a user must never carry: interpreter or library hints, tracebacks, reprs.
LEAKS = ("Traceback", "set_int_max_str_digits", "pydantic.dev", "errors.pydantic", "object at 0x",
         "For further information")

def fuzz_settings(max_examples: int) -> settings:
    """Settings every fuzz test uses: the same inputs on every run (a CI failure is reproducible and
    never a roll of the dice), unless ``JOULIE_FUZZ_RANDOM=1`` asks for fresh ones to hunt with."""
    return settings(max_examples=max_examples, deadline=None, suppress_health_check=list(HealthCheck),
                    database=None, derandomize=os.environ.get("JOULIE_FUZZ_RANDOM", "") != "1")


# Stands for a 5000-digit number: replaced in the document's text (``with_huge``), since Python
# itself will not turn such an int into text.
HUGE = "__HUGE_NUMBER__"


def with_huge(text: str) -> str:
    """The document text with every HUGE placeholder (quoted or not) a bare 5000-digit integer."""
    digits = "9" * 5000
    return text.replace(f'"{HUGE}"', digits).replace(f"'{HUGE}'", digits).replace(HUGE, digits)


# Values a hand-edited YAML/JSON field may take: every type, huge and odd numbers, long strings.
ODD_VALUES: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30),
    st.just(HUGE),
    st.just(float("nan")), st.just(-1), st.just(0), st.just(10**30),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key/index path in a parsed document (to pick one to break)."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths(v, (*prefix, i))
    return out


def set_path(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A copy of ``doc`` with the value at ``path`` replaced (or deleted when ``value`` is DELETE)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        out = dict(doc)
        if not rest and value is DELETE:
            out.pop(head, None)
        else:
            out[head] = set_path(doc[head], rest, value)
        return out
    out_list = list(doc)
    if not rest and value is DELETE:
        del out_list[head]
    else:
        out_list[head] = set_path(doc[head], rest, value)
    return out_list


DELETE = object()


def clean(message: str) -> list[str]:
    """The leaks found in a message (empty: fine)."""
    return [leak for leak in LEAKS if leak in message]


@dataclass
class FuzzTally:
    """What one fuzz module tried, and how much of it the loader refused with an error naming the
    field (each counted by kind: "spec", "trace", ...)."""

    what: str
    tried: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)

    def summary(self) -> str:
        return (f"{self.what} fuzz: {sum(self.tried.values())} inputs tried, 0 crashes, "
                f"{sum(self.refused.values())} refused by field")


def fuzz_report(summary: Callable[[], str],
                check: Callable[[], None] | None = None) -> Callable[[], Iterator[None]]:
    """A module-scoped autouse fixture for a fuzz test module: after its tests, prints `summary()`
    (how much the fuzzing tried, in the test log: a run that tried nothing shows) and runs `check`
    (say, every kind tried often enough). In the module: ``report = fuzz_report(TALLY.summary)``."""

    @pytest.fixture(scope="module", autouse=True)
    def report() -> Iterator[None]:
        yield
        print(f"\n{summary()}")
        if check is not None:
            check()

    return report
