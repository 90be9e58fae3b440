"""Per-Pod energy truth: what each workload Pod really used, from the emulator's own meters and the engine's
knowledge of who held what. Pure: meter readings and holdings in, per-Pod energy out.

The controller's energy receipts (docs/energy-receipts.md) estimate the same thing from what a cluster
exposes; this is what they are checked against (the smoke's S18, the benchmark). **Only checks and the
benchmark read it**: the workload runner serves it on its own debug address (``/debug/pod-truth``,
``commands/workload.py``), which no Joulie component is configured with, and it is never exported as a
metric (Prometheus, which the controller reads, never sees it).

The definition, over an interval between two readings of a node's meters (the emulator's cumulative
counters, so nothing between readings is lost), for the Pods whose load the emulator ran in it:

- **GPU**: a board's energy belongs whole to the Pod that held it (its load is the only one on it).
- **CPU** is the packages as the emulator's power model composes them (each socket's package energy,
  ``NodeTruth.packages``), on every node: what the RAPL package zones count where the node has them, and
  what the simulator exports as ``hw.energy{hw.type=cpu, hw.id=package-N}`` on every node, RAPL or not
  (``emulation.hwsemconv.components``), which is what the controller reads as the node's CPU. DRAM is not
  CPU (it is ``hw.type=memory``): it is in the platform part, for the truth as for the receipts.
- **CPU busy**: the packages' energy above their true idle draw (the profile's ``idle_pkg_w`` per
  package, over the interval) belongs to the Pods by their busy cores (``request x utilisation``: the
  emulator's package power is linear in the busy share and every busy core runs at one clock,
  ``physics.cpu``).
- **CPU idle**: the packages' idle energy by allocation: a Pod pays its requested cores over the node's
  cores (at most all of it).
- **Platform** (the node meter less the packages and the boards: DRAM, fans, board, PSU loss): by
  allocation share: a CPU node by requested cores over the node's cores; a GPU node the mean of that
  and the Pod's boards over the node's boards.
- **Unallocated**: what no Pod pays (unheld boards, unrequested cores' idle and platform share).

Idle and platform have no physical owner: the allocation conventions are the receipts' own, so the
truth and a receipt differ only where the controller cannot see (each Pod's real utilisation behind its
request, the true idle draws, the rate windows' edges), never by a choice of convention.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Final

HISTORY: Final = 300
"""Readings kept per node and per running Pod for questions about a past instant (``PodTruth.at``): five
minutes at the runner's 1 s tick, enough for a check that compares a few of the controller's windows, and
bounded (a thousand running Pods keep about 45 MB). A Pod that stopped running keeps only its last total."""
PRUNE_EVERY_S: Final = 10.0


@dataclass(frozen=True)
class PodEnergy:
    """One Pod's energy by device kind, J, and how long it held its allocation, s."""

    gpu_j: float = 0.0
    cpu_busy_j: float = 0.0
    cpu_idle_j: float = 0.0
    platform_j: float = 0.0
    held_s: float = 0.0

    @property
    def total_j(self) -> float:
        return self.gpu_j + self.cpu_busy_j + self.cpu_idle_j + self.platform_j

    def __add__(self, other: PodEnergy) -> PodEnergy:
        return PodEnergy(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def scaled(self, k: float) -> PodEnergy:
        return PodEnergy(*(getattr(self, f.name) * k for f in fields(self)))

    def __sub__(self, other: PodEnergy) -> PodEnergy:
        return self + other.scaled(-1.0)


@dataclass(frozen=True)
class Meters:
    """A node's cumulative meters at one reading, J: the whole host, each board, the CPU packages (summed)."""

    at_s: float
    host_j: float
    gpu_j: tuple[float, ...]
    cpu_j: float


@dataclass(frozen=True)
class Holder:
    """A Pod whose load the node ran over the interval."""

    pod: str
    """``namespace/name``."""
    cores: float
    """Cores requested."""
    busy_cores: float
    """Cores busy: request x CPU utilisation."""
    boards: tuple[int, ...] = ()
    held_s: float | None = None
    """How long of the interval it held its allocation; None: all of it."""


@dataclass(frozen=True)
class NodeShape:
    cores: float
    """The node's logical CPUs (its capacity, as the node reports them)."""
    boards: int
    idle_cpu_w: float
    """The packages' true idle draw, all packages together, W."""


@dataclass(frozen=True)
class Split:
    pods: dict[str, PodEnergy]
    unallocated_j: float
    metered_j: float


def split(before: Meters, after: Meters, shape: NodeShape, holders: Iterable[Holder]) -> Split:
    """The interval between two readings, split between its ``holders`` (module docstring)."""
    dt = max(0.0, after.at_s - before.at_s)
    host = after.host_j - before.host_j
    gpu = [a - b for a, b in zip(after.gpu_j, before.gpu_j, strict=False)]
    cpu = after.cpu_j - before.cpu_j
    idle = min(max(cpu, 0.0), shape.idle_cpu_w * dt)
    rest = host - sum(gpu) - cpu
    hs = list(holders)
    busy = sum(h.busy_cores for h in hs)
    out: dict[str, PodEnergy] = {}
    for h in hs:
        held = dt if h.held_s is None else min(max(h.held_s, 0.0), dt)
        frac = held / dt if dt > 0 else 0.0
        core_share = min(1.0, h.cores / shape.cores) if shape.cores > 0 else 0.0
        share = core_share if shape.boards == 0 else 0.5 * core_share + 0.5 * min(1.0, len(h.boards) / shape.boards)
        part = PodEnergy(
            gpu_j=sum(gpu[i] for i in h.boards if i < len(gpu)),
            cpu_busy_j=(cpu - idle) * h.busy_cores / busy if busy > 0 else 0.0,
            cpu_idle_j=frac * idle * core_share,
            platform_j=frac * rest * share,
            held_s=held,
        )
        out[h.pod] = out.get(h.pod, PodEnergy()) + part
    billed = sum(p.total_j for p in out.values())
    return Split(out, host - billed, host)


@dataclass
class PodTruth:
    """The running totals: per Pod, per node's unallocated part and meter, from the first reading on."""

    pods: dict[str, PodEnergy] = field(default_factory=dict)
    node_of: dict[str, str] = field(default_factory=dict)
    unallocated_j: dict[str, float] = field(default_factory=dict)
    metered_j: dict[str, float] = field(default_factory=dict)
    since_s: dict[str, float] = field(default_factory=dict)
    """Each node's first reading (its totals count from there)."""
    last: dict[str, Meters] = field(default_factory=dict)
    pod_history: dict[str, deque[tuple[float, PodEnergy]]] = field(default_factory=dict)
    """Each Pod's running total after each reading (from a zero at the start of its first interval)."""
    node_history: dict[str, deque[tuple[float, float, float]]] = field(default_factory=dict)
    """Each node's (time, metered, unallocated) running totals after each reading."""
    pruned_s: float = 0.0

    def read(self, node: str, meters: Meters, shape: NodeShape, holders: Iterable[Holder]) -> None:
        """A new reading of ``node``; ``holders``: the Pods whose load it ran since the previous reading. A
        meter going back (the emulator lost its state) restarts the node's interval, bills nothing."""
        before = self.last.get(node)
        self.last[node] = meters
        if before is None or meters.at_s <= before.at_s or meters.host_j < before.host_j:
            if node not in self.since_s:
                self.since_s[node] = meters.at_s
                self.node_history[node] = deque([(meters.at_s, 0.0, 0.0)], maxlen=HISTORY)
            return
        got = split(before, meters, shape, holders)
        for pod, e in got.pods.items():
            if pod not in self.pods:
                self.pod_history[pod] = deque([(before.at_s, PodEnergy())], maxlen=HISTORY)
            self.pods[pod] = self.pods.get(pod, PodEnergy()) + e
            self.node_of[pod] = node
            self.pod_history[pod].append((meters.at_s, self.pods[pod]))
        self.unallocated_j[node] = self.unallocated_j.get(node, 0.0) + got.unallocated_j
        self.metered_j[node] = self.metered_j.get(node, 0.0) + got.metered_j
        self.node_history[node].append((meters.at_s, self.metered_j[node], self.unallocated_j[node]))
        if meters.at_s - self.pruned_s >= PRUNE_EVERY_S:  # once in a while, not per node and reading
            self.pruned_s = meters.at_s
            self._forget_stopped(meters.at_s - HISTORY)

    def _forget_stopped(self, before_s: float) -> None:
        """A Pod whose last reading is older than the history kept answers every question with its last
        total: its other readings go (a long trace's finished Pods would otherwise keep theirs for ever)."""
        for hist in self.pod_history.values():
            if len(hist) > 1 and hist[-1][0] < before_s:
                last = hist[-1]
                hist.clear()
                hist.append(last)

    def at(self, t_s: float) -> PodTruth:
        """The running totals as they stood at ``t_s`` (linear between the readings around it: the load, hence
        the power, is steady between two readings). Raises ``TruthFormatError`` for an instant after the
        last reading or before the readings kept."""
        latest = max((m.at_s for m in self.last.values()), default=0.0)
        if t_s > latest:
            raise TruthFormatError(f"pod truth: {t_s:.3f} is after the last reading ({latest:.3f}); ask again later")
        out = PodTruth()
        for node, hist in self.node_history.items():
            if t_s < hist[0][0] and self.since_s[node] < hist[0][0]:
                raise TruthFormatError(f"pod truth: {t_s:.3f} is before the readings kept of node {node}")
            metered, unallocated = _interpolate(hist, t_s, lambda v: (v[1], v[2]))
            out.since_s[node] = self.since_s[node]
            out.metered_j[node], out.unallocated_j[node] = metered, unallocated
            out.last[node] = Meters(min(t_s, self.last[node].at_s), 0.0, (), 0.0)
        for pod, ph in self.pod_history.items():
            if t_s <= ph[0][0]:
                continue
            (e,) = _interpolate(ph, t_s, lambda v: (v[1],))
            out.pods[pod], out.node_of[pod] = e, self.node_of[pod]
        return out

    def document(self) -> dict[str, Any]:
        """The ``/debug/pod-truth`` answer (``parse_document`` reads it back)."""
        return {
            "definition": "joulie_simulator.workload.podtruth (docs/energy-receipts.md, 'The emulator's truth')",
            "latestS": max((m.at_s for m in self.last.values()), default=0.0),
            "pods": {
                p: {"node": self.node_of[p], "heldS": e.held_s, "energyJ": _energies(e)}
                for p, e in sorted(self.pods.items())
            },
            "nodes": {
                n: {
                    "sinceS": self.since_s.get(n, 0.0),
                    "atS": self.last[n].at_s if n in self.last else 0.0,
                    "meteredJ": self.metered_j.get(n, 0.0),
                    "unallocatedJ": self.unallocated_j.get(n, 0.0),
                }
                for n in sorted(self.since_s)
            },
        }


def _interpolate(hist: deque[Any], t_s: float, values: Any) -> tuple[Any, ...]:
    """``values`` of the entry at ``t_s``, linear between the entries around it (the last one after them)."""
    times = [h[0] for h in hist]
    i = bisect_right(times, t_s)
    if i == 0:
        return tuple(v.scaled(0.0) if isinstance(v, PodEnergy) else 0.0 for v in values(hist[0]))
    if i == len(hist):
        return tuple(values(hist[-1]))
    (t0, *_), (t1, *_) = hist[i - 1], hist[i]
    k = (t_s - t0) / (t1 - t0) if t1 > t0 else 1.0
    return tuple(
        a + (b - a).scaled(k) if isinstance(a, PodEnergy) else a + (b - a) * k
        for a, b in zip(values(hist[i - 1]), values(hist[i]), strict=True)
    )


def _energies(e: PodEnergy) -> dict[str, float]:
    return {"gpu": e.gpu_j, "cpuBusy": e.cpu_busy_j, "cpuIdle": e.cpu_idle_j, "platform": e.platform_j}


class TruthFormatError(ValueError):
    pass


def parse_document(doc: Mapping[str, Any]) -> dict[str, tuple[str, PodEnergy]]:
    """Each Pod's truth (``namespace/name`` -> (node, energy)) from a ``/debug/pod-truth`` answer."""
    pods = doc.get("pods")
    if not isinstance(pods, Mapping):
        raise TruthFormatError("pod truth: no 'pods' object")
    out: dict[str, tuple[str, PodEnergy]] = {}
    for name, body in pods.items():
        try:
            e = body["energyJ"]
            out[str(name)] = (
                str(body["node"]),
                PodEnergy(
                    float(e["gpu"]),
                    float(e["cpuBusy"]),
                    float(e["cpuIdle"]),
                    float(e["platform"]),
                    float(body["heldS"]),
                ),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise TruthFormatError(f"pod truth: pod {name}: {err!r}") from None
    return out
