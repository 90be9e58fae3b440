"""What each tick cost the simulator (wall and CPU ms), kept over a window for ``/debug/emulate``.

A scale run asks "≤ 100 ms per tick with a bounded worst tick" of the live simulator, with agents
reading and writing, not of ``bench-tick``'s quiet loop: the emulate loop records every tick here,
``/debug/emulate`` serves the summary as ``tickCost`` and the log says it once a minute, with the CPU
of each part of the tick (physics, ledgers, the files written and read back), so a slow tick in a
long run says where it went. The worst tick since the start keeps its own parts and the garbage
collector's share of it (``worstCpuTick``): a median says what a tick costs, the worst tick what
spiked (a 1206 ms tick among 55 ms ones in a 1000-Node run was a mystery without it). Pure: the shell
measures, this only keeps and summarises.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any


class TickCost:
    """The last ``window`` ticks' wall and CPU milliseconds, and the worst since the start."""

    def __init__(self, window: int = 600) -> None:
        self._wall_ms: deque[float] = deque(maxlen=window)
        self._cpu_ms: deque[float] = deque(maxlen=window)
        # CPU ms of each part of the tick, by part name in the order first recorded.
        self._parts: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self.count = 0
        self._gc_ms: deque[float] = deque(maxlen=window)
        self.max_wall_ms = 0.0
        self.max_cpu_ms = 0.0
        self._worst: dict[str, Any] | None = None

    def record(self, wall_ms: float, cpu_ms: float, parts: dict[str, float] | None = None, gc_ms: float = 0.0) -> None:
        """One tick; ``parts``: the CPU ms of each part of it (say the same parts every tick);
        ``gc_ms``: the CPU ms the garbage collector took inside the tick (within the parts, not beside)."""
        with self._lock:
            self._wall_ms.append(wall_ms)
            self._cpu_ms.append(cpu_ms)
            self._gc_ms.append(gc_ms)
            for name, ms in (parts or {}).items():
                self._parts.setdefault(name, deque(maxlen=self._cpu_ms.maxlen)).append(ms)
            self.count += 1
            self.max_wall_ms = max(self.max_wall_ms, wall_ms)
            if self._worst is None or cpu_ms > self.max_cpu_ms:
                self._worst = {"tick": self.count, "cpuMs": round(cpu_ms, 3), "wallMs": round(wall_ms, 3),
                               "cpuMsByPart": {k: round(v, 3) for k, v in (parts or {}).items()}, "gcMs": round(gc_ms, 3)}
            self.max_cpu_ms = max(self.max_cpu_ms, cpu_ms)

    def summary(self) -> dict[str, Any]:
        """``ticks`` (since the start), ``window`` (ticks summarised), median/p99/max wall and CPU ms
        over the window, the median CPU ms of each part recorded (``cpuMsByPart``), the collector's CPU
        ms (``gcMs``), the worst wall and CPU ms since the start, and the worst CPU tick's number
        (counted from 1), parts and collector ms (``worstCpuTick``, absent before the first tick)."""
        with self._lock:
            wall, cpu = sorted(self._wall_ms), sorted(self._cpu_ms)
            parts = {name: _stats(sorted(ms))["median"] for name, ms in self._parts.items()}
            return {
                "ticks": self.count,
                "window": len(wall),
                "wallMs": _stats(wall),
                "cpuMs": _stats(cpu),
                "cpuMsByPart": parts,
                "gcMs": _stats(sorted(self._gc_ms)),
                "maxWallMsSinceStart": round(self.max_wall_ms, 3),
                "maxCpuMsSinceStart": round(self.max_cpu_ms, 3),
            } | ({"worstCpuTick": dict(self._worst)} if self._worst is not None else {})

    def line(self) -> str:
        """One log line: the window's median and max wall (CPU) ms, the parts' median CPU ms, the
        collector's, and where the worst CPU tick since the start went."""
        s = self.summary()
        w, c, g = s["wallMs"], s["cpuMs"], s["gcMs"]
        parts = ", ".join(f"{name} {ms:g}" for name, ms in s["cpuMsByPart"].items())
        text = (
            f"tick cost over the last {s['window']} ticks: wall median {w['median']:g} ms, p99 {w['p99']:g} ms, "
            f"max {w['max']:g} ms; cpu median {c['median']:g} ms, max {c['max']:g} ms "
            f"(worst since start: wall {s['maxWallMsSinceStart']:g} ms)" + (f"; cpu ms by part (median): {parts}" if parts else "")
        )
        if g["max"] > 0:
            text += f"; gc cpu median {g['median']:g} ms, max {g['max']:g} ms"
        worst = s.get("worstCpuTick")
        if worst is not None:
            wp = ", ".join(f"{name} {ms:g}" for name, ms in worst["cpuMsByPart"].items())
            text += (f"; worst cpu tick #{worst['tick']}: {worst['cpuMs']:g} ms" + (f" ({wp}" if wp else " (")
                     + f"{', ' if wp else ''}gc {worst['gcMs']:g})")
        return text


def _stats(sorted_ms: list[float]) -> dict[str, float]:
    if not sorted_ms:
        return {"median": 0.0, "p99": 0.0, "max": 0.0}
    n = len(sorted_ms)
    mid = n // 2
    median = sorted_ms[mid] if n % 2 else (sorted_ms[mid - 1] + sorted_ms[mid]) / 2
    return {
        "median": round(median, 3),
        "p99": round(sorted_ms[min(n - 1, (99 * n) // 100)], 3),
        "max": round(sorted_ms[-1], 3),
    }
