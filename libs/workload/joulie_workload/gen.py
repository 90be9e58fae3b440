"""workloadgen: synthetic traces, deterministic per seed. Pure: returns jobs, writes nothing.

Model (every draw from one ``random.Random(seed)``, in a fixed order, so a seed is a trace):

- arrivals: a Poisson process, exponential inter-arrival times with mean ``mean_interarrival_s``;
  with ``diurnal_amplitude`` a > 0, a daily cycle: the rate is ``(1 + a sin(2 pi t / day_s)) /
  mean_interarrival_s`` (peak over trough (1 + a) / (1 - a); a = 0.6 gives 4, the order of the
  daily cycles in the Lublin-Feitelson model of parallel workloads and the logs it was fitted to),
  made by warping the homogeneous arrival times through the cycle's cumulative rate, so the jobs
  themselves (every other draw) are the same as without it;
- class: ``performance`` with probability ``perf_ratio``, ``eco`` with ``eco_ratio``, else ``general``;
- kind (``kinds``): drawn with the shares of ``kind_shares`` (``--kind-shares``, e.g.
  ``gpu-training=0.25,gpu-inference=0.15,cpu-compute=0.4,cpu-memory=0.2``); without it, from
  ``gpu_ratio``: a GPU job with probability ``gpu_ratio`` (training 5/8, inference 3/8 of those),
  else a CPU job (compute 2/3, memory 1/3). The default (``gpu_ratio`` 0.4) is exactly the shares
  above;
- CPU job: 4/8/16/32 cores (weights 4:3:2:1), runtime log-normal (median ``cpu_median_s``,
  sigma 0.8, clamped to [30 s, 12 x median]), ``cpuUnits = cores x runtime``, CPU utilisation and
  CPU sensitivity (compute share) drawn from the kind's Beta distributions (``kinds``);
- GPU job: 1/2/4/8 GPUs with the original workloadgen's prior (0.80/0.10/0.07/0.03), 4 cores per
  GPU, runtime log-normal (median ``gpu_median_s``, sigma 0.8, clamped to [60 s, 12 x median]),
  ``gpuUnits = gpus x runtime``, ``cpuUnits = 0.2 x cores x runtime`` (the input pipeline), GPU
  utilisation (natural draw) and GPU sensitivity (compute share) from the kind's distributions,
  CPU utilisation 0.3 and CPU sensitivity from ``kinds.HOST_FEED_COMPUTE_SHARE``;
- aggregated ``gpu-inference`` (a kind with phases): GPUs, cores, runtime and work as any GPU job,
  then the prefill time share (rounded to 4 decimals; decode gets the rest), the prefill phase's
  u and c, the decode phase's u and c, and the host's CPU sensitivity, in that order; the record
  carries ``phases`` and, at the top level, their time-weighted means (``kinds``, ``trace``).
  The serving kinds ``gpu-inference-prefill`` and ``gpu-inference-decode`` are one-phase GPU
  jobs (no ``phases``), drawn like ``gpu-training``. Traces without ``gpu-inference`` are what
  the generator wrote before phases existed, draw for draw, for the same seed and options.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from joulie_workload.kinds import HOST_FEED_COMPUTE_SHARE, HOST_FEED_CPU_UTIL, KINDS, SPECS, KindSpec, WorkloadKind
from joulie_workload.trace import Job, phases_field

GPU_COUNTS = (1, 2, 4, 8)
GPU_PRIOR = (0.80, 0.10, 0.07, 0.03)
CPU_CORES = (4, 8, 16, 32)
CPU_WEIGHTS = (4, 3, 2, 1)
LEGACY_KINDS: tuple[WorkloadKind, ...] = KINDS[:4]
"""The kinds ``gpu_ratio`` mixes (the serving kinds only come through ``kind_shares``)."""


@dataclass(frozen=True)
class GenOptions:
    jobs: int = 50
    seed: int = 1
    mean_interarrival_s: float = 30.0
    perf_ratio: float = 0.3
    eco_ratio: float = 0.1
    gpu_ratio: float = 0.4
    kind_shares: Mapping[WorkloadKind, float] | None = None
    """Share of each kind (summing to 1); None: from ``gpu_ratio`` (see the module docstring)."""
    cpu_median_s: float = 300.0
    gpu_median_s: float = 600.0
    namespace: str = "default"
    prefix: str = "job"
    diurnal_amplitude: float = 0.0
    """0: a homogeneous Poisson process; 0 < a < 1: arrivals follow a daily cycle (module docstring)."""
    day_s: float = 86400.0
    """The cycle's period (a compressed day, to run a week of lulls in less virtual time)."""

    def check(self) -> None:
        problems = []
        if self.jobs < 0:
            problems.append(f"--jobs: {self.jobs} is negative")
        if not (self.mean_interarrival_s >= 0 and math.isfinite(self.mean_interarrival_s)):
            problems.append(f"--mean-interarrival-s: {self.mean_interarrival_s} must be a finite number >= 0")
        for name, v in (("--perf-ratio", self.perf_ratio), ("--eco-ratio", self.eco_ratio), ("--gpu-ratio", self.gpu_ratio)):
            if not 0 <= v <= 1:
                problems.append(f"{name}: {v} is not within 0..1")
        if self.perf_ratio + self.eco_ratio > 1:
            problems.append(f"--perf-ratio + --eco-ratio: {self.perf_ratio + self.eco_ratio:g} exceeds 1")
        for name, v in (("--cpu-median-s", self.cpu_median_s), ("--gpu-median-s", self.gpu_median_s)):
            if not (v > 0 and math.isfinite(v)):
                problems.append(f"{name}: {v} must be a finite number > 0")
        if not 0 <= self.diurnal_amplitude < 1:
            problems.append(f"--diurnal-amplitude: {self.diurnal_amplitude} is not within 0..1 (1 excluded)")
        if not (self.day_s > 0 and math.isfinite(self.day_s)):
            problems.append(f"--day-s: {self.day_s} must be a finite number > 0")
        if self.kind_shares is not None and abs(sum(self.kind_shares.values()) - 1) > 1e-6:
            problems.append(f"--kind-shares: shares sum to {sum(self.kind_shares.values()):g}, not 1")
        if problems:
            raise ValueError("; ".join(problems))

    def shares(self) -> tuple[list[WorkloadKind], list[float]]:
        """Kinds and their shares, in ``KINDS`` order (from ``gpu_ratio``: the first four kinds only)."""
        if self.kind_shares is not None:
            return list(KINDS), [self.kind_shares.get(k, 0.0) for k in KINDS]
        g = self.gpu_ratio
        return list(LEGACY_KINDS), [g * 5 / 8, g * 3 / 8, (1 - g) * 2 / 3, (1 - g) / 3]


def _runtime(rnd: random.Random, median_s: float, lo_s: float) -> float:
    return min(max(rnd.lognormvariate(math.log(median_s), 0.8), lo_s), 12 * median_s)


def diurnal_time(tau_s: float, amplitude: float, day_s: float) -> float:
    """The time t at which the cycle's cumulative rate, in units of the mean rate, reaches ``tau_s``:
    ``t - a day/(2 pi) (cos(2 pi t/day) - 1) = tau`` (increasing in t for a < 1; bisection)."""
    if amplitude == 0:
        return tau_s
    w = 2 * math.pi / day_s

    def cumulative(t: float) -> float:
        return t - amplitude / w * (math.cos(w * t) - 1)

    lo, hi = tau_s - 2 * amplitude / w, tau_s + 2 * amplitude / w
    lo = max(lo, 0.0)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cumulative(mid) < tau_s else (lo, mid)
    return (lo + hi) / 2


def _phased_gpu_record(rnd: random.Random, spec: KindSpec, opts: GenOptions) -> dict[str, Any]:
    """A GPU job of a phased kind (aggregated ``gpu-inference``): GPUs and runtime as every GPU job,
    then the first phase's time share, each phase's u and c, the host's c; top level = time-weighted means."""
    gpus = rnd.choices(GPU_COUNTS, GPU_PRIOR)[0]
    cores = 4 * gpus
    runtime = _runtime(rnd, opts.gpu_median_s, 60.0)
    assert spec.first_phase_share is not None and len(spec.phases) == 2, spec.name
    first = round(spec.first_phase_share.draw(rnd), 4)
    # 1 - first, rounded, sums back to 1 within the trace's 1e-6.
    shares = (first, round(1.0 - first, 4))
    drawn = []
    for p, share in zip(spec.phases, shares, strict=True):
        u = round(p.natural_draw.draw(rnd), 3)
        c = round(p.compute_share.draw(rnd), 3)
        drawn.append((p.name, share, c, u))
    host_c = round(HOST_FEED_COMPUTE_SHARE.draw(rnd), 3)
    phases, mean_c, mean_u = phases_field(drawn)
    return {
        "requests": {"cpu": cores, "gpu": gpus, "memoryMi": 16384 * gpus},
        "work": {"cpuUnits": round(0.2 * cores * runtime, 3), "gpuUnits": round(gpus * runtime, 3)},
        "utilization": {"cpu": HOST_FEED_CPU_UTIL, "gpu": mean_u},
        "sensitivity": {"cpu": host_c, "gpu": mean_c},
        "phases": phases,
    }


def generate(opts: GenOptions) -> list[Job]:
    opts.check()
    rnd = random.Random(opts.seed)
    kinds, shares = opts.shares()
    jobs: list[Job] = []
    t = 0.0
    width = max(5, len(str(opts.jobs)))
    for i in range(opts.jobs):
        if i and opts.mean_interarrival_s > 0:
            t += rnd.expovariate(1.0 / opts.mean_interarrival_s)
        u = rnd.random()
        cls = "performance" if u < opts.perf_ratio else "eco" if u < opts.perf_ratio + opts.eco_ratio else "general"
        kind = rnd.choices(kinds, shares)[0]
        spec = SPECS[kind]
        if spec.phases:
            record = _phased_gpu_record(rnd, spec, opts)
        elif spec.gpu:
            gpus = rnd.choices(GPU_COUNTS, GPU_PRIOR)[0]
            cores = 4 * gpus
            runtime = _runtime(rnd, opts.gpu_median_s, 60.0)
            record = {
                "requests": {"cpu": cores, "gpu": gpus, "memoryMi": 16384 * gpus},
                "work": {"cpuUnits": round(0.2 * cores * runtime, 3), "gpuUnits": round(gpus * runtime, 3)},
                "utilization": {"cpu": HOST_FEED_CPU_UTIL, "gpu": round(spec.natural_draw.draw(rnd), 3)},
                "sensitivity": {"cpu": round(HOST_FEED_COMPUTE_SHARE.draw(rnd), 3), "gpu": round(spec.compute_share.draw(rnd), 3)},
            }
        else:
            cores = rnd.choices(CPU_CORES, CPU_WEIGHTS)[0]
            runtime = _runtime(rnd, opts.cpu_median_s, 30.0)
            record = {
                "requests": {"cpu": cores, "gpu": 0, "memoryMi": 2048 * cores},
                "work": {"cpuUnits": round(cores * runtime, 3), "gpuUnits": 0.0},
                "utilization": {"cpu": round(spec.natural_draw.draw(rnd), 3), "gpu": 0.0},
                "sensitivity": {"cpu": round(spec.compute_share.draw(rnd), 3), "gpu": 0.0},
            }
        jobs.append(Job.model_validate({
            "type": "job",
            "jobId": f"{opts.prefix}-{i:0{width}d}",
            "submitTimeOffsetSec": round(diurnal_time(t, opts.diurnal_amplitude, opts.day_s), 3),
            "class": cls,
            "workloadKind": kind,
            "namespace": opts.namespace,
            **record,
        }))
    return jobs
