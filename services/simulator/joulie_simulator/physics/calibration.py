"""The published measurements the device models are calibrated and checked against, and what the
models give for each: the data behind docs/physics-calibration.md and physics_calibration_test.

Every point names its source, the setting, the measured change and how the model is set up for it.
``fitted`` points set a parameter (the NVIDIA clock/power shape and the GPU kinds' compute shares
in ``joulie_workload.kinds``), so the model meets them by construction up to the tolerance;
``check`` points were not used to set anything. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from joulie_hwprofiles.schema import GpuPhysics
from joulie_simulator.physics import gpu as physics_gpu
from joulie_simulator.physics.speed import throughput
from joulie_workload.kinds import SPECS, WorkloadKind

# The board shape every NVIDIA profile uses (nvidia-h100-nvl-8gpu.yaml physics.gpu).
K, FIXED, MIN_CLOCK, VMIN_CLOCK = 2.5, 0.15, 0.2, 0.5

V100_PCIE = GpuPhysics(
    source="assumed:V100 PCIe 250 W board (NVIDIA V100 datasheet), idle about 25 W",
    idle_w=25.0, natural_max_w=250.0, clock_power_exponent=K, fixed_dynamic_frac=FIXED,
    min_clock_ratio=MIN_CLOCK, vmin_clock_ratio=VMIN_CLOCK,
)
V100_SXM2 = GpuPhysics(
    source="assumed:V100 SXM2 300 W board (NVIDIA V100 datasheet), idle about 40 W",
    idle_w=40.0, natural_max_w=300.0, clock_power_exponent=K, fixed_dynamic_frac=FIXED,
    min_clock_ratio=MIN_CLOCK, vmin_clock_ratio=VMIN_CLOCK,
)


@dataclass(frozen=True)
class GpuPoint:
    """A GPU capping measurement: the same work at ``base_limit_w`` and at ``cap_w``."""

    name: str
    source: str
    setting: str
    role: str  # "fitted" | "check"
    board: GpuPhysics
    kind: str
    natural_w: float
    """The work's natural draw (W) on ``board``, and how it was chosen: see ``natural_note``."""
    natural_note: str
    base_limit_w: float
    cap_w: float
    measured_time_pct: float
    measured_energy_pct: float
    tol_time_pp: float
    tol_energy_pp: float

    def util(self) -> float:
        g = self.board
        share = (self.natural_w - g.idle_w) / (g.natural_max_w - g.idle_w)
        return float(min(max(share, 0.0), 1.0) ** (1.0 / g.util_gamma))

    def model(self) -> tuple[float, float]:
        """(time change %, energy change %) of the model: the kind's mean compute share."""
        c = SPECS[cast(WorkloadKind, self.kind)].compute_share.mean
        u = self.util()
        p0, r0 = physics_gpu.capped_board(self.board, u, self.base_limit_w)
        p1, r1 = physics_gpu.capped_board(self.board, u, self.cap_w)
        t = throughput(r0, c) / throughput(r1, c)
        return 100.0 * (t - 1.0), 100.0 * (t * p1 / p0 - 1.0)


GPU_POINTS: tuple[GpuPoint, ...] = (
    GpuPoint(
        name="mcdonald2022-v100-training",
        source="McDonald et al. 2022, 'Great Power, Great Responsibility', arXiv 2205.09646",
        setting="V100 (250 W default limit), transformer language-model training, limit 150 W vs 250 W",
        role="fitted", board=V100_PCIE, kind="gpu-training",
        natural_w=186.0,
        natural_note="derived from the measurement: the capped run draws 150 W, so the uncapped draw is "
                     "150 W x 1.068 / 0.863 = 186 W",
        base_limit_w=250.0, cap_w=150.0, measured_time_pct=6.8, measured_energy_pct=-13.7,
        tol_time_pp=1.5, tol_energy_pp=1.5,
    ),
    GpuPoint(
        name="samsi2023-llama-inference",
        source="Samsi et al. 2023, 'From Words to Watts', arXiv 2310.03003",
        setting="LLaMA inference on V100/A100, limit 250 W -> 175 W (V100 SXM2 300 W board modelled)",
        role="fitted", board=V100_SXM2, kind="gpu-inference",
        natural_w=255.0,
        natural_note="assumed: decode at the 250 W limit's edge (the paper reports the limit binding); "
                     "not given as a number in the summary used",
        base_limit_w=250.0, cap_w=175.0, measured_time_pct=6.5, measured_energy_pct=-23.0,
        tol_time_pp=1.5, tol_energy_pp=3.0,
    ),
)
