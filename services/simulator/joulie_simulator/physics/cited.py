"""The published points the ``curve`` plots draw beside the model: measured throughput and energy
per work against a cap (% of the board's maximum limit) or a clock lock (% of its maximum SM
clock), from ``calibration`` and ``calibration_serving`` (sources in docs/physics-calibration.md).
They ran on other boards (V100, A40, RTX 3090, A100, H200): a share of the board's own maximum is
what they have in common with the profile plotted. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from joulie_simulator.physics import calibration as cal
from joulie_simulator.physics import calibration_serving as cs

Axis = Literal["cap", "clock"]


@dataclass(frozen=True)
class CitedMark:
    """Measured points (``xs`` with ``throughput`` / ``energy`` per point, None where not reported),
    or a band of x (``span``) or a level of energy per work (``level``) a source states."""

    label: str
    axis: Axis
    kinds: tuple[str, ...]
    xs: tuple[float, ...] = ()
    throughput: tuple[float, ...] | None = None
    energy: tuple[float, ...] | None = None
    span: tuple[float, float] | None = None
    level: float | None = None


def _zeus(board: cal.CalBoard, workload: str, tag: str) -> CitedMark:
    s = cal.sweep(board, workload)
    caps = [s.base_w, *s.caps()]
    changes = [(0.0, 0.0) if w == s.base_w else s.measured(w) for w in caps]
    return CitedMark(f"{tag} {board.name} {workload} (Zeus, B1)", "cap", ("gpu-training",),
                     tuple(100.0 * w / board.max_limit_w for w in caps),
                     tuple(1.0 / (1.0 + t / 100.0) for t, _ in changes), tuple(1.0 + e / 100.0 for _, e in changes))


def _a7(phase: str, table: dict[int, float]) -> CitedMark:
    caps = sorted(table, reverse=True)
    return CitedMark(f"RTX 3090 {phase} (A7)", "cap", (f"gpu-inference-{phase}",),
                     tuple(100.0 * w / cal.RTX3090_BOARD.max_limit_w for w in caps), tuple(table[w] for w in caps))


def marks() -> tuple[CitedMark, ...]:
    """Every cited mark the plots know."""
    mcdonald, samsi = cal.GPU_POINTS
    return (
        _zeus(cal.V100_PCIE_BOARD, "resnet50", "measured"),
        _zeus(cal.A40_BOARD, "resnet50", "measured"),
        CitedMark("V100 transformer, 150 of 250 W (McDonald 2022)", "cap", ("gpu-training",), (60.0,),
                  (1.0 / (1.0 + mcdonald.measured_time_pct / 100.0),), (1.0 + mcdonald.measured_energy_pct / 100.0,)),
        CitedMark("LLaMA inference, 175 of 300 W vs 250 W (Samsi 2023)", "cap", ("gpu-inference",), (100.0 * 175 / 300,),
                  (1.0 / (1.0 + samsi.measured_time_pct / 100.0),), (1.0 + samsi.measured_energy_pct / 100.0,)),
        _a7("prefill", cs.A7_PREFILL),
        _a7("decode", cs.A7_DECODE),
        CitedMark("H200 decode draws 20-43 % of TDP: caps above never bind (A1)", "cap", ("gpu-inference-decode",),
                  span=(100.0 * 137 / 700, 100.0 * 300 / 700)),
        CitedMark("decode, lock at 6 % of max: +1-6 % time, -42 % energy (A3)", "clock", ("gpu-inference-decode",),
                  (100.0 * cs.A3_CLOCK_RATIO,), (1.0 / 1.035,), (0.58,)),
        CitedMark("decode: a lock saves up to 32 % energy, clock not reported (A1)", "clock", ("gpu-inference-decode",),
                  level=1.0 - cs.A1_LOCK_SAVING_PCT / 100.0),
        CitedMark("A100 1005-1410 MHz: energy minimum inside, sub-linear slowdown (A4)", "clock",
                  ("gpu-inference-prefill", "gpu-inference-decode", "gpu-inference"),
                  span=(100.0 * cs.A4_LOW_MHZ / cs.A4_HIGH_MHZ, 100.0)),
    )


def marks_for(kind: str, axis: Axis) -> list[CitedMark]:
    return [m for m in marks() if m.axis == axis and kind in m.kinds]
