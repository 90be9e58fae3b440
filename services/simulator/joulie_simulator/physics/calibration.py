"""The published measurements the device models are calibrated and checked against, and what the
models give for each: the data behind docs/physics-calibration.md and physics_calibration_test.

Every point names its source, the setting, the measured change and how the model is set up for it.
``fitted`` points set a parameter (the NVIDIA clock/power shape and the GPU kinds' compute shares
in ``joulie_workload.kinds``), so the model meets them by construction up to the tolerance;
``check`` points were not used to set anything. Pure. Source IDs (A1, B1, D5, ...) are those of
docs/physics-calibration.md.

The NVIDIA board shape (``physics.gpu``: clock exponent ``K``, non-clock share ``FIXED``, voltage
floor ``VMIN``) is one set of numbers for every NVIDIA board: ``K`` from the McDonald and Samsi
points; ``FIXED`` and ``VMIN`` fitted (least squares over time and energy changes, 0.005 / 0.01
steps, with the McDonald and Samsi points held inside their tolerances) to the Zeus power-limit
sweeps of two generations, a V100 (Volta) and an A40 (Ampere), five training workloads each at
every limit the authors ran (``ZEUS_SWEEPS``). Each board's lowest clock under a limit is its
lowest supported SM clock (``min_clock_ratio = min / max``), not a fitted number. The serving
points (decode and prefill under caps and clock locks) are in ``calibration_serving``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from joulie_hwprofiles.schema import GpuPhysics
from joulie_simulator.physics import gpu as physics_gpu
from joulie_simulator.physics.speed import throughput
from joulie_workload.kinds import SPECS, WorkloadKind

# The board shape every NVIDIA profile uses (nvidia-h100-nvl-8gpu.yaml physics.gpu).
K, FIXED, VMIN_CLOCK = 2.5, 0.22, 0.78
# The shape before the deep-cap refit (issue 34): the voltage floor was assumed at half the
# maximum clock, the non-clock share and the lowest clock under a limit likewise.
OLD_FIXED, OLD_VMIN_CLOCK, OLD_MIN_CLOCK = 0.15, 0.5, 0.2
TRAINING_C = SPECS["gpu-training"].compute_share.mean


@dataclass(frozen=True)
class CalBoard:
    """A board a published measurement ran on: its physics and the limits and clocks it accepts."""

    name: str
    source: str
    physics: GpuPhysics
    min_limit_w: float
    max_limit_w: float
    sm_clock_max_mhz: float
    sm_clock_min_mhz: float


def nvidia_board(source: str, idle_w: float, tdp_w: float, min_mhz: float, max_mhz: float) -> GpuPhysics:
    """An NVIDIA board with the common shape: natural maximum = TDP, lowest clock = the lowest supported one."""
    return GpuPhysics(
        source=source, idle_w=idle_w, natural_max_w=tdp_w, clock_power_exponent=K, fixed_dynamic_frac=FIXED,
        min_clock_ratio=min_mhz / max_mhz, vmin_clock_ratio=VMIN_CLOCK,
    )


def old_shape(g: GpuPhysics) -> GpuPhysics:
    """The same board with the shape before the deep-cap refit (for the before/after comparison)."""
    return g.model_copy(update={"fixed_dynamic_frac": OLD_FIXED, "vmin_clock_ratio": OLD_VMIN_CLOCK,
                                "min_clock_ratio": OLD_MIN_CLOCK})


def _board(name: str, source: str, idle: float, tdp: float, lo_w: float, mhz: tuple[float, float]) -> CalBoard:
    return CalBoard(name, source, nvidia_board(f"published:{source}", idle, tdp, *mhz), lo_w, tdp, mhz[1], mhz[0])


# Idle draws and limits from nvidia-smi captures (docs/physics-calibration.md, "Boards").
V100_PCIE_BOARD = _board(
    "V100 PCIe", "V100 PCIe 250 W (NVIDIA datasheet; idle 27-31 W P0 in a public nvidia-smi capture, driver "
    "460.73.01; limits 100-250 W as Zeus swept them); SM 1380 MHz boost (datasheet), lowest 135 MHz assumed",
    27.0, 250.0, 100.0, (135.0, 1380.0))
V100_PCIE = V100_PCIE_BOARD.physics
V100_SXM2 = nvidia_board("assumed:V100 SXM2 300 W board (NVIDIA V100 datasheet), idle about 40 W", 40.0, 300.0, 135.0, 1530.0)
A40_BOARD = _board(
    "A40", "A40 (github.com/thamada/nvidia-smi nvsim/A40x10_smi.py @5f6b772: default/max 300 W, min 100 W, idle 29.7 W "
    "P8, SM 1740 MHz); lowest clock 210 MHz as the A100 and RTX 3090 captures", 29.7, 300.0, 100.0, (210.0, 1740.0))
RTX3090_BOARD = _board(
    "RTX 3090", "RTX 3090 (github.com/thamada/nvidia-smi gls/RTX3090_smi.py @b09ef13: 350 W, min 100 W, idle 30.1 W P8, "
    "SM 2100 MHz max, 210 MHz idle)", 30.1, 350.0, 100.0, (210.0, 2100.0))
A100_BOARD = _board(
    "A100 SXM4 80GB", "A100 SXM4 80GB (github.com/thamada/nvidia-smi gls/A100SXMx4_smi.py @b09ef13: 500 W, min 100 W, "
    "idle 59.8 W P0, SM 1410 MHz max, 210 MHz idle; supported clocks 1410-210 MHz in an A100 capture)",
    59.77, 500.0, 100.0, (210.0, 1410.0))
H200_BOARD = _board(
    "H200 SXM", "H200 141 GB (D6: a public nvidia-smi -a capture, driver 550.90.12: limits 200-700 W, idle 74.6 W, SM "
    "1980 MHz); lowest clock 345 MHz as the H100 (its idle clock)", 74.58, 700.0, 200.0, (345.0, 1980.0))


def util_for_draw(g: GpuPhysics, draw_w: float) -> float:
    """The natural draw ``u`` of work that draws ``draw_w`` uncapped on ``g``."""
    share = (draw_w - g.idle_w) / (g.natural_max_w - g.idle_w)
    return float(min(max(share, 0.0), 1.0) ** (1.0 / g.util_gamma))


def cap_change(g: GpuPhysics, draw_w: float, c: float, base_w: float, cap_w: float) -> tuple[float, float]:
    """(time change %, energy change %) of work (natural draw ``draw_w``, compute share ``c``) capped at
    ``cap_w`` against the same work at ``base_w``; board energy only."""
    u = util_for_draw(g, draw_w)
    p0, r0 = physics_gpu.capped_board(g, u, base_w)
    p1, r1 = physics_gpu.capped_board(g, u, cap_w)
    t = throughput(r0, c) / throughput(r1, c)
    return 100.0 * (t - 1.0), 100.0 * (t * p1 / p0 - 1.0)


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
        return util_for_draw(self.board, self.natural_w)

    def model(self) -> tuple[float, float]:
        """(time change %, energy change %) of the model: the kind's mean compute share."""
        c = SPECS[cast(WorkloadKind, self.kind)].compute_share.mean
        return cap_change(self.board, self.natural_w, c, self.base_limit_w, self.cap_w)


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


@dataclass(frozen=True)
class CapSweep:
    """One workload's power-limit sweep on one board: per limit (W), (time per epoch s, average power W)."""

    board: CalBoard
    workload: str
    runs: dict[int, tuple[float, float]]

    @property
    def base_w(self) -> int:
        return max(self.runs)

    @property
    def natural_w(self) -> float:
        """The average draw at the highest limit: the work's natural draw."""
        return self.runs[self.base_w][1]

    def measured(self, cap_w: int) -> tuple[float, float]:
        """(time change %, energy change %) at ``cap_w`` against the highest limit."""
        t0, p0 = self.runs[self.base_w]
        t, p = self.runs[cap_w]
        return 100.0 * (t / t0 - 1.0), 100.0 * (t * p / (t0 * p0) - 1.0)

    def model(self, cap_w: int, g: GpuPhysics | None = None, c: float = TRAINING_C) -> tuple[float, float]:
        """The model's (time change %, energy change %): gpu-training's mean compute share."""
        return cap_change(g or self.board.physics, self.natural_w, c, float(self.base_w), float(cap_w))

    def caps(self) -> list[int]:
        return sorted((w for w in self.runs if w != self.base_w), reverse=True)


_ZEUS_V100: dict[str, dict[int, tuple[float, float]]] = {
    "resnet50": {250: (3514.99, 220.3), 225: (3584.3, 205.4), 200: (3700.97, 184.9), 175: (3852.18, 166.4),
                 150: (4148.66, 144.6), 125: (5064.97, 122.0), 100: (6781.17, 98.4)},
    "bert-qa": {250: (1733.29, 228.2), 225: (1776.25, 212.6), 200: (1843.12, 191.2), 175: (1939.22, 170.6),
                150: (2221.15, 146.4), 125: (2734.55, 121.8), 100: (3583.43, 99.5)},
    "bert-sa": {250: (4114.86, 223.4), 225: (4208.98, 206.3), 200: (4432.79, 189.5), 175: (4626.85, 169.2),
                150: (4939.33, 146.7), 125: (5918.45, 123.3), 100: (7724.07, 100.1)},
    "shufflenet": {250: (7.61, 187.7), 225: (7.67, 178.4), 200: (7.84, 159.2), 175: (8.21, 137.9), 150: (8.49, 131.0),
                   125: (9.22, 109.3), 100: (11.28, 86.9)},
    "deepspeech2": {250: (6181.63, 160.6), 225: (6199.13, 153.2), 200: (6353.21, 143.9), 175: (6533.73, 134.8),
                    150: (6845.56, 125.7), 125: (7361.96, 115.0), 100: (8477.9, 98.1)},
}
_ZEUS_A40: dict[str, dict[int, tuple[float, float]]] = {
    "resnet50": {300: (3847.48, 235.2), 275: (3857.81, 230.8), 250: (3864.98, 214.6), 225: (3909.47, 196.4),
                 200: (4123.52, 177.6), 175: (4705.61, 160.2), 150: (6326.84, 144.6), 125: (9639.82, 125.5),
                 100: (10606.19, 120.7)},
    "bert-qa": {300: (909.47, 267.0), 275: (913.33, 251.2), 250: (934.88, 232.1), 225: (967.36, 210.0),
                200: (1028.09, 188.6), 175: (1156.77, 167.1), 150: (1586.22, 145.4), 125: (2381.73, 122.9),
                100: (3699.82, 105.9)},
    "bert-sa": {300: (2002.34, 274.6), 250: (2079.35, 241.5), 200: (2226.9, 196.1), 150: (3334.48, 150.3),
                100: (8836.89, 103.9)},
    "shufflenet": {300: (8.53, 218.9), 275: (8.61, 216.9), 250: (8.61, 209.2), 225: (8.75, 201.1), 200: (8.8, 181.8),
                   175: (9.18, 160.7), 150: (11.09, 141.6), 125: (16.85, 119.0), 100: (27.13, 106.9)},
    "deepspeech2": {300: (9730.15, 167.8), 275: (9692.81, 168.7), 250: (9758.08, 164.4), 225: (9923.82, 161.7),
                    200: (10628.14, 155.1), 175: (11342.55, 142.2), 150: (13033.01, 128.5), 125: (20707.22, 115.9),
                    100: (24866.22, 106.9)},
}
ZEUS_SOURCE = ("You, Chung & Chowdhury, 'Zeus: Understanding and Optimizing GPU Energy Consumption of DNN Training', "
               "NSDI 2023; raw traces github.com/ml-energy/zeus examples/research_reproducibility/zeus_nsdi23/trace/"
               "summary_power_{v100,a40}.csv @75a8b93 (default batch sizes: ResNet-50 256, BERT-QA 32, BERT-SA 128, "
               "ShuffleNet 1024, DeepSpeech2 192); energy = time per epoch x average power")
ZEUS_SWEEPS: tuple[CapSweep, ...] = tuple(
    CapSweep(board, name, runs) for board, table in ((V100_PCIE_BOARD, _ZEUS_V100), (A40_BOARD, _ZEUS_A40))
    for name, runs in table.items()
)


def sweep(board: CalBoard, workload: str) -> CapSweep:
    return next(s for s in ZEUS_SWEEPS if s.board is board and s.workload == workload)


def rms_pp(sweeps: tuple[CapSweep, ...], old: bool = False) -> float:
    """Root-mean-square difference (percentage points, time and energy together) between the model
    and the measurements over every capped run of ``sweeps``; ``old``: with the shape before the refit."""
    errs: list[float] = []
    for s in sweeps:
        g = old_shape(s.board.physics) if old else s.board.physics
        for cap in s.caps():
            (mt, me), (dt, de) = s.model(cap, g), s.measured(cap)
            errs += [(mt - dt) ** 2, (me - de) ** 2]
    return float((sum(errs) / len(errs)) ** 0.5)


def energy_optimal_cap(s: CapSweep, modelled: bool) -> int:
    """The limit (of those the authors ran) with the least energy per epoch: measured, or the model's."""
    caps = [s.base_w, *s.caps()]
    return min(caps, key=lambda w: (s.model(w)[1] if modelled else s.measured(w)[1]) if w != s.base_w else 0.0)
