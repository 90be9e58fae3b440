"""The CPU the cyclic garbage collector takes on one thread (the emulate loop's), tick by tick.

A collection runs on whichever thread's allocation set it off, and a full one walks every tracked
object: in a simulator holding 1000 Nodes' physics that is a tick's budget many times over. The
collector's own callbacks (``gc.callbacks``) say when each collection starts and stops; this adds up
the thread's CPU in between, so ``TickCost`` can say how much of a slow tick was the collector.
"""

from __future__ import annotations

import gc
import threading
import time
from types import TracebackType
from typing import Any


class GcClock:
    """CPU ms of collections on the thread that installed it, and collections by generation, since
    the last :meth:`take`. A context manager: installed on enter, removed on exit."""

    def __init__(self) -> None:
        self._thread = threading.get_ident()
        self._started: float | None = None
        self._ms = 0.0
        self.collections = [0, 0, 0]

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if threading.get_ident() != self._thread:
            return
        if phase == "start":
            self._started = time.thread_time()
        elif self._started is not None:
            self._ms += (time.thread_time() - self._started) * 1000
            self._started = None
            self.collections[int(info.get("generation", 0))] += 1

    def take(self) -> float:
        """The collector's CPU ms on this thread since the last take (or the install)."""
        ms, self._ms = self._ms, 0.0
        return ms

    def __enter__(self) -> GcClock:
        self._thread = threading.get_ident()
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        gc.callbacks.remove(self._callback)
