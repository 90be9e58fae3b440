"""cpufreq policies: parsing and the DVFS frequency plan. Pure: no I/O."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Policy:
    """One cpufreq policy directory (`policyN`); frequencies in kHz."""

    policy_id: str  # e.g. policy0
    index: int
    driver: str = ""
    cpuinfo_min_khz: int | None = None
    cpuinfo_max_khz: int | None = None
    base_khz: int | None = None
    scaling_cur_khz: int | None = None


@dataclass(frozen=True)
class Landmarks:
    min_mhz: float | None
    nominal_mhz: float | None
    max_boost_mhz: float | None


def landmarks(policies: list[Policy]) -> Landmarks | None:
    """Frequency landmarks of the node from the first policy that states them."""
    for p in policies:
        if p.cpuinfo_max_khz:
            return Landmarks(
                min_mhz=p.cpuinfo_min_khz / 1000 if p.cpuinfo_min_khz else None,
                nominal_mhz=p.base_khz / 1000 if p.base_khz else None,
                max_boost_mhz=p.cpuinfo_max_khz / 1000,
            )
    return None


def controllable(policies: list[Policy]) -> list[Policy]:
    """Policies the DVFS fallback can drive: their cpuinfo range is known."""
    return [p for p in policies if p.cpuinfo_min_khz and p.cpuinfo_max_khz]


def throttle_plan(policies: list[Policy], throttle_pct: float, floor_khz: int) -> dict[str, int]:
    """scaling_max_freq per policy for a throttle percentage.

    The first ceil(N·pct/100) policies (by index) are held at the floor (clamped into their
    cpuinfo range), the rest at cpuinfo_max. Policies are counted once each: the original listed
    every policy twice through cpuN/cpufreq links (defect D6).
    """
    ctl = sorted(controllable(policies), key=lambda p: p.index)
    pct = min(100.0, max(0.0, throttle_pct))
    n_low = math.ceil(len(ctl) * pct / 100 - 1e-9)
    plan: dict[str, int] = {}
    for i, p in enumerate(ctl):
        assert p.cpuinfo_min_khz is not None and p.cpuinfo_max_khz is not None
        low = max(p.cpuinfo_min_khz, min(p.cpuinfo_max_khz, floor_khz))
        plan[p.policy_id] = low if i < n_low else p.cpuinfo_max_khz
    return plan
