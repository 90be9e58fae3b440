"""Workload kinds: what a job does to the hardware, as distributions a trace generator draws from.

A kind is not the scheduling ``class`` (performance/eco/general, ``trace.CLASSES``): that says
where a job may run; the kind says how it responds to a power limit. Each kind gives, per job:

- ``compute share`` c (the trace's ``sensitivity``): the share of the job's time at full clock
  that scales with the clock (see ``joulie_simulator.physics.speed``); the rest waits on memory;
- ``natural draw`` u (the trace's ``utilization``): for GPU work, the board's draw as a share of
  its dynamic range, ``P_nat = idle + (natural_max - idle) * u**util_gamma``
  (``joulie_simulator.physics.gpu``); for CPU work, the share of the requested cores' dynamic
  power the job draws (memory-stalled cores draw less).

Each is a Beta(a, b) distribution (mean a / (a + b)), drawn with ``random.Random.betavariate``.
The GPU compute shares of gpu-training and gpu-inference are fitted so that a job with the mean
share reproduces the published capping measurements (docs/physics-calibration.md): transformer
training on a V100 capped to 150 W (McDonald et al. 2022) and LLaMA inference on V100/A100 capped
250 -> 175 W (Samsi et al. 2023). gpu-training, cpu-compute and cpu-memory keep the distributions
they had when kinds were introduced; gpu-inference keeps its fitted mean c (0.26) but is now two
phases (below; before: c Beta(6.5, 18.5), u Beta(7, 3), one phase).

=====================  ===============  =====================  ================================
kind                   device           compute share c        natural draw u
=====================  ===============  =====================  ================================
gpu-training           GPU (+ 0.2 CPU)  Beta(13, 12), 0.52     GPU Beta(17, 3), 0.85
gpu-inference          GPU (+ 0.2 CPU)  phases, mean 0.26      GPU phases, mean 0.64
cpu-compute            CPU              Beta(18, 1), 0.95      CPU Beta(9, 1), 0.90
cpu-memory             CPU              Beta(3.5, 6.5), 0.35   CPU Beta(7, 3), 0.70
gpu-inference-prefill  GPU (+ 0.2 CPU)  Beta(18, 2), 0.90      GPU Beta(19, 1), 0.95
gpu-inference-decode   GPU (+ 0.2 CPU)  Beta(2, 12), 0.14      GPU Beta(1.4, 1), 0.58
=====================  ===============  =====================  ================================

LLM serving (issue 34). ``gpu-inference-prefill`` and ``gpu-inference-decode`` are disaggregated
serving (prefill and decode in separate Pods, as Splitwise, A6, runs them): one phase each.
``gpu-inference`` is aggregated serving (both phases in one Pod, continuous batching): a job is two
phases, ``prefill`` for a share ``s`` of its busy time and ``decode`` for ``1 - s``, each with its
own c and u drawn from the single-phase kinds' distributions; its top-level c and u are the
time-weighted means ``s * prefill + (1 - s) * decode`` (the trace's ``phases`` field carries the
parts; ``trace``). Source IDs are those of the issue's research notes (gpu-physics-citations.md):
A1 Ma et al. 2026 arXiv 2605.11999 (P), A2 ML.ENERGY 2026 (P, digitized), A3 Maliakel et al. 2025
arXiv 2501.08219 (P; its GPU S), A4 VoltanaLLM arXiv 2509.04827 (P), A7 LLM Garage power sweep (P,
a consumer board). Converting a share of TDP to u uses the H100 SXM profile
(nvidia-h100-sxm-8gpu.yaml: idle 70 W, natural_max 700 W = TDP, util_gamma 1.02):
``u = ((pct/100 * 700 - 70) / 630) ** (1 / 1.02)``; e.g. 20 % -> 0.116, 43 % -> 0.374,
60 % -> 0.562, 87 % -> 0.858, 96 % -> 0.956, 99 % -> 0.989. Percentiles are the 5th and 95th.

- prefill time share s ~ Beta(11, 60), mean 0.155, 5-95 % 0.09-0.23: A3 measured decode at 77-91 %
  of inference time, so prefill at 9-23 %; taken as the 5-95 % range.
- prefill c ~ Beta(18, 2), mean 0.90, 5-95 % 0.77-0.98: prefill is GEMM-bound. A7 (RTX 3090,
  350 W, prefill tokens/s 9893 / 9326 / 8436 / 5941 at 350 / 300 / 250 / 200 W), fitted with the
  NVIDIA board shape on an assumed 3090 (idle 30 W, prefill at its 350 W): c = 0.72 at 300 W,
  0.86 at 250 W, and above 1 at 200 W (the model at c = 1 loses 27 %, the board lost 40 %): the
  measured work follows the clock at least as much as the model's c allows, so c sits near the
  top; not 1, since attention and KV-cache writes inside prefill wait on memory (assumed).
- prefill u ~ Beta(19, 1), mean 0.95 (95 % TDP), 5-95 % 0.85-1.00 (87-100 % TDP): no measurement
  of prefill alone was found; A2's largest batches, where each step batches many prompts, draw
  96-99 % TDP (Llama-3.1-8B, bs 128-256), and compute-bound prefill draws at least that.
- decode u ~ Beta(1.4, 1), mean 0.58 (62 % TDP), 5-95 % 0.12-0.97 (20-97 % TDP): memory-bound
  decode's draw grows with the batch. A1 (H200, small/medium batch): 137-300 W = 20-43 % TDP
  (u 0.12-0.37); A2 (H100 vLLM, bs 16 -> 256): 60-99 % TDP (u 0.56-0.99). The Beta's 5th and 95th
  percentiles are the lowest (A1) and the large-batch (A2, 96-99 %) draws: a wide distribution.
- decode c ~ Beta(2, 12), mean 0.143, 5-95 % 0.03-0.32: no measurement gives decode's c as a
  number; its mean is set so that aggregated ``gpu-inference`` keeps the mean c 0.26 fitted to
  Samsi et al. (whole LLaMA inference runs, prefill included): (0.26 - 0.155 x 0.90) / 0.845 =
  0.143. Checked, not fitted: A4 (A100, clock 1410 -> 1005 MHz, "sub-linear" slowdown) gives
  +5.7 % time at the mean; A3 (decode-dominated, clock x 0.063, +1-6 % time) implies c < 0.01, in
  the lower tail (a workstation GPU; a shape check only); A1 (clock lock saves up to 32 % of decode
  energy at "minimal" throughput loss) needs a low c.

Aggregated ``gpu-inference``: mean c = 0.155 x 0.90 + 0.845 x 0.143 = 0.260 (unchanged), mean u =
0.155 x 0.95 + 0.845 x 0.58 = 0.64 (67 % TDP; it was Beta(7, 3), 0.70, before phases), inside A2's
60-99 % for aggregated serving.

GPU jobs feed their boards from the host: CPU compute share Beta(2, 4) (mean 0.33), CPU
utilisation 0.3. A trace without ``kind`` gets ``gpu-training`` when it requests GPUs, else
``cpu-compute`` (``default_kind``), and keeps its own ``sensitivity`` and ``utilization``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final, Literal

WorkloadKind = Literal[
    "gpu-training", "gpu-inference", "cpu-compute", "cpu-memory", "gpu-inference-prefill", "gpu-inference-decode"
]
# The kinds added for serving come last: workloadgen picks a kind with ``random.choices`` over
# this order, and appending kinds with share 0 leaves every earlier kind's pick unchanged per draw.
KINDS: Final[tuple[WorkloadKind, ...]] = (
    "gpu-training", "gpu-inference", "cpu-compute", "cpu-memory", "gpu-inference-prefill", "gpu-inference-decode"
)
PhaseName = Literal["prefill", "decode"]
PHASES: Final[tuple[PhaseName, ...]] = ("prefill", "decode")


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
class TimeWeighted:
    """A quantity of two-phase work: ``s * first + (1 - s) * second`` with ``s ~ first_share``."""

    first_share: Beta
    first: Beta
    second: Beta

    @property
    def mean(self) -> float:
        # The three draws are independent, so the mean of the product is the product of the means.
        s = self.first_share.mean
        return s * self.first.mean + (1.0 - s) * self.second.mean

    def draw(self, rnd: random.Random) -> float:
        s = self.first_share.draw(rnd)
        return s * self.first.draw(rnd) + (1.0 - s) * self.second.draw(rnd)


@dataclass(frozen=True)
class PhaseSpec:
    """One phase of serving work: its name in a trace's ``phases`` and its c and u distributions."""

    name: PhaseName
    compute_share: Beta
    natural_draw: Beta


@dataclass(frozen=True)
class KindSpec:
    name: WorkloadKind
    gpu: bool
    compute_share: Beta | TimeWeighted
    """c of the kind's main device (the GPU for GPU kinds); for a phased kind, the time-weighted mean."""
    natural_draw: Beta | TimeWeighted
    """u of the kind's main device; for a phased kind, the time-weighted mean."""
    phases: tuple[PhaseSpec, ...] = ()
    """Empty: one phase (c and u above). Otherwise the phases a job of this kind spends its GPU time in."""
    first_phase_share: Beta | None = None
    """With ``phases``: the time share of the first phase (the rest goes to the second)."""


HOST_FEED_COMPUTE_SHARE: Final = Beta(2, 4)
HOST_FEED_CPU_UTIL: Final = 0.3

PREFILL: Final = PhaseSpec("prefill", compute_share=Beta(18, 2), natural_draw=Beta(19, 1))
DECODE: Final = PhaseSpec("decode", compute_share=Beta(2, 12), natural_draw=Beta(1.4, 1))
PREFILL_TIME_SHARE: Final = Beta(11, 60)
"""Aggregated serving's prefill share of busy time (module docstring: A3)."""

SPECS: Final[dict[WorkloadKind, KindSpec]] = {
    "gpu-training": KindSpec("gpu-training", True, Beta(13, 12), Beta(17, 3)),
    "gpu-inference": KindSpec(
        "gpu-inference", True,
        TimeWeighted(PREFILL_TIME_SHARE, PREFILL.compute_share, DECODE.compute_share),
        TimeWeighted(PREFILL_TIME_SHARE, PREFILL.natural_draw, DECODE.natural_draw),
        phases=(PREFILL, DECODE), first_phase_share=PREFILL_TIME_SHARE,
    ),
    "cpu-compute": KindSpec("cpu-compute", False, Beta(18, 1), Beta(9, 1)),
    "cpu-memory": KindSpec("cpu-memory", False, Beta(3.5, 6.5), Beta(7, 3)),
    "gpu-inference-prefill": KindSpec("gpu-inference-prefill", True, PREFILL.compute_share, PREFILL.natural_draw),
    "gpu-inference-decode": KindSpec("gpu-inference-decode", True, DECODE.compute_share, DECODE.natural_draw),
}


def is_gpu_kind(kind: str) -> bool:
    """Whether ``kind`` names a kind whose work runs on GPUs (an unknown name: False)."""
    return any(spec.gpu for name, spec in SPECS.items() if name == kind)


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
