"""What a Pod's work would have cost uncapped: the counterfactual half of its receipt. Pure: no I/O.

The measured receipt is the anchor; the controller's own model (``capmodel``) supplies only ratios,
so its errors scale a measured number instead of replacing it. For one interval of one Pod, with the
limit in force on the device its work is bound by (``Conditions``) and the reference limit (the
device's default: "uncapped" means as the operator set it up):

- **speed**: ``s = throughput(r_cap, c) / throughput(r_ref, c)`` (``capmodel.gpu_board`` /
  ``cpu_package`` give the clock ratios ``r`` at the work's draw ``u``; a GPU under an SM clock lock
  runs at the lower of the lock and the clock its limit leaves, ``lever.gpu_board_locked``, as the
  work-aware policy plans it); the uncapped run takes
  ``held_s * s``, so the time the cap added is ``held_s * (1 - s)``;
- **the bound device**: a GPU Pod's boards draw ``P_ref / P_cap`` times more uncapped (whole board
  power: it holds them), a CPU Pod's busy part ``(P_ref - idle) / (P_cap - idle)`` more; both for
  ``s`` as long;
- **everything else** (CPU idle, platform, the other device's busy part) draws the same power for
  ``s`` as long: it is billed by time.

Saved = uncapped - measured (negative where a cap cost energy). The uncertainty is the model's: the
Pod's compute share and draw (the kind's prior, or the controller's estimate, ``jobestimate``) one sd
each way; the four corners give ``saved_low_j``/``saved_high_j``. What the range leaves out: the
model's form itself (the roofline split and the clock-power exponent), checked against the emulator
in docs/energy-receipts.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from joulie_controller.model.capmodel import CPU_MODEL, HOST_FEED, KIND_PRIORS, cpu_package, gpu_board, throughput
from joulie_controller.model.jobestimate import PRIOR_C_SD, PRIOR_U_SD
from joulie_controller.model.lever import gpu_board_locked
from joulie_controller.model.receipt import Receipt

METHOD: Final = "capmodel-ratio"
"""The counterfactual's method, as the receipt names it (docs/energy-receipts.md)."""


@dataclass(frozen=True)
class Conditions:
    """The device a Pod's work is bound by, during one interval."""

    device: str
    """``gpu`` or ``cpu``."""
    limit_w: float
    """The limit in force (per board, or per package)."""
    ref_w: float
    """The reference limit: the device's default (per board, or per package)."""
    max_w: float
    compute_share: float
    draw: float
    """The work's draw above idle as a share of the device's dynamic range (GPU); the package's busy
    share weighted by draw (CPU)."""
    compute_share_sd: float = PRIOR_C_SD
    draw_sd: float = PRIOR_U_SD
    lock_ratio: float = 1.0
    """GPU only: the SM clock lock in force as a share of the board's highest clock (1: no lock)."""


def conditions_for_kind(
    kind: str,
    device: str,
    limit_w: float,
    ref_w: float,
    max_w: float,
    busy: float | None = None,
    lock_ratio: float = 1.0,
) -> Conditions:
    """Conditions from the Pod's workload kind prior (unknown kinds: compute-bound, full draw)."""
    prior = KIND_PRIORS.get(kind)
    c, u = (prior.compute_share, prior.natural_draw) if prior is not None else (1.0, 1.0)
    return Conditions(device, limit_w, ref_w, max_w, c, busy if busy is not None else u, lock_ratio=lock_ratio)


def package_busy(kinds_and_core_shares: Iterable[tuple[str, float]]) -> float:
    """A package's busy share as the model sees it: each Pod's share of the cores times its kind's draw
    (``capmodel.evaluate``'s rule; a GPU kind's CPU side is ``HOST_FEED``, an unknown kind full draw)."""
    total = 0.0
    for kind, share in kinds_and_core_shares:
        prior = KIND_PRIORS.get(kind)
        draw = 1.0 if prior is None else (prior.natural_draw if prior.device == "cpu" else HOST_FEED.natural_draw)
        total += share * draw
    return min(max(total, 0.0), 1.0)


def _ratios(cond: Conditions, c: float, u: float) -> tuple[float, float]:
    """(speed capped over uncapped, the bound device's power uncapped over capped)."""
    if cond.device == "gpu":
        p_cap, r_cap = gpu_board_locked(cond.limit_w, cond.max_w, u, cond.lock_ratio)
        p_ref, r_ref = gpu_board(cond.ref_w, cond.max_w, u)
        power = p_ref / p_cap if p_cap > 0 else 1.0
    else:
        idle = CPU_MODEL.idle_frac * cond.max_w
        p_cap, r_cap = cpu_package(cond.limit_w, cond.max_w, u)
        p_ref, r_ref = cpu_package(cond.ref_w, cond.max_w, u)
        power = (p_ref - idle) / (p_cap - idle) if p_cap - idle > 1e-9 else 1.0
    speed = throughput(r_cap, c) / max(throughput(r_ref, c), 1e-9)
    return min(speed, 1.0), power


def _saved(measured: Receipt, cond: Conditions, c: float, u: float) -> tuple[float, float]:
    speed, power = _ratios(cond, min(max(c, 0.0), 1.0), min(max(u, 0.0), 1.0))
    bound = measured.gpu_j if cond.device == "gpu" else measured.cpu_busy_j
    rest = measured.total_j - bound
    uncapped = bound * power * speed + rest * speed
    return uncapped - measured.total_j, measured.held_s * (1.0 - speed)


def counterfactual(measured: Receipt, cond: Conditions) -> Receipt:
    """The saving fields of ``measured`` (one interval of one Pod) under ``cond`` (module docstring)."""
    locked = cond.device == "gpu" and cond.lock_ratio < 1.0
    if (cond.limit_w >= cond.ref_w and not locked) or cond.max_w <= 0:
        return Receipt()
    saved, added = _saved(measured, cond, cond.compute_share, cond.draw)
    corners = [
        _saved(measured, cond, cond.compute_share + dc, cond.draw + du)[0]
        for dc in (-cond.compute_share_sd, cond.compute_share_sd)
        for du in (-cond.draw_sd, cond.draw_sd)
    ]
    return Receipt(
        saved_j=saved, saved_low_j=min([saved, *corners]), saved_high_j=max([saved, *corners]), added_s=added
    )
