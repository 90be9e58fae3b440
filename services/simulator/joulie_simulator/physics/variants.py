"""Physics variants: the emulator's physics moved within published (or stated) ranges, for robustness runs.

The controller decides from its own model of a device (its cap model's exponents and shares, the
workload kind's prior compute share). When the emulator runs the same calibrated numbers, the
benchmark cannot see what a wrong model costs. A variant moves the emulator's truth, never the
controller's view: :func:`variant_profile` gives the profile the *emulator* runs (the Node, the
NodeHardware and the agent's cap ranges keep coming from the unmodified profile), :func:`variant_jobs`
the jobs the *engine* runs (the Pods carry only the job's kind, so the controller's kind prior is then
wrong by as much as the variant moves the compute share).

Each variant names the calibrated value it moves, the value it moves it to and why that value is inside
the range its source allows (``source``); docs/physics-calibration.md has the calibration itself. Pure:
no I/O, profiles and jobs are frozen pydantic models copied with their changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from joulie_hwprofiles.schema import Profile
from joulie_workload.trace import Job, PhaseSensitivity, Sensitivity

CALIBRATED: Final = "calibrated"
"""The emulator's calibrated physics, unchanged (the default)."""
ALL: Final = "all"


@dataclass(frozen=True)
class PhysicsVariant:
    """What a variant changes; None (or 1.0 for the scale) leaves that part calibrated."""

    name: str
    summary: str
    source: str
    """The range the moved value lies in, and where that range comes from."""
    gpu_clock_power_exponent: float | None = None
    """GpuPhysics.clock_power_exponent (calibrated 2.5): clock-following board power ~ clock**k."""
    gpu_fixed_dynamic_frac: float | None = None
    """GpuPhysics.fixed_dynamic_frac (calibrated 0.22): the dynamic power that does not follow the clock."""
    cpu_freq_power_exponent: float | None = None
    """CpuPhysics.freq_power_exponent (calibrated 1.5): per-core power ~ clock**k."""
    memory_bound_scale: float = 1.0
    """Each job's memory-bound share ``1 - c`` (CPU, GPU and every serving phase) times this: < 1 shifts
    the jobs toward compute-bound (a cap then slows them more than the kind's prior says)."""
    telemetry_noise_scale: float = 1.0
    """The per-GPU telemetry's noise (``physics.gpusignals.TelemetryNoise``) times this."""

    @property
    def changes_profiles(self) -> bool:
        return any(v is not None for v in (self.gpu_clock_power_exponent, self.gpu_fixed_dynamic_frac,
                                           self.cpu_freq_power_exponent))

    @property
    def changes_jobs(self) -> bool:
        return self.memory_bound_scale != 1.0

    @property
    def changes_telemetry(self) -> bool:
        return self.telemetry_noise_scale != 1.0

    def describe(self) -> str:
        """One line: the name, what it changes, the source of its range."""
        return f"{self.name}: {self.summary} (range: {self.source})"


_GPU_EXP_SOURCE = (
    "k stands for f * V(f)**2 while the voltage scales: 1 with the voltage at its floor, 3 with V proportional to f, "
    "a little above 3 where leakage grows with the voltage; the Zeus/McDonald/Samsi refit of issue 34 is flat in k "
    "(docs/physics-calibration.md: 'the fit is flat in it'), so it does not pin k inside 2.0-3.2; issue 35 names 2.0 and 3.2")
_CPU_EXP_SOURCE = (
    "assumed, as the calibrated 1.5 is: k = 1 + 2 ln(V_max / V_min) / ln(f_max / f_min) over the 1.0-3.1 GHz DVFS range; "
    "the calibrated 0.75-1.0 V gives 1.5, a flat 0.89-1.0 V curve 1.2, a steep 0.57-1.0 V curve 2.0; V proportional to f "
    "(the CMOS bound) would give 3")
_SHARE_SOURCE = (
    "assumed: the calibrated 0.22 is the Zeus V100+A40 fit (0.15 before it); HBM, I/O and leakage at the floor voltage "
    "are a larger share on memory-bound work and HBM3 boards, 0.35 is the upper end this project takes")
_COMPUTE_SOURCE = (
    "assumed: each kind's mean compute share is fitted to one published point (gpu-training: McDonald 2022, "
    "gpu-inference: Samsi 2023, docs/physics-calibration.md); a different model or batch size moves it. Cutting the "
    "memory-bound share by 40 % moves gpu-training 0.52 -> 0.71, gpu-inference 0.26 -> 0.56, cpu-memory 0.35 -> 0.61, "
    "cpu-compute 0.95 -> 0.97")

_NOISE_SOURCE = (
    "assumed: the calibrated noise (docs/physics-calibration.md, 'Per-GPU telemetry') takes nvidia-smi's documented "
    "+/- 5 W and a few % of DCGM's averaging; readings averaged over part of each period only (Yang et al. 2024, "
    "nvidia-smi's lack of attention) or a shorter scrape make each sample noisier: twice the calibrated sd")

_BASE: Final = (
    PhysicsVariant(CALIBRATED, "the emulator's calibrated physics (GPU k 2.5, non-clock share 0.22, CPU k 1.5)",
                   "docs/physics-calibration.md"),
    PhysicsVariant("gpu-exp-2.0", "GPU clock-power exponent 2.0 (calibrated 2.5)", _GPU_EXP_SOURCE,
                   gpu_clock_power_exponent=2.0),
    PhysicsVariant("gpu-exp-3.2", "GPU clock-power exponent 3.2 (calibrated 2.5)", _GPU_EXP_SOURCE,
                   gpu_clock_power_exponent=3.2),
    PhysicsVariant("fixed-share-high", "GPU non-clock share of dynamic power 0.35 (calibrated 0.22)", _SHARE_SOURCE,
                   gpu_fixed_dynamic_frac=0.35),
    PhysicsVariant("compute-bound", "every job's memory-bound share x 0.6 (jobs more compute-bound than their kind's "
                   "prior)", _COMPUTE_SOURCE, memory_bound_scale=0.6),
    PhysicsVariant("noisy-telemetry", "per-GPU telemetry noise x 2 (power, clock, activity ratios, phase mix)",
                   _NOISE_SOURCE, telemetry_noise_scale=2.0),
    PhysicsVariant("cpu-exp-low", "CPU clock-power exponent 1.2 (calibrated 1.5)", _CPU_EXP_SOURCE,
                   cpu_freq_power_exponent=1.2),
    PhysicsVariant("cpu-exp-high", "CPU clock-power exponent 2.0 (calibrated 1.5)", _CPU_EXP_SOURCE,
                   cpu_freq_power_exponent=2.0),
)

VARIANTS: Final[Mapping[str, PhysicsVariant]] = {v.name: v for v in (
    *_BASE,
    # Every change in the direction that makes a cap cost more time than the controller's model predicts:
    # a lower exponent and a larger fixed share take the clock lower for the same watts, compute-bound jobs
    # lose more speed for the same clock.
    PhysicsVariant(ALL, "all at once, each toward a costlier cap: GPU k 2.0, non-clock share 0.35, memory-bound "
                   "share x 0.6, CPU k 1.2", "each part's own (above)", gpu_clock_power_exponent=2.0,
                   gpu_fixed_dynamic_frac=0.35, cpu_freq_power_exponent=1.2, memory_bound_scale=0.6),
)}
"""Every variant by name, the calibrated physics first."""


def physics_variant(name: str) -> PhysicsVariant:
    """The variant called ``name``; a ValueError lists the names there are."""
    try:
        return VARIANTS[name.strip()]
    except KeyError:
        raise ValueError(f"physics variant {name!r}: not one of {', '.join(VARIANTS)}") from None


def _source(v: PhysicsVariant) -> str:
    return f"assumed:physics variant {v.name} (benchmark robustness run; calibrated values in docs/physics-calibration.md)"


def variant_profile(profile: Profile, v: PhysicsVariant) -> Profile:
    """The profile the emulator runs under ``v``: only ``physics`` changes (the sections it moves say so in
    their ``source``); the same object back when ``v`` changes no physics."""
    if not v.changes_profiles:
        return profile
    ph = profile.physics
    cpu = ph.cpu
    if v.cpu_freq_power_exponent is not None:
        cpu = cpu.model_copy(update={"freq_power_exponent": v.cpu_freq_power_exponent, "source": _source(v)})
    gpu = ph.gpu
    gpu_update: dict[str, float | str] = {}
    if v.gpu_clock_power_exponent is not None:
        gpu_update["clock_power_exponent"] = v.gpu_clock_power_exponent
    if v.gpu_fixed_dynamic_frac is not None:
        gpu_update["fixed_dynamic_frac"] = v.gpu_fixed_dynamic_frac
    if gpu is not None and gpu_update:
        gpu = gpu.model_copy(update={**gpu_update, "source": _source(v)})
    return profile.model_copy(update={"physics": ph.model_copy(update={"cpu": cpu, "gpu": gpu})})


def _shift(c: float, scale: float) -> float:
    """A compute share with its memory-bound part ``1 - c`` scaled (kept within [0, 1])."""
    return min(1.0, max(0.0, 1.0 - (1.0 - c) * scale))


def variant_job(job: Job, v: PhysicsVariant) -> Job:
    """The job the engine runs under ``v``: its compute shares moved (the top-level ones and each serving
    phase's, so an aggregated job's top-level value stays its phases' time-weighted mean: the shift is affine);
    kind, class, requests and work unchanged, so the Pod the controller reads is the same."""
    if not v.changes_jobs:
        return job
    k = v.memory_bound_scale
    sens = Sensitivity(cpu=_shift(job.sensitivity.cpu, k), gpu=_shift(job.sensitivity.gpu, k))
    phases = None if job.phases is None else [
        p.model_copy(update={"sensitivity": PhaseSensitivity(gpu=_shift(p.sensitivity.gpu, k))}) for p in job.phases]
    return job.model_copy(update={"sensitivity": sens, "phases": phases})


def variant_jobs(jobs: Iterable[Job], v: PhysicsVariant) -> list[Job]:
    return [variant_job(j, v) for j in jobs]
