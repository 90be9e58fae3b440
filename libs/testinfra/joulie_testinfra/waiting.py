"""Polling for a condition in tests against real processes (which take their time)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(fn: Callable[[], T | None], timeout_s: float = 30, what: str = "condition", poll_s: float = 0.2) -> T:
    """The first truthy value of `fn()`; AssertionError naming `what` and the last value on timeout."""
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(poll_s)
    raise AssertionError(f"{what} not reached within {timeout_s:.0f} s (last: {last!r})")
