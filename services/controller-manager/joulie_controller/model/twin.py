"""The digital twin model: pure functions from hardware, caps and measured power to twin scores.

No I/O here. Formulas follow the Go original's `pkg/controller/twin` (reference §4); the places
where we deliberately differ are listed in the service README ("Differences from the original").
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Final, Literal

SchedulableClass = Literal["eco", "performance", "draining", "unknown"]

# Cooling: the ambient multiplier reaches its cap of 2.0 at 45 °C (1 - (45-20)*0.02 = 0.5).
AMBIENT_REFERENCE_C: Final = 20.0
AMBIENT_SLOPE_PER_C: Final = 0.02
AMBIENT_MIN_DIVISOR: Final = 0.5
# PSU stress is relative to a 50 kW reference rack/PDU.
PSU_REFERENCE_W: Final = 50_000.0
PUE_MIN: Final = 1.05
PUE_SPAN: Final = 0.35
TREND_WINDOW: Final = timedelta(minutes=5)
TREND_MIN_SPAN_MIN: Final = 0.1
# A node whose power we do not know (no sample, or unknown hardware) must neither attract nor repel
# pods: it gets the midpoint of each score's range, not the "fully free, fully cool" 100/0.
NEUTRAL_HEADROOM: Final = 50.0
NEUTRAL_COOLING_STRESS: Final = 50.0


@dataclass(frozen=True)
class HardwareBudget:
    """What the twin needs to know about a node's power hardware. Watts; 0 means unknown. The TDPs
    are computed once per budget (a view keeps its budget across ticks)."""

    cpu_max_w_per_socket: float = 0.0
    cpu_sockets: int = 0
    gpu_max_w_per_gpu: float = 0.0
    gpu_count: int = 0

    @cached_property
    def cpu_tdp_w(self) -> float:
        sockets = self.cpu_sockets
        # A CR with a cap range but no socket count: one socket is a safe under-estimate.
        if sockets <= 0 and self.cpu_max_w_per_socket > 0:
            sockets = 1
        return max(0.0, self.cpu_max_w_per_socket) * max(0, sockets)

    @cached_property
    def gpu_tdp_w(self) -> float:
        return max(0.0, self.gpu_max_w_per_gpu) * max(0, self.gpu_count)

    @cached_property
    def node_tdp_w(self) -> float:
        return self.cpu_tdp_w + self.gpu_tdp_w

    def capped_w(self, cpu_pct: float, gpu_pct: float) -> float:
        return self.cpu_tdp_w * effective_pct(cpu_pct) / 100 + self.gpu_tdp_w * effective_pct(gpu_pct) / 100


@dataclass(frozen=True)
class TwinInput:
    hardware: HardwareBudget
    profile: str
    draining: bool = False
    cpu_cap_pct: float = 0.0
    """CPU cap in effect, % of max; 0 or less means uncapped (100)."""
    gpu_cap_pct: float = 0.0
    measured_node_power_w: float | None = None
    """None when no valid sample exists (no data, NaN, negative)."""
    power_trend_w_per_min: float = 0.0
    ambient_c: float | None = None
    """Ambient temperature that applies to this node (inlet, zone or outdoor), °C; None if unknown."""
    rack_power_w: float = 0.0
    cluster_power_w: float = 0.0


@dataclass(frozen=True)
class TwinOutput:
    schedulable_class: SchedulableClass
    cpu_pct: float
    gpu_pct: float
    cpu_tdp_w: float
    gpu_tdp_w: float
    node_tdp_w: float
    cpu_capped_w: float
    gpu_capped_w: float
    node_capped_w: float
    headroom_score: float
    cooling_stress_score: float
    psu_stress_score: float
    estimated_pue: float


def effective_pct(pct: float) -> float:
    """A cap of 0 or less (unset) means uncapped; above 100 is clamped."""
    if not math.isfinite(pct) or pct <= 0:
        return 100.0
    return min(pct, 100.0)


def clamp(x: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, x))


def schedulable_class(profile: str, draining: bool) -> SchedulableClass:
    if draining:
        return "draining"
    if profile == "eco":
        return "eco"
    if profile == "performance":
        return "performance"
    return "unknown"


def ambient_multiplier(ambient_c: float | None) -> float:
    """Cooling gets harder as the air gets warmer: 1.0 at 20 °C, 2.0 (cap) from 45 °C; unknown = 1.

    Unknown is None (the original used 0 °C for "unknown", which made a frosty night look unmeasured).
    """
    if ambient_c is None or not math.isfinite(ambient_c):
        return 1.0
    return 1.0 / max(AMBIENT_MIN_DIVISOR, 1.0 - (ambient_c - AMBIENT_REFERENCE_C) * AMBIENT_SLOPE_PER_C)


def headroom_score(node_capped_w: float, measured_w: float | None) -> float:
    """Share of the capped budget still free, ≤100; negative when the node draws more than its cap."""
    if node_capped_w <= 0 or measured_w is None:
        return NEUTRAL_HEADROOM
    return min(100.0, (node_capped_w - measured_w) / node_capped_w * 100.0)


def cooling_stress_score(node_tdp_w: float, measured_w: float | None, ambient_c: float | None) -> float:
    """Measured power over UNCAPPED TDP, scaled by the ambient multiplier, 0..100."""
    if node_tdp_w <= 0 or measured_w is None:
        return NEUTRAL_COOLING_STRESS
    return clamp(measured_w / node_tdp_w * ambient_multiplier(ambient_c) * 100.0, 0.0, 100.0)


def psu_stress_score(rack_power_w: float, cluster_power_w: float) -> float:
    """Rack power (or cluster power when the node has no rack) against a 50 kW reference, 0..100."""
    power = rack_power_w if rack_power_w > 0 else cluster_power_w
    if not math.isfinite(power) or power <= 0:
        return 0.0
    return clamp(power / PSU_REFERENCE_W * 100.0, 0.0, 100.0)


def estimated_pue(cooling_stress: float) -> float:
    return PUE_MIN + clamp(cooling_stress, 0.0, 100.0) / 100.0 * PUE_SPAN


def compute(inp: TwinInput) -> TwinOutput:
    hw = inp.hardware
    cpu_pct = effective_pct(inp.cpu_cap_pct)
    gpu_pct = effective_pct(inp.gpu_cap_pct)
    cpu_capped = hw.cpu_tdp_w * cpu_pct / 100.0
    gpu_capped = hw.gpu_tdp_w * gpu_pct / 100.0
    node_capped = cpu_capped + gpu_capped
    headroom, cooling, psu, pue = _scores(inp, node_capped)
    return TwinOutput(
        schedulable_class=schedulable_class(inp.profile, inp.draining),
        cpu_pct=cpu_pct,
        gpu_pct=gpu_pct,
        cpu_tdp_w=hw.cpu_tdp_w,
        gpu_tdp_w=hw.gpu_tdp_w,
        node_tdp_w=hw.node_tdp_w,
        cpu_capped_w=cpu_capped,
        gpu_capped_w=gpu_capped,
        node_capped_w=node_capped,
        headroom_score=headroom,
        cooling_stress_score=cooling,
        psu_stress_score=psu,
        estimated_pue=pue,
    )


def scores(inp: TwinInput) -> tuple[float, float, float, float]:
    """``compute(inp)``'s headroom, cooling stress, PSU stress and PUE: the outputs that move with the
    readings. With readings moving they are all a tick needs of most nodes (the rest follows the
    caps and the hardware), and building the whole output for each was a twentieth of a tick at
    10 000 Nodes."""
    hw = inp.hardware
    return _scores(inp, hw.cpu_tdp_w * effective_pct(inp.cpu_cap_pct) / 100.0
                   + hw.gpu_tdp_w * effective_pct(inp.gpu_cap_pct) / 100.0)


def _scores(inp: TwinInput, node_capped_w: float) -> tuple[float, float, float, float]:
    measured = inp.measured_node_power_w
    if measured is not None and (not math.isfinite(measured) or measured < 0):
        measured = None
    cooling = cooling_stress_score(inp.hardware.node_tdp_w, measured, inp.ambient_c)
    return (headroom_score(node_capped_w, measured), cooling,
            psu_stress_score(inp.rack_power_w, inp.cluster_power_w), estimated_pue(cooling))


@dataclass
class PowerTrend:
    """Measured power samples of one node over the last 5 minutes; the slope in W/min."""

    window: timedelta = TREND_WINDOW
    samples: deque[tuple[datetime, float]] = field(default_factory=deque)

    def add(self, at: datetime, power_w: float) -> float:
        if self.samples and at <= self.samples[-1][0]:
            # Same tick seen twice (or a clock step back): keep the newest value, never reorder.
            self.samples.pop()
        self.samples.append((at, power_w))
        cutoff = at - self.window
        while self.samples and self.samples[0][0] < cutoff:
            self.samples.popleft()
        return self.slope_w_per_min()

    def span_s(self) -> float:
        """How long the samples behind the slope span."""
        return (self.samples[-1][0] - self.samples[0][0]).total_seconds() if len(self.samples) >= 2 else 0.0

    def slope_w_per_min(self) -> float:
        if len(self.samples) < 2:
            return 0.0
        (t0, p0), (t1, p1) = self.samples[0], self.samples[-1]
        minutes = (t1 - t0).total_seconds() / 60.0
        if minutes < TREND_MIN_SPAN_MIN:
            return 0.0
        return (p1 - p0) / minutes
