"""Energy receipts: each Pod's share of what a node's meters measured, by device kind. Pure: no I/O.

The controller sees, per node and per interval (a rate window of the energy counters): the energy of
each GPU board by index, of the CPU packages, and of the whole node (the BMC or the sum of the
components); and, per Pod, which boards it held (the kubelet's pod-resources API), its CPU request,
and how long of the interval it ran. The rules, in the order :func:`attribute` applies them:

- **GPU boards.** A board's energy goes to the Pod that held it: all of it, idle included (a held
  board is not available to anyone else). The part of the interval nobody held it pays the board's
  idle draw to "unallocated"; a board held by nobody is all unallocated.
- **CPU packages.** The packages' energy splits into idle (``cpu_idle_w`` x interval: the floor a
  package draws with every core asleep) and busy (the rest). The idle part goes by allocation: a
  Pod gets its requested core-seconds over ALL the node's core-seconds, the unrequested cores' part is
  unallocated (so a Pod's idle share does not shrink as other Pods get busier). The busy part goes by
  the Pod's share of the CPU time the Pods used (their cgroups' usage) where every Pod on the node
  reports it, else by its share of the requested core-seconds (a request says what a Pod may use,
  not what it used: docs/energy-receipts.md measures the difference).
- **The rest of the node** (node meter minus the devices: DRAM, fans, board, NICs, power-supply
  loss) goes by allocation share: on a GPU node the mean of the Pod's share of the boards and of the
  cores, on a CPU node its share of the cores; the rest is unallocated.

Every split gives its remainder to "unallocated", so the receipts of an interval and its unallocated
part add up to the node meter exactly (:func:`Attribution.total_j`). Idle and platform shares are
conventions (no instrument measures whose idle a watt is); the convention is allocation, the one
under which a Pod's bill does not depend on its neighbours' utilisation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from joulie_api.receipt import EnergyReceipt
from joulie_controller.model.capmodel import CPU_MODEL, GPU_MODEL

METHOD: Final = "attribution:joulie/v1"
"""The attribution rules of this module, as a receipt names them (docs/energy-receipts.md)."""


def package_idle_w(max_w: float) -> float:
    """A CPU package's idle draw as the controller's model has it (``capmodel.CPU_MODEL``), from its maximum."""
    return CPU_MODEL.idle_frac * max_w


def board_idle_w(max_w: float) -> float:
    """A GPU board's idle draw as the controller's model has it (``capmodel.GPU_MODEL``), from its maximum."""
    return GPU_MODEL.idle_frac * max_w


@dataclass(frozen=True)
class Holding:
    """What one Pod held on a node during one interval."""

    pod: str
    """``namespace/name``."""
    held_s: float
    """Seconds of the interval the Pod ran (started or finished inside it: less than the interval)."""
    gpus: tuple[int, ...] = ()
    """The boards it held, by index (the kubelet's pod-resources API on a real node)."""
    cpu_cores: float = 0.0
    """Its CPU request, in cores."""
    cpu_used_core_s: float | None = None
    """The CPU time it used in the interval, core-seconds (the cgroup's ``cpu.stat`` usage, as cAdvisor's
    ``container_cpu_usage_seconds_total`` exports it); None where the node does not export it."""


@dataclass(frozen=True)
class NodeEnergy:
    """One node over one interval, as its meters measured it."""

    interval_s: float
    node_j: float
    """The node meter (BMC, or the sum of the components where there is none)."""
    gpu_j: Mapping[int, float] = field(default_factory=dict)
    """Each board's energy, by index."""
    cpu_j: float = 0.0
    """All CPU packages together (RAPL/HSMP package energy)."""
    cores: float = 0.0
    """The node's allocatable cores."""
    cpu_idle_w: float = 0.0
    """The packages' idle draw together (every core asleep), W."""
    gpu_idle_w: float = 0.0
    """One board's idle draw, W."""
    meter_span: tuple[float, float] | None = None
    """The node meter's first and last sample times the energies run between (Unix seconds): a window's
    energy is its samples' span, which differs from the window by the export phase at each edge. None:
    the energies are the interval's own (the benchmark's)."""

    @property
    def energy_s(self) -> float:
        """The seconds the energies were measured over: the meter's span where known, else the interval.
        Idle draws (W) are turned into energy over it, so a window whose samples spanned 58 s of a 60 s
        window is not billed 60 s of idle, and a floor learnt from it is not 3 % low."""
        if self.meter_span is not None and self.meter_span[1] > self.meter_span[0]:
            return self.meter_span[1] - self.meter_span[0]
        return self.interval_s


IDLE_MEASURED: Final = "measured"
IDLE_MODEL: Final = "model"
IDLE_UNKNOWN: Final = "unknown"
IDLE_SOURCES: Final = (IDLE_MEASURED, IDLE_MODEL, IDLE_UNKNOWN)

IDLE_USE_FRAC: Final = 0.01
"""An interval counts as idle for the CPU floor when the Pods that held cores in it used at most this
share of the node's core-seconds (their cgroups' CPU time): a node whose Pods hold cores but do nothing
(a notebook, a Pod waiting on its input) shows its idle draw too, not only a node without Pods."""


def cpu_idle_window(node: NodeEnergy, holdings: Sequence[Holding]) -> bool:
    """Whether the packages drew their idle power over the interval: no Pod held cores, or every Pod
    that did reports its CPU time and together they used (almost) none of the node's cores."""
    held = [h for h in holdings if h.held_s > 0 and h.cpu_cores > 0]
    if not held:
        return True
    used = [h.cpu_used_core_s for h in held]
    if node.cores <= 0 or any(u is None for u in used):
        return False
    return sum(u for u in used if u is not None) <= IDLE_USE_FRAC * node.cores * node.interval_s


@dataclass(frozen=True)
class IdleFloor:
    """A node's idle draws as measured: the lowest CPU package power (all packages) over intervals no Pod
    held any cores in, and the lowest power of a board over intervals nobody held it. None until seen:
    the model's estimates (``package_idle_w``, ``board_idle_w``) stand in. A measured floor beats the
    model: the idle part of a small Pod's bill is most of it, and a watt of idle error per package
    moves a 4-core Pod's bill by several per cent (docs/energy-receipts.md)."""

    cpu_w: float | None = None
    gpu_w: float | None = None

    def learn(self, node: NodeEnergy, holdings: Sequence[Holding]) -> IdleFloor:
        t = node.energy_s
        if t <= 0:
            return self
        cpu_w, gpu_w = self.cpu_w, self.gpu_w
        if node.cpu_j > 0 and cpu_idle_window(node, holdings):
            cpu_w = node.cpu_j / t if cpu_w is None else min(cpu_w, node.cpu_j / t)
        held = {i for h in holdings if h.held_s > 0 for i in h.gpus}
        for index, e in node.gpu_j.items():
            if index not in held and e > 0:
                gpu_w = e / t if gpu_w is None else min(gpu_w, e / t)
        return IdleFloor(cpu_w, gpu_w)

    def cpu_source(self, node: NodeEnergy) -> str:
        """Where the CPU idle ``apply`` bills comes from: ``measured`` (a floor seen), ``model`` (the
        package maximum's share), or ``unknown`` (neither: a node whose NodeHardware gives no package
        maximum, before an idle window; all of its package energy is billed as busy)."""
        if self.cpu_w is not None:
            return IDLE_MEASURED
        return IDLE_MODEL if node.cpu_idle_w > 0 else IDLE_UNKNOWN

    def apply(self, node: NodeEnergy) -> NodeEnergy:
        """``node`` with the measured floors in place of the model's idle draws, where seen."""
        return replace(
            node,
            cpu_idle_w=self.cpu_w if self.cpu_w is not None else node.cpu_idle_w,
            gpu_idle_w=self.gpu_w if self.gpu_w is not None else node.gpu_idle_w,
        )


@dataclass(frozen=True)
class Receipt:
    """Energy one Pod was billed (or the node's unallocated part), by device kind, J; and the
    counterfactual of the same work uncapped (``joulie_controller.model.counterfactual``)."""

    gpu_j: float = 0.0
    cpu_busy_j: float = 0.0
    cpu_idle_j: float = 0.0
    platform_j: float = 0.0
    """Memory and the rest of the platform: node meter minus the devices."""
    held_s: float = 0.0
    saved_j: float = 0.0
    """Energy the caps saved (the model's uncapped energy minus the measured one; < 0: they cost)."""
    saved_low_j: float = 0.0
    saved_high_j: float = 0.0
    """The saving's range over the model's uncertainty (compute share and draw, one sd each way)."""
    added_s: float = 0.0
    """Running time the caps added (the measured time minus the model's uncapped time)."""

    @property
    def total_j(self) -> float:
        return self.gpu_j + self.cpu_busy_j + self.cpu_idle_j + self.platform_j

    def __add__(self, other: Receipt) -> Receipt:
        return Receipt(*(a + b for a, b in zip(_values(self), _values(other), strict=True)))


def _values(r: Receipt) -> tuple[float, ...]:
    return (
        r.gpu_j,
        r.cpu_busy_j,
        r.cpu_idle_j,
        r.platform_j,
        r.held_s,
        r.saved_j,
        r.saved_low_j,
        r.saved_high_j,
        r.added_s,
    )


@dataclass(frozen=True)
class Attribution:
    """One node's interval, split: each Pod's receipt and the unallocated part."""

    pods: Mapping[str, Receipt]
    unallocated: Receipt

    @property
    def total_j(self) -> float:
        return sum(r.total_j for r in self.pods.values()) + self.unallocated.total_j


def _split(amount: float, weights: Mapping[str, float], capacity: float) -> tuple[dict[str, float], float]:
    """``amount`` by ``weights`` over ``max(capacity, sum of weights)``; the remainder apart."""
    total = sum(weights.values())
    denom = max(capacity, total)
    if denom <= 0:
        return {}, amount
    parts = {k: amount * w / denom for k, w in weights.items() if w > 0}
    return parts, amount - sum(parts.values())


def _gpu_parts(node: NodeEnergy, holdings: Sequence[Holding]) -> tuple[dict[str, float], float]:
    """Each board's energy to its holders by held time; the idle of its unheld time unallocated."""
    out: dict[str, float] = {}
    unallocated = 0.0
    t = max(node.interval_s, 0.0)
    for index, e in node.gpu_j.items():
        holders = {h.pod: h.held_s for h in holdings if index in h.gpus and h.held_s > 0}
        held = min(t, sum(holders.values()))
        if not holders:
            unallocated += e
            continue
        idle_part = min(max(e, 0.0), node.gpu_idle_w * (t - held) * (node.energy_s / t if t > 0 else 0.0))
        unallocated += idle_part
        parts, rest = _split(e - idle_part, holders, 0.0)
        unallocated += rest
        for pod, j in parts.items():
            out[pod] = out.get(pod, 0.0) + j
    return out, unallocated


def _shares(node: NodeEnergy, holdings: Sequence[Holding]) -> tuple[dict[str, float], dict[str, float], float]:
    """(core-seconds by Pod, platform weight by Pod, the platform's capacity in the same unit)."""
    t = max(node.interval_s, 0.0)
    core_s: dict[str, float] = {}
    gpu_s: dict[str, float] = {}
    for h in holdings:
        core_s[h.pod] = core_s.get(h.pod, 0.0) + h.cpu_cores * h.held_s
        gpu_s[h.pod] = gpu_s.get(h.pod, 0.0) + len(h.gpus) * h.held_s
    cap_core_s = max(node.cores * t, sum(core_s.values()))
    boards = len(node.gpu_j)
    if boards == 0:
        return core_s, core_s, cap_core_s
    cap_gpu_s = max(boards * t, sum(gpu_s.values()))
    platform = (
        {p: 0.5 * (core_s[p] / cap_core_s if cap_core_s > 0 else 0.0) + 0.5 * gpu_s[p] / cap_gpu_s for p in core_s}
        if cap_gpu_s > 0
        else {}
    )
    return core_s, platform, 1.0


def attribute(node: NodeEnergy, holdings: Sequence[Holding]) -> Attribution:
    """Split one node's interval between the Pods that held parts of it (module docstring)."""
    gpu, gpu_unallocated = _gpu_parts(node, holdings)
    core_s, platform_w, platform_capacity = _shares(node, holdings)
    cpu_idle = min(max(node.cpu_j, 0.0), node.cpu_idle_w * max(node.energy_s, 0.0))
    cpu_busy = node.cpu_j - cpu_idle
    idle, idle_unallocated = _split(cpu_idle, core_s, node.cores * node.interval_s)
    used = {h.pod: h.cpu_used_core_s for h in holdings}
    busy_by = core_s if any(u is None for u in used.values()) else {p: u or 0.0 for p, u in used.items()}
    busy, busy_unallocated = _split(cpu_busy, busy_by, 0.0)
    rest_j = node.node_j - sum(node.gpu_j.values()) - node.cpu_j
    platform, platform_unallocated = _split(rest_j, platform_w, platform_capacity)
    held: dict[str, float] = {}
    for h in holdings:
        held[h.pod] = max(held.get(h.pod, 0.0), h.held_s)
    pods = {
        p: Receipt(gpu.get(p, 0.0), busy.get(p, 0.0), idle.get(p, 0.0), platform.get(p, 0.0), held[p]) for p in held
    }
    return Attribution(pods, Receipt(gpu_unallocated, busy_unallocated, idle_unallocated, platform_unallocated))


@dataclass
class Ledger:
    """Receipts summed over intervals: a running total for a running Pod, the receipt of a finished one."""

    pods: dict[str, Receipt] = field(default_factory=dict)
    unallocated: dict[str, Receipt] = field(default_factory=dict)
    """By node."""
    metered_j: dict[str, float] = field(default_factory=dict)
    """The node meters over the same intervals, by node (what the receipts must add up to)."""

    def add(
        self,
        node: str,
        energy: NodeEnergy,
        attribution: Attribution,
        counterfactuals: Mapping[str, Receipt] | None = None,
    ) -> None:
        """One node's interval; ``counterfactuals`` (by Pod) carry the saving fields to add."""
        cf = counterfactuals or {}
        for pod, r in attribution.pods.items():
            extra = cf.get(pod)
            if extra is not None:
                r = replace(
                    r,
                    saved_j=extra.saved_j,
                    saved_low_j=extra.saved_low_j,
                    saved_high_j=extra.saved_high_j,
                    added_s=extra.added_s,
                )
            self.pods[pod] = self.pods.get(pod, Receipt()) + r
        self.unallocated[node] = self.unallocated.get(node, Receipt()) + attribution.unallocated
        self.metered_j[node] = self.metered_j.get(node, 0.0) + energy.node_j

    def closure_error(self) -> float:
        """|sum of receipts + unallocated - node meters| over the node meters (0: the books close)."""
        metered = sum(self.metered_j.values())
        billed = sum(r.total_j for r in self.pods.values()) + sum(r.total_j for r in self.unallocated.values())
        return abs(billed - metered) / metered if metered > 0 else 0.0


def annotation(r: Receipt, node: str, finished: bool, counterfactual_method: str, updated: str) -> EnergyReceipt:
    """The receipt as the Pod's ``joulie.io/energy-receipt`` annotation carries it (``joulie_api.receipt``)."""
    return EnergyReceipt(
        node,
        "finished" if finished else "running",
        r.held_s,
        {"gpu": r.gpu_j, "cpuBusy": r.cpu_busy_j, "cpuIdle": r.cpu_idle_j, "platform": r.platform_j},
        r.saved_j,
        (r.saved_low_j, r.saved_high_j),
        r.added_s,
        f"{METHOD}; counterfactual:{counterfactual_method}",
        updated,
    )


def receipt_summary(r: Receipt, node: str) -> str:
    """One line for the finished Pod's Event: what it used, by device kind, and what the caps saved it."""
    kwh = 3.6e6
    return (
        f"used {r.total_j / kwh:.3f} kWh on node {node} over {r.held_s / 3600:.2f} h (GPU {r.gpu_j / kwh:.3f}, "
        f"CPU busy {r.cpu_busy_j / kwh:.3f}, CPU idle {r.cpu_idle_j / kwh:.3f}, platform {r.platform_j / kwh:.3f} "
        f"kWh); the caps saved {r.saved_j / kwh:.3f} kWh [{r.saved_low_j / kwh:.3f}, {r.saved_high_j / kwh:.3f}] "
        f"and added {r.added_s:.0f} s (method {METHOD}; the receipt is the Pod's joulie.io/energy-receipt annotation)"
    )
