"""Whether a node's measured power is one its own hardware could have drawn. Pure.

Measured power reaches Prometheus over OTLP, a path that any Pod able to reach the receiver could
push to (issue 36: a forged 50 kW reading for one node sent three honest nodes to the budget's floor
within 6 s). The controller cannot tell a forged series from a true one by its labels, but it can
refute a reading that contradicts what it knows independently of it. Such a reading is dropped: the
node is neutral for the tick, as with no data (it adds nothing to the budget's forecast, so it never
drives the shed), and the twin's status says why (source ``prometheus-implausible``).

Two checks, each with its margin stated here and in docs/security.md:

- **Ceiling.** Host power above ``CEILING_TDP_FACTOR`` x the node's component TDP (its NodeHardware's
  CPU package max cap x sockets plus GPU max cap x count) plus ``PLATFORM_ALLOWANCE_W``. The TDP
  leaves out DRAM, fans, NICs, disks and PSU losses; the heaviest platform in the hardware catalogue
  (8-GPU boards) draws 600 W besides its packages and boards, so the margin is wide enough that no
  honest node reaches it, and a counter read without ``rate()`` (joules as watts) is caught too.
- **Consistency with the node's own component sum**, when its agent exports both the host series
  and the component series (``hw.host.*`` and ``hw.*``). A host cannot draw less than its parts:
  below the component sum by more than ``COMPONENT_SKEW_SHARE`` of it (at least
  ``COMPONENT_SKEW_MIN_W``) is refuted; the share covers a BMC and RAPL sampled at different moments
  of a step in load. Above the component sum by more than the larger of ``PLATFORM_ALLOWANCE_W`` and
  ``PLATFORM_TDP_SHARE`` of the node's TDP is refuted too (what the components leave out is the
  platform, never several times the node).

What it does not stop: a forged reading inside these bounds (up to the ceiling when the components
are forged with it, or within the platform margin of honest components) still counts. The bounds
limit what a forger can move, they do not authenticate; the authenticated OTLP path does that.
An unknown TDP (no NodeHardware cap range) skips the ceiling; no component series skips the
consistency check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

CEILING_TDP_FACTOR = 2.0
"""Host power above this many times the node's component TDP (plus the platform allowance) is refuted."""
PLATFORM_ALLOWANCE_W = 1000.0
"""Watts a node may draw besides its CPU packages and GPU boards (DRAM, fans, NICs, disks, PSU loss)."""
PLATFORM_TDP_SHARE = 0.5
"""Host above components by more than this share of the TDP (when larger than the allowance) is refuted."""
COMPONENT_SKEW_SHARE = 0.25
"""Host below components by more than this share of them is refuted (series sampled at different moments)."""
COMPONENT_SKEW_MIN_W = 100.0
"""The least shortfall below the components that is refuted (small nodes, idle noise)."""

KIND_CEILING = "above-ceiling"
KIND_BELOW_COMPONENTS = "below-components"
KIND_ABOVE_COMPONENTS = "above-components"


@dataclass(frozen=True)
class Implausible:
    kind: str
    """``above-ceiling``, ``below-components`` or ``above-components``."""
    reason: str
    """One line naming the reading, the bound and where the bound comes from."""


def ceiling_w(node_tdp_w: float) -> float | None:
    """The most host power the node's hardware can draw by this rule; None when the TDP is unknown."""
    if not math.isfinite(node_tdp_w) or node_tdp_w <= 0:
        return None
    return CEILING_TDP_FACTOR * node_tdp_w + PLATFORM_ALLOWANCE_W


def check(host_w: float, components_w: float | None, node_tdp_w: float) -> Implausible | None:
    """The refutation of a finite, non-negative host reading, or None when nothing refutes it."""
    ceiling = ceiling_w(node_tdp_w)
    if ceiling is not None and host_w > ceiling:
        return Implausible(
            KIND_CEILING,
            f"{host_w:.0f} W is above what its hardware can draw: {ceiling:.0f} W "
            f"({CEILING_TDP_FACTOR:g} x nodeTdpW {node_tdp_w:.0f} + "
            f"{PLATFORM_ALLOWANCE_W:.0f} W platform; a joules counter "
            f"queried without rate()?)",
        )
    if components_w is None or not math.isfinite(components_w) or components_w < 0:
        return None
    shortfall = max(COMPONENT_SKEW_MIN_W, COMPONENT_SKEW_SHARE * components_w)
    if host_w < components_w - shortfall:
        return Implausible(
            KIND_BELOW_COMPONENTS,
            f"{host_w:.0f} W is below the sum of its own components "
            f"{components_w:.0f} W by more than {shortfall:.0f} W",
        )
    platform = max(PLATFORM_ALLOWANCE_W, PLATFORM_TDP_SHARE * node_tdp_w if math.isfinite(node_tdp_w) else 0.0)
    if host_w > components_w + platform:
        return Implausible(
            KIND_ABOVE_COMPONENTS,
            f"{host_w:.0f} W is above the sum of its own components "
            f"{components_w:.0f} W by more than {platform:.0f} W of platform",
        )
    return None
