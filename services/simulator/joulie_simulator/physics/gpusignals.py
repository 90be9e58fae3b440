"""Per-GPU telemetry as a real node exports it (NVML and DCGM): what a board running a job reports each tick.

The controller never sees a job's compute share ``c`` or draw ``u``; it sees what NVML and DCGM export
for each board (names in ``joulie_telemetry.vocabulary.GPU_METRICS``): power, the SM clock and its
maximum (``hw.gpu.speed`` / ``hw.gpu.speed.limit``), utilisation (NVML ``utilization.gpu``: the share of
time a kernel ran) and the DCGM profiling ratios SM active, tensor active and DRAM active. This module
produces them from the truth: the job's phases (``share``, ``c``, ``u`` each), the board's limit and
lock, and the job's own activity constants (:class:`ActivityTraits`), with noise.

The model, per phase ``i`` at its clock ratio ``r_i`` (``physics.gpu.board_operating_point``):

- its busy time splits as the engine's progress model says (``physics.speed``): ``c_i / r_i`` of it
  follows the clock (compute-bound), ``1 - c_i`` waits on memory; normalised by ``stretch_i``,
  ``phi_c_i = (c_i / r_i) / stretch_i`` and ``phi_m_i = (1 - c_i) / stretch_i``;
- the board spends ``t_i = share_i * stretch_i / sum(share * stretch)`` of its time in phase ``i``;
- utilisation = ``busy`` (kernel launch gaps, host-side work between steps); SM active =
  ``busy * sm_fill`` (a kernel that does not fill every SM leaves some idle while it runs);
- tensor active = SM active x sum ``t_i phi_c_i`` x ``tensor_use`` (the tensor pipes run only in the
  compute-bound part, and only for the share of it spent in matrix multiplies);
- DRAM active = SM active x sum ``t_i (phi_m_i dram_memory_bound + phi_c_i dram_compute_bound)``:
  while memory-bound the memory interface is busy as far as the job's access pattern lets it stream,
  while compute-bound it serves the operands the caches miss;
- the clock reported is the time-weighted mean of the phases' clocks (a sampled gauge averaged over
  the scrape interval).

The activity constants are the job's, not a kind's (:func:`draw_traits`), drawn around published
values: the controller's estimator assumes fixed constants (0.8 memory-bound, 0.1 compute-bound DRAM
activity), so it carries a real per-job bias it has to learn, as on hardware.

- ``dram_memory_bound`` ~ N(0.75, 0.07) in [0.55, 0.92]: streaming kernels reach 75-92 % of peak HBM
  bandwidth (V100 STREAM-like copy about 83 % of 900 GB/s: Jia et al. 2018, "Dissecting the NVIDIA
  Volta GPU Architecture via Microbenchmarking", arXiv 1804.06826); memory-bound ML kernels (norms, element-wise, attention on short contexts) sit
  lower, down to about 55 %.
- ``dram_compute_bound`` ~ N(0.15, 0.05) in [0.03, 0.35]: a tiled GEMM re-reads operands from shared
  memory and L2; its DRAM traffic per FLOP falls with the tile size (roofline: arithmetic intensity of
  a large GEMM is tens to hundreds of FLOP/byte, far right of the ridge point).
- ``tensor_use`` ~ N(0.55, 0.12) in [0.2, 0.9]: mixed-precision training and prefill spend most of their
  compute-bound time in matrix multiplies; the rest (softmax, activations, optimizer) runs on the CUDA cores.
- ``busy`` ~ N(0.95, 0.03) in [0.8, 1.0] and ``sm_fill`` ~ N(0.85, 0.07) in [0.6, 1.0]: NVML
  utilisation saturates near 100 % on any busy job while DCGM SM active sits lower (DCGM user guide,
  "Profiling metrics": SM activity 0.8 or more is needed, not sufficient, for a well-used GPU).

Noise per sample (:class:`TelemetryNoise`; a physics variant may scale it): power sd 2 % of the reading
plus 2.5 W (nvidia-smi documents +/- 5 W accuracy for power.draw; Yang et al. 2024, "Part-time Power
Measurements: nvidia-smi's Lack of Attention", find A100/H100 readings averaged over
part of each period, which adds per-sample error of a few %), clock ratio sd 0.01 (the SM clock under a
power limit moves step by step between samples), activity ratios sd 0.02 absolute (DCGM averages the
profiling counters over its sampling period; a minute of training steps varies by a few %), and the
phase mix of a serving job varies from tick to tick (log-normal sd 0.15 on each phase's share: request
arrivals change the prefill/decode balance). Pure: the caller passes the ``numpy.random.Generator``.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from joulie_hwprofiles.schema import GpuPhysics
from joulie_simulator.physics.gpu import Phase, board_operating_point
from joulie_simulator.physics.speed import stretch


@dataclass(frozen=True)
class ActivityTraits:
    """A job's own activity constants (module docstring: the published ranges they are drawn from)."""

    busy: float = 0.95
    sm_fill: float = 0.85
    dram_memory_bound: float = 0.75
    dram_compute_bound: float = 0.15
    tensor_use: float = 0.55


@dataclass(frozen=True)
class TelemetryNoise:
    """Standard deviations of one sample's noise (module docstring: where they come from)."""

    power_frac: float = 0.02
    power_w: float = 2.5
    clock_ratio: float = 0.01
    activity: float = 0.02
    phase_share: float = 0.15

    def scaled(self, k: float) -> TelemetryNoise:
        return TelemetryNoise(
            self.power_frac * k, self.power_w * k, self.clock_ratio * k, self.activity * k, self.phase_share * k
        )


QUIET = TelemetryNoise(0.0, 0.0, 0.0, 0.0, 0.0)
"""No noise: the signals exactly as the model gives them (tests, the truth the plots compare with)."""


@dataclass(frozen=True)
class GpuSignals:
    """One board over one sample, as NVML and DCGM report it."""

    power_w: float
    sm_clock_mhz: float
    """hw.gpu.speed (MHz here; the exporter converts to Hz)."""
    sm_clock_limit_mhz: float
    """hw.gpu.speed.limit{limit_type=max}: the board's highest SM clock."""
    utilization: float
    sm_active: float
    tensor_active: float
    dram_active: float

    @property
    def clock_ratio(self) -> float:
        return self.sm_clock_mhz / self.sm_clock_limit_mhz


def _clipped_normal(rng: np.random.Generator, mean: float, sd: float, lo: float, hi: float) -> float:
    return float(min(hi, max(lo, rng.normal(mean, sd))))


def draw_traits(seed: int, job_id: str) -> ActivityTraits:
    """The job's activity constants: the same for a job and a seed in every arm (the job is the same job)."""
    rng = np.random.default_rng([seed, zlib.crc32(job_id.encode())])
    return ActivityTraits(
        busy=_clipped_normal(rng, 0.95, 0.03, 0.8, 1.0),
        sm_fill=_clipped_normal(rng, 0.85, 0.07, 0.6, 1.0),
        dram_memory_bound=_clipped_normal(rng, 0.75, 0.07, 0.55, 0.92),
        dram_compute_bound=_clipped_normal(rng, 0.15, 0.05, 0.03, 0.35),
        tensor_use=_clipped_normal(rng, 0.55, 0.12, 0.2, 0.9),
    )


def _jittered(phases: Sequence[Phase], rng: np.random.Generator, sd: float) -> tuple[Phase, ...]:
    """The phase mix of this sample: each share times a log-normal factor (one phase: unchanged)."""
    if len(phases) < 2 or sd <= 0:
        return tuple(phases)
    return tuple(Phase(p.share * math.exp(float(rng.normal(0.0, sd))), p.compute_share, p.draw) for p in phases)


def _ratio(v: float) -> float:
    return min(1.0, max(0.0, v))


def _operating(g: GpuPhysics, mix: tuple[Phase, ...], limit_w: float, lock_ratio: float) -> tuple[float, float, float, float]:
    """``mix``'s operating point as the model above weighs it: (power, clock ratio, phi_c, phi_m)."""
    op = board_operating_point(g, mix, limit_w, lock_ratio)
    weights = [p.share * stretch(r, p.compute_share) for p, r in zip(mix, op.clock_ratios, strict=True)]
    total = sum(weights)
    phi_c = phi_m = clock = 0.0
    for p, r, w in zip(mix, op.clock_ratios, weights, strict=True):
        t, s = w / total, stretch(r, p.compute_share)
        phi_c += t * (p.compute_share / r) / s
        phi_m += t * (1.0 - p.compute_share) / s
        clock += t * r
    return op.power_w, clock, phi_c, phi_m


# _operating of a phase mix that no noise jitters (a job's phases under one limit and lock hold for
# many ticks): the same floats, computed once. Keyed by the physics' identity, kept with the value.
_OPERATING: dict[tuple[int, tuple[Phase, ...], float, float], tuple[GpuPhysics, tuple[float, float, float, float]]] = {}
_OPERATING_MAX = 4096


def _operating_memo(g: GpuPhysics, mix: tuple[Phase, ...], limit_w: float, lock_ratio: float) -> tuple[float, float, float, float]:
    key = (id(g), mix, limit_w, lock_ratio)
    hit = _OPERATING.get(key)
    if hit is not None and hit[0] is g:
        return hit[1]
    point = _operating(g, mix, limit_w, lock_ratio)
    if len(_OPERATING) >= _OPERATING_MAX:
        _OPERATING.clear()
    _OPERATING[key] = (g, point)
    return point


def board_signals(
    g: GpuPhysics,
    sm_clock_max_mhz: float,
    phases: Sequence[Phase],
    limit_w: float,
    lock_ratio: float,
    traits: ActivityTraits,
    rng: np.random.Generator | None = None,
    noise: TelemetryNoise = QUIET,
    power_w: float | None = None,
) -> GpuSignals:
    """What one board running ``phases`` under ``limit_w`` and a lock at ``lock_ratio`` (1: none) reports.

    ``power_w``: the board's true power where the caller has it (the emulator's state); else the operating
    point's. ``rng`` None or ``noise`` QUIET: no noise."""
    quiet = rng is None or noise == QUIET
    mix = tuple(phases)
    if quiet or rng is None or len(mix) < 2 or noise.phase_share <= 0:
        # No jitter: the operating point is the mix's own (about 75 µs a board to compute, per tick).
        op_power, clock, phi_c, phi_m = _operating_memo(g, mix, limit_w, lock_ratio)
    else:
        op_power, clock, phi_c, phi_m = _operating(g, _jittered(mix, rng, noise.phase_share), limit_w, lock_ratio)
    power = op_power if power_w is None else power_w
    util = traits.busy
    sm = util * traits.sm_fill
    tensor = sm * phi_c * traits.tensor_use
    dram = sm * (phi_m * traits.dram_memory_bound + phi_c * traits.dram_compute_bound)
    if not quiet and rng is not None:
        e = rng.normal(0.0, 1.0, 6)
        power = max(0.0, power + float(e[0]) * math.hypot(noise.power_frac * power, noise.power_w))
        clock = min(1.0, max(0.01, clock + float(e[1]) * noise.clock_ratio))
        util, sm = _ratio(util + float(e[2]) * noise.activity), _ratio(sm + float(e[3]) * noise.activity)
        tensor, dram = _ratio(tensor + float(e[4]) * noise.activity), _ratio(dram + float(e[5]) * noise.activity)
    return GpuSignals(power, clock * sm_clock_max_mhz, sm_clock_max_mhz, util, sm, tensor, dram)


def mean_compute_share(phases: Sequence[Phase]) -> float:
    """The job's compute share as its phases' share-weighted mean (the truth an estimate is compared with)."""
    total = sum(p.share for p in phases)
    return sum(p.share * p.compute_share for p in phases) / total if total > 0 else 0.0
