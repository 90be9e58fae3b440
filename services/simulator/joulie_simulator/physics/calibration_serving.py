"""LLM serving under power caps and SM clock locks: the published points the serving phases
(``physics.gpu.board_operating_point``, ``joulie_workload.kinds``) are checked against, what the
model gives for each, and the model's answer for a vendor power profile. The data behind
docs/physics-calibration.md ("Serving: decode and prefill under caps and clock locks"). Pure.

None of these points set a parameter: the board shape comes from the training sweeps
(``calibration``), the phases' c and u from ``joulie_workload.kinds``. Each function returns the
model's side; the tests compare it with the measurement and its stated tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

from joulie_hwprofiles.schema import GpuPhysics, Profile
from joulie_simulator.physics.calibration import A100_BOARD, H200_BOARD, RTX3090_BOARD, CalBoard, util_for_draw
from joulie_simulator.physics.curve import kind_phases
from joulie_simulator.physics.gpu import OperatingPoint, Phase, board_operating_point, natural_board_power_w
from joulie_workload.kinds import DECODE, PREFILL

DECODE_C = DECODE.compute_share.mean
PREFILL_C = PREFILL.compute_share.mean
# The 5th percentile of decode's c, Beta(2, 12) (joulie_workload.kinds): the low end of the kind.
DECODE_C_P5 = 0.03


@dataclass(frozen=True)
class Change:
    """The same work under a setting against no limit and no lock: throughput and energy per work (1 = unchanged)."""

    throughput: float
    energy_per_work: float
    power_w: float


def change(g: GpuPhysics, phases: tuple[Phase, ...], limit_w: float, lock_ratio: float = 1.0) -> Change:
    op: OperatingPoint = board_operating_point(g, phases, limit_w, lock_ratio)
    base = natural_board_power_w(g, phases)
    return Change(op.throughput, op.power_w / base / op.throughput, op.power_w)


def one_phase(board: CalBoard, draw_w: float, c: float) -> tuple[Phase, ...]:
    return (Phase(1.0, c, util_for_draw(board.physics, draw_w)),)


def lock_sweep_mhz(board: CalBoard, step_mhz: float = 15.0) -> list[float]:
    """The board's supported clocks from the maximum down, ``step_mhz`` apart (NVIDIA lists 15 MHz steps)."""
    out, f = [], board.sm_clock_max_mhz
    while f >= board.sm_clock_min_mhz - 1e-9:
        out.append(f)
        f -= step_mhz
    return out


def best_lock(board: CalBoard, phases: tuple[Phase, ...], min_throughput: float) -> tuple[float, Change]:
    """The clock lock (MHz) that saves the most energy per work with throughput >= ``min_throughput``."""
    g, top = board.physics, board.max_limit_w
    found = [(f, change(g, phases, top, f / board.sm_clock_max_mhz)) for f in lock_sweep_mhz(board)]
    ok = [(f, ch) for f, ch in found if ch.throughput >= min_throughput - 1e-12]
    return min(ok, key=lambda fc: fc[1].energy_per_work)


# A1 (Ma et al. 2026, arXiv 2605.11999): H200 decode draws 137-300 W; no cap ever binds; a clock
# lock recovers up to 32 % of decode energy at "minimal" throughput loss.
A1_DECODE_DRAWS_W = (137.0, 300.0)
A1_LOCK_SAVING_PCT = 32.0


def a1_decode_lock(draw_w: float, c: float = DECODE_C, min_throughput: float = 0.90) -> tuple[float, Change]:
    """Decode drawing ``draw_w`` on the H200: the lock with the best energy per work at >= ``min_throughput``."""
    return best_lock(H200_BOARD, one_phase(H200_BOARD, draw_w, c), min_throughput)


def a1_decode_cap(draw_w: float, cap_w: float, c: float = DECODE_C) -> Change:
    """Decode drawing ``draw_w`` on the H200 under a ``cap_w`` limit (A1: any cap >= 300 W never binds)."""
    return change(H200_BOARD.physics, one_phase(H200_BOARD, draw_w, c), cap_w)


# A7 (LLM Garage power-limit sweep, RTX 3090, llama.cpp): tokens/s relative to 350 W.
A7_PREFILL = {300: 9326 / 9893, 250: 8436 / 9893, 200: 5941 / 9893, 150: 2549 / 9893, 100: 1390 / 9893}
A7_DECODE = {300: 72.1 / 72.6, 250: 70.7 / 72.6, 200: 68.3 / 72.6, 150: 62.6 / 72.6, 100: 12.1 / 72.6}


def a7_throughput(phase: str, cap_w: float) -> float:
    """Prefill (the board's 350 W) or decode (the decode kind's mean draw) throughput on the 3090 under ``cap_w``."""
    g = RTX3090_BOARD.physics
    if phase == "prefill":
        phases = one_phase(RTX3090_BOARD, RTX3090_BOARD.max_limit_w, PREFILL_C)
    else:
        phases = (Phase(1.0, DECODE_C, DECODE.natural_draw.mean),)
    return change(g, phases, cap_w).throughput


# A4 (VoltanaLLM, arXiv 2509.04827): A100, 1410 -> 1005 MHz: sub-linear slowdown, U-shaped energy.
A4_LOW_MHZ, A4_HIGH_MHZ = 1005.0, 1410.0


def a4_lock_curve(phase: str) -> list[tuple[float, Change]]:
    """Prefill (95 % of TDP) or decode (the decode kind's mean draw) on the A100 at every supported lock."""
    g = A100_BOARD.physics
    phases = (Phase(1.0, PREFILL_C, PREFILL.natural_draw.mean),) if phase == "prefill" else (
        Phase(1.0, DECODE_C, DECODE.natural_draw.mean),)
    return [(f, change(g, phases, A100_BOARD.max_limit_w, f / A100_BOARD.sm_clock_max_mhz))
            for f in lock_sweep_mhz(A100_BOARD)]


def energy_minimum_mhz(curve: list[tuple[float, Change]]) -> float:
    return min(curve, key=lambda fc: fc[1].energy_per_work)[0]


# A3 (Maliakel et al., arXiv 2501.08219; GPU secondary): 2842 -> 180 MHz, latency +1-6 %.
A3_CLOCK_RATIO = 180.0 / 2842.0


def a3_decode_slowdown_pct(c: float) -> float:
    """Decode's time change at A3's clock ratio for compute share ``c`` (any board: the slowdown is c / r + 1 - c)."""
    return 100.0 * (c / A3_CLOCK_RATIO + 1.0 - c - 1.0)


@dataclass(frozen=True)
class PowerProfile:
    """The model's best setting that keeps at least ``min_throughput``: a limit, a lock, or both."""

    kind: str
    cap_w: float
    lock_mhz: float
    change: Change


def max_q(profile: Profile, kind: str, min_throughput: float = 0.97, step_pct: float = 2.5) -> PowerProfile:
    """B3 (NVIDIA Max-Q power profiles: a limit plus clocks, "up to 15 % energy savings while maintaining
    performance levels above 97 %" on B200): the model's least energy per work over limits and locks on
    one of ``profile``'s boards for ``kind`` at its means, keeping ``throughput >= min_throughput``."""
    g, spec = profile.physics.gpu, profile.gpus
    assert g is not None and spec is not None, profile.name
    phases = kind_phases(kind)
    best: PowerProfile | None = None
    caps = [spec.max_w * (100.0 - i * step_pct) / 100.0 for i in range(int(100 / step_pct))]
    locks = [spec.sm_clock_max_mhz * (100.0 - i * step_pct) / 100.0 for i in range(int(100 / step_pct))]
    for cap in (c for c in caps if c >= spec.min_w):
        for lock in (f for f in locks if f >= spec.sm_clock_min_mhz):
            ch = change(g, phases, cap, lock / spec.sm_clock_max_mhz)
            if ch.throughput >= min_throughput and (best is None or ch.energy_per_work < best.change.energy_per_work):
                best = PowerProfile(kind, cap, lock, ch)
    assert best is not None
    return best
