"""A daemon thread that calls one function every ``interval_s`` seconds until stopped: the push
loop the agent's power exporter and the simulator's OTLP metric and log pushers share."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Periodic:
    """Calls ``tick`` every ``interval_s`` (wall clock), first after one interval, until :meth:`stop`."""

    def __init__(self, interval_s: float, tick: Callable[[], object], name: str) -> None:
        self.interval_s = interval_s
        self._tick = tick
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._tick()

    def start(self) -> None:
        self._thread.start()

    def stop(self, join_s: float = 10.0) -> None:
        """No more ticks; waits up to ``join_s`` for one in progress to finish."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(join_s)
