"""Workload kinds: what a job does to the hardware, as distributions a trace generator draws from.

A kind is not the scheduling ``class`` (performance/eco/general, ``trace.CLASSES``): that says
where a job may run; the kind says how it responds to a power limit. Each kind gives, per job:

- ``compute share`` c (the trace's ``sensitivity``): the share of the job's time at full clock
  that scales with the clock (see ``joulie_simulator.physics_speed``); the rest waits on memory;
- ``natural draw`` u (the trace's ``utilization``): for GPU work, the board's draw as a share of
  its dynamic range (``physics_gpu``); for CPU work, the share of the requested cores' dynamic
  power the job draws (memory-stalled cores draw less).

Each is a Beta(a, b) distribution (mean a / (a + b)), drawn with ``random.Random.betavariate``.
The GPU compute shares are fitted so that a job with the median share reproduces the published
capping measurements (docs/physics-calibration.md): transformer training on a V100 capped to 150 W
(McDonald et al. 2022) and LLaMA decode on V100/A100 capped 250 -> 175 W (Samsi et al. 2023).

=================  ===============  =====================  ================================
kind               device           compute share c        natural draw u
=================  ===============  =====================  ================================
gpu-training       GPU (+ 0.2 CPU)  Beta(13, 12), 0.52     GPU Beta(17, 3), 0.85
gpu-inference      GPU (+ 0.2 CPU)  Beta(6.5, 18.5), 0.26  GPU Beta(7, 3), 0.70
cpu-compute        CPU              Beta(18, 1), 0.95      CPU Beta(9, 1), 0.90
cpu-memory         CPU              Beta(3.5, 6.5), 0.35   CPU Beta(7, 3), 0.70
=================  ===============  =====================  ================================

GPU jobs feed their boards from the host: CPU compute share Beta(2, 4) (mean 0.33), CPU
utilisation 0.3. A trace without ``kind`` gets ``gpu-training`` when it requests GPUs, else
``cpu-compute`` (``default_kind``), and keeps its own ``sensitivity`` and ``utilization``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final, Literal

WorkloadKind = Literal["gpu-training", "gpu-inference", "cpu-compute", "cpu-memory"]
KINDS: Final[tuple[WorkloadKind, ...]] = ("gpu-training", "gpu-inference", "cpu-compute", "cpu-memory")


@dataclass(frozen=True)
class Beta:
    a: float
    b: float

    @property
    def mean(self) -> float:
        return self.a / (self.a + self.b)

    def draw(self, rnd: random.Random) -> float:
        return rnd.betavariate(self.a, self.b)


@dataclass(frozen=True)
class KindSpec:
    name: WorkloadKind
    gpu: bool
    compute_share: Beta
    """c of the kind's main device (the GPU for GPU kinds)."""
    natural_draw: Beta
    """u of the kind's main device."""


HOST_FEED_COMPUTE_SHARE: Final = Beta(2, 4)
HOST_FEED_CPU_UTIL: Final = 0.3

SPECS: Final[dict[WorkloadKind, KindSpec]] = {
    "gpu-training": KindSpec("gpu-training", True, Beta(13, 12), Beta(17, 3)),
    "gpu-inference": KindSpec("gpu-inference", True, Beta(6.5, 18.5), Beta(7, 3)),
    "cpu-compute": KindSpec("cpu-compute", False, Beta(18, 1), Beta(9, 1)),
    "cpu-memory": KindSpec("cpu-memory", False, Beta(3.5, 6.5), Beta(7, 3)),
}


def default_kind(gpus: int) -> WorkloadKind:
    """The kind of a job whose trace record names none (traces written before kinds existed)."""
    return "gpu-training" if gpus > 0 else "cpu-compute"


def parse_shares(text: str) -> dict[WorkloadKind, float]:
    """``gpu-training=0.3,cpu-compute=0.7`` -> shares (normalised to sum 1; missing kinds 0)."""
    out: dict[WorkloadKind, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        kind = name.strip()
        try:
            share = float(value)
        except ValueError:
            share = -1.0
        if not sep or kind not in KINDS or not share >= 0:
            raise ValueError(f"--kind-shares: {part!r} is not KIND=SHARE with KIND one of {', '.join(KINDS)} and SHARE >= 0")
        out[kind] = share
    total = sum(out.values())
    if total <= 0:
        raise ValueError(f"--kind-shares: {text!r} gives no kind a share above 0")
    return {k: v / total for k, v in out.items()}
