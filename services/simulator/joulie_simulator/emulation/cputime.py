"""The emulated kubelet's cAdvisor: each container's CPU time on each emulated node, as a real kubelet serves
it on ``/metrics/cadvisor`` (``container_cpu_usage_seconds_total{namespace, pod, container}``, seconds of CPU
since the container started). Pure: the emulator's ticks in, the exposition text out.

Each tick adds a container's busy cores (``Load.cpu_jobs``: the workload runner's request x utilisation
of its job, 0 for a Pod that runs nothing the emulator knows) times the tick: the same ticks the node's
energy counters integrate, so the CPU time and the energy over any window describe the same seconds. A
container the load no longer names is gone, and so are its series (cAdvisor drops a stopped container's).
Each Pod also has its pod-level series (``container=""``, the Pod's cgroup: the sum of its containers), as
a kubelet's cAdvisor exports it; queries of containers leave it out with ``container!=""``.

The controller manager reads these (``readings.receiptinputs``) to split a node's busy CPU energy by use.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from joulie_simulator.physics.model import CpuJob

CPU_USAGE = "container_cpu_usage_seconds_total"
Key = tuple[str, str, str]
"""(namespace, pod, container)."""


@dataclass
class CpuTime:
    """Each node's containers' CPU time so far, seconds."""

    counters: dict[str, dict[Key, float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def advance(self, node: str, jobs: Iterable[CpuJob], dt_s: float) -> None:
        """One tick of ``dt_s`` on ``node`` running ``jobs``; a container not among them is forgotten."""
        with self.lock:
            old = self.counters.get(node, {})
            new: dict[Key, float] = {}
            for j in jobs:
                key = (j.namespace, j.pod, j.container)
                new[key] = new.get(key, old.get(key, 0.0)) + max(j.busy_cores, 0.0) * max(dt_s, 0.0)
            self.counters[node] = new

    def forget(self, node: str) -> None:
        """The node stopped running anything (powered off): its containers are gone."""
        with self.lock:
            self.counters.pop(node, None)

    def snapshot(self) -> dict[str, dict[Key, float]]:
        with self.lock:
            return {n: dict(c) for n, c in self.counters.items()}


def _label(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def exposition(counters: dict[str, dict[Key, float]]) -> str:
    """The Prometheus text of every container's and every Pod's CPU time, labelled with its ``node`` (one
    endpoint serves every emulated node: a scrape of each kubelet would label its series with the node)."""
    lines = [f"# HELP {CPU_USAGE} Cumulative cpu time consumed in seconds.", f"# TYPE {CPU_USAGE} counter"]
    for node in sorted(counters):
        pods: dict[tuple[str, str], float] = {}
        for (ns, pod, container), s in sorted(counters[node].items()):
            pods[(ns, pod)] = pods.get((ns, pod), 0.0) + s
            lines.append(
                f'{CPU_USAGE}{{container="{_label(container)}",namespace="{_label(ns)}",node="{_label(node)}",'
                f'pod="{_label(pod)}"}} {s!r}'
            )
        for (ns, pod), s in sorted(pods.items()):
            lines.append(
                f'{CPU_USAGE}{{container="",namespace="{_label(ns)}",node="{_label(node)}",pod="{_label(pod)}"}} {s!r}'
            )
    return "\n".join(lines) + "\n"
