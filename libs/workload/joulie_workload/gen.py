"""workloadgen: synthetic traces, deterministic per seed. Pure: returns jobs, writes nothing.

Model (every draw from one ``random.Random(seed)``, in a fixed order, so a seed is a trace):

- arrivals: a Poisson process, exponential inter-arrival times with mean ``mean_interarrival_s``;
- class: ``performance`` with probability ``perf_ratio``, ``eco`` with ``eco_ratio``, else ``general``;
- kind: a GPU job with probability ``gpu_ratio``, else a CPU job;
- CPU job: 4/8/16/32 cores (weights 4:3:2:1), runtime log-normal (median ``cpu_median_s``,
  sigma 0.8, clamped to [30 s, 12 x median]), ``cpuUnits = cores x runtime``, CPU utilisation
  U(0.6, 0.95), CPU sensitivity U(0.5, 1.0);
- GPU job: 1/2/4/8 GPUs with the original workloadgen's prior (0.80/0.10/0.07/0.03), 4 cores per
  GPU, runtime log-normal (median ``gpu_median_s``, sigma 0.8, clamped to [60 s, 12 x median]),
  ``gpuUnits = gpus x runtime``, ``cpuUnits = 0.2 x cores x runtime`` (the input pipeline), GPU
  utilisation U(0.7, 0.95), GPU sensitivity U(0.5, 1.0), CPU sensitivity U(0.2, 0.5).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from joulie_workload.trace import Job

GPU_COUNTS = (1, 2, 4, 8)
GPU_PRIOR = (0.80, 0.10, 0.07, 0.03)
CPU_CORES = (4, 8, 16, 32)
CPU_WEIGHTS = (4, 3, 2, 1)


@dataclass(frozen=True)
class GenOptions:
    jobs: int = 50
    seed: int = 1
    mean_interarrival_s: float = 30.0
    perf_ratio: float = 0.3
    eco_ratio: float = 0.1
    gpu_ratio: float = 0.4
    cpu_median_s: float = 300.0
    gpu_median_s: float = 600.0
    namespace: str = "default"
    prefix: str = "job"

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
        if problems:
            raise ValueError("; ".join(problems))


def _runtime(rnd: random.Random, median_s: float, lo_s: float) -> float:
    return min(max(rnd.lognormvariate(math.log(median_s), 0.8), lo_s), 12 * median_s)


def generate(opts: GenOptions) -> list[Job]:
    opts.check()
    rnd = random.Random(opts.seed)
    jobs: list[Job] = []
    t = 0.0
    width = max(5, len(str(opts.jobs)))
    for i in range(opts.jobs):
        if i and opts.mean_interarrival_s > 0:
            t += rnd.expovariate(1.0 / opts.mean_interarrival_s)
        u = rnd.random()
        cls = "performance" if u < opts.perf_ratio else "eco" if u < opts.perf_ratio + opts.eco_ratio else "general"
        if rnd.random() < opts.gpu_ratio:
            gpus = rnd.choices(GPU_COUNTS, GPU_PRIOR)[0]
            cores = 4 * gpus
            runtime = _runtime(rnd, opts.gpu_median_s, 60.0)
            record = {
                "requests": {"cpu": cores, "gpu": gpus, "memoryMi": 16384 * gpus},
                "work": {"cpuUnits": round(0.2 * cores * runtime, 3), "gpuUnits": round(gpus * runtime, 3)},
                "utilization": {"cpu": 0.3, "gpu": round(rnd.uniform(0.7, 0.95), 3)},
                "sensitivity": {"cpu": round(rnd.uniform(0.2, 0.5), 3), "gpu": round(rnd.uniform(0.5, 1.0), 3)},
            }
        else:
            cores = rnd.choices(CPU_CORES, CPU_WEIGHTS)[0]
            runtime = _runtime(rnd, opts.cpu_median_s, 30.0)
            record = {
                "requests": {"cpu": cores, "gpu": 0, "memoryMi": 2048 * cores},
                "work": {"cpuUnits": round(cores * runtime, 3), "gpuUnits": 0.0},
                "utilization": {"cpu": round(rnd.uniform(0.6, 0.95), 3), "gpu": 0.0},
                "sensitivity": {"cpu": round(rnd.uniform(0.5, 1.0), 3), "gpu": 0.0},
            }
        jobs.append(Job.model_validate({
            "type": "job",
            "jobId": f"{opts.prefix}-{i:0{width}d}",
            "submitTimeOffsetSec": round(t, 3),
            "class": cls,
            "namespace": opts.namespace,
            **record,
        }))
    return jobs
