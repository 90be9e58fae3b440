"""Retry with a written-down backoff sequence, for writes that may hit conflicts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

# Fibonacci-like, as in kopf: quick first retries, then slower, bounded in total (54 s).
DEFAULT_DELAYS_S: tuple[float, ...] = (1, 1, 2, 3, 5, 8, 13, 21)


@dataclass(frozen=True)
class Backoff:
    """Delays between attempts, seconds. `len(delays_s) + 1` attempts in all."""

    delays_s: Sequence[float] = DEFAULT_DELAYS_S
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def delays(self) -> Iterator[float]:
        yield from self.delays_s


def retry(
    op: Callable[[], T],
    *,
    is_temporary: Callable[[BaseException], bool],
    backoff: Backoff | None = None,
    on_retry: Callable[[int, float, BaseException], None] | None = None,
) -> T:
    """Run `op`, retrying temporary failures with `backoff`; permanent ones raise at once.

    The last temporary failure is re-raised once the delays are used up, so a failed write is
    reported rather than retried forever.
    """
    plan = backoff or Backoff()
    attempt = 0
    delays = plan.delays()
    while True:
        attempt += 1
        try:
            return op()
        except Exception as exc:
            if not is_temporary(exc):
                raise
            delay = next(delays, None)
            if delay is None:
                raise
            if on_retry is not None:
                on_retry(attempt, delay, exc)
            plan.sleep(delay)
