"""The controller's own model of performance and power versus a power cap. Pure: no I/O.

On a real cluster the controller sees only Pod metadata and telemetry, so this model uses what
those give: each Pod's workload kind (label or annotation ``joulie.io/workload-kind``), its
requests, the device's cap range from NodeHardware and the node's measured power. Its
parameters are published measurements, not the emulator's internals (docs/work-aware-caps.md):

- work whose compute-bound share is ``c`` runs at ``1 / (c / r + 1 - c)`` of its speed at clock
  ratio ``r`` (the roofline split; compute shares per kind from the fits to McDonald et al. 2022
  and Samsi et al. 2023 in docs/physics-calibration.md);
- a device's clock-following power falls as ``r**k`` (GPU ``k = 2.5`` with 15 % of the dynamic
  power not following the clock, from the same fits; CPU package ``k = 1.5``, ``f * V(f)**2`` over
  a Xeon Scalable V/f range);
- a cap above the work's natural draw binds nothing.

Unknown kinds are treated as compute-bound (``c = 1``): the safe guess, never capped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class KindPrior:
    device: str
    """``gpu`` or ``cpu``: the device whose clock sets the kind's speed."""
    compute_share: float
    """c: the share of the work's time at full clock that scales with the clock."""
    natural_draw: float
    """u: the work's draw above idle as a share of the device's dynamic range (max - idle)."""


KIND_PRIORS: Final[dict[str, KindPrior]] = {
    "gpu-training": KindPrior("gpu", 0.52, 0.85),
    "gpu-inference": KindPrior("gpu", 0.26, 0.70),
    "cpu-compute": KindPrior("cpu", 0.95, 0.90),
    "cpu-memory": KindPrior("cpu", 0.35, 0.70),
}
COMPUTE_BOUND_SHARE: Final = 0.9
"""Work at least this compute-bound is never capped: it loses nearly as much speed as a cap removes
power, so any saving is within the model's error (cpu-compute, c = 0.95, is such work)."""
MIN_SAVING: Final = 0.005
"""A cap predicted to save less than 0.5 % energy per work is not worth its slowdown risk."""
COMPUTE_BOUND: Final = KindPrior("any", 1.0, 1.0)
"""What the controller assumes for a Pod without a known kind."""
HOST_FEED: Final = KindPrior("cpu", 0.33, 0.30)
"""The CPU side of GPU work (data loading, kernel launches): mostly waiting on the GPU."""


@dataclass(frozen=True)
class DeviceModel:
    idle_frac: float
    """Idle draw as a share of the device's maximum (the model never caps below it)."""
    clock_power_exponent: float
    fixed_dynamic_frac: float
    """Share of the dynamic power that does not follow the clock (HBM, I/O)."""
    min_clock_ratio: float
    turbo_headroom: float = 0.0
    """CPU only: how much faster than the all-core clock one busy core runs (partial load turbos higher)."""


GPU_MODEL: Final = DeviceModel(idle_frac=0.125, clock_power_exponent=2.5, fixed_dynamic_frac=0.15, min_clock_ratio=0.2)
"""Idle 0.125 of max: H100 NVL 58.6 of 400 W and H100 SXM 70 of 700 W (NVIDIA datasheets), rounded."""
CPU_MODEL: Final = DeviceModel(idle_frac=0.25, clock_power_exponent=1.5, fixed_dynamic_frac=0.0, min_clock_ratio=0.3,
                               turbo_headroom=0.26)
"""Idle 0.25 of PL1 (Xeon 8260: 40 of 165 W); one-core turbo 3.9 GHz over 3.1 GHz all-core (Intel ARK)."""


@dataclass(frozen=True)
class Work:
    """One Pod's use of a device group (a node's GPUs or its CPU packages)."""

    name: str
    kind: str
    prior: KindPrior
    share: float
    """How much of the device group it occupies: boards for a GPU group, cores over node cores for CPUs."""
    tau: float | None = None
    """The slowdown this work may be given (0.1 = 10 % longer); None: the group's (``choose_cap``'s ``tau``)."""


@dataclass(frozen=True)
class CapChoice:
    pct_of_max: float
    """100 means uncapped."""
    predicted_slowdown: float
    """Of the most affected work: 0.02 = 2 % longer."""
    predicted_saving: float
    """Node energy per unit of work saved, as a share (0.05 = 5 % less)."""
    driver: str
    """Which work bound the choice (name and kind), or why nothing was capped."""
    capped: bool = False
    """False: the device stays at its reference limit (default or maximum)."""
    lock_pct: float | None = None
    """GPU only (``lever.choose_gpu_lever``): the SM clock lock, % of the board's maximum clock; None: no lock."""
    slowdowns: tuple[float, ...] = ()
    """Each work's predicted slowdown, in ``works`` order (``lever.choose_gpu_lever`` only)."""

    @property
    def lever(self) -> str:
        """none, cap, lock or cap+lock."""
        if self.lock_pct is not None:
            return "cap+lock" if self.capped else "lock"
        return "cap" if self.capped else "none"


def throughput(clock_ratio: float, compute_share: float) -> float:
    r = min(max(clock_ratio, 1e-6), 1.0)
    c = min(max(compute_share, 0.0), 1.0)
    return 1.0 / (c / r + 1.0 - c)


def slowdown(clock_ratio: float, compute_share: float) -> float:
    return 1.0 / throughput(clock_ratio, compute_share) - 1.0


def gpu_board(limit_w: float, max_w: float, natural_draw: float, m: DeviceModel = GPU_MODEL) -> tuple[float, float]:
    """(power W, clock ratio) of a board of maximum ``max_w`` running work of draw ``natural_draw`` under ``limit_w``."""
    idle = m.idle_frac * max_w
    natural = idle + (max_w - idle) * min(max(natural_draw, 0.0), 1.0)
    if limit_w >= natural:
        return natural, 1.0
    dyn = natural - idle
    fixed = dyn * m.fixed_dynamic_frac
    share = (limit_w - idle - fixed) / (dyn - fixed) if dyn > fixed else 1.0
    r = share ** (1.0 / m.clock_power_exponent) if share > 0 else 0.0
    r = min(1.0, max(m.min_clock_ratio, r))
    return max(limit_w, idle + fixed + (dyn - fixed) * r**m.clock_power_exponent), r


def cpu_package(limit_w: float, max_w: float, busy: float, m: DeviceModel = CPU_MODEL) -> tuple[float, float]:
    """(power W, busy-core clock ratio against the uncapped one) of a package of maximum ``max_w``
    whose cores are ``busy`` (0..1, weighted by each work's draw) under ``limit_w``."""
    idle = m.idle_frac * max_w
    b = min(max(busy, 0.0), 1.0)
    turbo = 1.0 + m.turbo_headroom * (1.0 - b)
    natural = min(max_w, idle + b * (max_w - idle) * turbo**m.clock_power_exponent) if b > 0 else idle
    if limit_w >= natural or natural <= idle:
        return natural, 1.0
    share = (limit_w - idle) / (natural - idle)
    r = share ** (1.0 / m.clock_power_exponent) if share > 0 else 0.0
    r = min(1.0, max(m.min_clock_ratio, r))
    return max(limit_w, idle + (natural - idle) * r**m.clock_power_exponent), r


@dataclass(frozen=True)
class Outcome:
    """What the model predicts for a device group under one limit."""

    power_w: float
    """The power of the devices the work occupies (GPU boards without work are left out: no cap
    changes their idle draw; CPU packages are shared, so all of them)."""
    speeds: tuple[float, ...]
    """Each work's speed relative to no limit at all, in ``works`` order."""

    def rate(self, works: Sequence[Work]) -> float:
        """Work rate, share-weighted, relative to no limit."""
        total = sum(w.share for w in works)
        return sum(v * w.share for v, w in zip(self.speeds, works, strict=True)) / total if total > 0 else 1.0


def evaluate(device: str, works: Sequence[Work], max_w: float, limit_w: float, devices: int = 1) -> Outcome:
    """The device group (``devices`` GPUs or CPU packages of maximum ``max_w``) running ``works`` under ``limit_w`` each."""
    if device == "gpu":
        power = 0.0
        speeds = []
        for w in works:
            p, r = gpu_board(limit_w, max_w, w.prior.natural_draw)
            power += p * w.share
            speeds.append(throughput(r, w.prior.compute_share))
        return Outcome(power, tuple(speeds))
    busy = sum(w.share * w.prior.natural_draw for w in works)
    p, r = cpu_package(limit_w, max_w, busy)
    return Outcome(p * devices, tuple(throughput(r, w.prior.compute_share) for w in works))


def over_budget(works: Sequence[Work], ref: Outcome, capped: Outcome, tau: float) -> bool:
    """Whether any work's slowdown under ``capped`` exceeds its own budget (``Work.tau``, else ``tau``)."""
    for w, a, b in zip(works, ref.speeds, capped.speeds, strict=True):
        budget = w.tau if w.tau is not None else tau
        if a / max(b, 1e-9) - 1.0 > budget + 1e-12:
            return True
    return False


def worst_slowdown(works: Sequence[Work], ref: Outcome, capped: Outcome) -> tuple[float, str]:
    """The largest slowdown of ``capped`` against ``ref`` over the works, and which work it is."""
    worst, driver = 0.0, ""
    for w, a, b in zip(works, ref.speeds, capped.speeds, strict=True):
        sd = a / max(b, 1e-9) - 1.0
        if sd > worst or not driver:
            worst, driver = sd, f"{w.name} ({w.kind or 'no kind'})"
    return worst, driver


def choose_cap(
    device: str,
    works: Sequence[Work],
    max_w: float,
    min_w: float,
    other_w: float,
    tau: float,
    devices: int = 1,
    ref_w: float | None = None,
    step_pct: float = 2.5,
) -> CapChoice:
    """The cap (% of ``max_w``) with the lowest node energy per unit of work whose predicted slowdown,
    against the reference limit ``ref_w`` (the device's default limit; ``max_w`` when None), stays
    within each work's own budget (``Work.tau``, else ``tau``) for every work on the device group. Never above the reference: "uncapped" means
    the device runs as the operator set it up.

    ``other_w`` is what the rest of the node draws meanwhile (it is paid for longer when work slows);
    energy per work = (other_w + group power) / work rate."""
    ref = min(max_w, ref_w) if ref_w is not None and ref_w > 0 else max_w
    ref_pct = round(ref / max_w * 100.0, 1) if max_w > 0 else 100.0
    if max_w <= 0 or not works:
        return CapChoice(ref_pct, 0.0, 0.0, "no work on the device" if max_w > 0 else "no cap range")
    for w in works:
        if w.prior.compute_share >= COMPUTE_BOUND_SHARE:
            return CapChoice(ref_pct, 0.0, 0.0, f"{w.name} ({w.kind or 'no kind'}) is not capped")
    base_o = evaluate(device, works, max_w, ref, devices)

    def energy(o: Outcome) -> float:
        return (other_w + o.power_w) / max(o.rate(works), 1e-9)

    base = energy(base_o)
    best_pct, best_energy, best_sd, best_driver = ref_pct, base, 0.0, "no cap saves energy within the slowdown budget"
    lowest = max(min_w, 0.0) / max_w * 100.0
    pct = math.floor((ref_pct - 1e-9) / step_pct) * step_pct
    while pct >= lowest - 1e-9:
        o = evaluate(device, works, max_w, max_w * pct / 100.0, devices)
        sd, driver = worst_slowdown(works, base_o, o)
        if over_budget(works, base_o, o, tau):
            break  # slowdown only grows as the cap falls
        e = energy(o)
        if e < best_energy * (1.0 - 1e-4):
            best_pct, best_energy, best_sd, best_driver = pct, e, sd, driver
        pct -= step_pct
    saving = 1.0 - best_energy / base if base > 0 and math.isfinite(best_energy) else 0.0
    if best_pct < ref_pct and saving < MIN_SAVING:
        return CapChoice(ref_pct, 0.0, 0.0, f"a cap would save under {MIN_SAVING * 100:g} % ({best_driver})")
    return CapChoice(round(best_pct, 1), best_sd, saving, best_driver, capped=best_pct < ref_pct)
