"""Named benchmark scenarios (``--preset``): a kind mix, an arrival rate, a trace length and a cluster,
set as the flags' defaults (a flag given on the command line still wins); and the allocation a run reaches.

``gpu-busy``: the GPUs allocated most of the time, beside the default mix (``--gpu-ratio 0.4``, one
inter-arrival of 40 s, GPUs about 40 % allocated). Eight jobs in ten are GPU jobs (training and
aggregated serving, half each), the rest CPU jobs. Its arrival rate was chosen by measurement (A, 300
jobs, seeds 1-4; benchmark/README.md): one arrival every 60 s offers on average 95 % of the 16 GPUs' time
(sum of GPUs x ideal runtime over the arrival span: 0.83-1.08 by seed) and reaches 85 % allocated in the
open window (77 % over the whole run, the drain after the last arrival included) with the last third of
the jobs waiting no longer than the first (no growing queue); 55 s offers 104 % (90 % / 81 %), 70 s gives
77 % / 71 %. Pure.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from joulie_bench.arms import ARMS
from joulie_bench.result import RunResult
from joulie_bench.stats import ci95


@dataclass(frozen=True)
class Preset:
    name: str
    summary: str
    defaults: Mapping[str, object] = field(default_factory=dict)
    """argparse destinations and the values the preset gives them."""


PRESETS: Final[Mapping[str, Preset]] = {p.name: p for p in (
    Preset("gpu-busy", "GPUs allocated most of the time: 80 % GPU jobs (training and serving), one arrival every 60 s, "
           "300 jobs, 4 Xeon 2S + 2 H100 NVL x8",
           {"kind_shares": "gpu-training=0.4,gpu-inference=0.4,cpu-compute=0.1,cpu-memory=0.1",
            "mean_interarrival_s": 60.0, "jobs": 300, "nodes": "intel-xeon-2s-rapl*4,nvidia-h100-nvl-8gpu*2"}),
)}


def apply_preset(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> Preset | None:
    """Set ``--preset``'s values as the parser's defaults (so explicit flags override them); the preset, or
    None without one. An unknown name is the parser's own error (``choices``)."""
    known, _ = parser.parse_known_args(argv)
    name = getattr(known, "preset", None)
    if not name:
        return None
    preset = PRESETS[name]
    parser.set_defaults(**preset.defaults)
    return preset


def _third_waits(r: RunResult) -> tuple[float, float]:
    """Mean wait of the first and the last third of the started jobs (submit order): a queue that keeps
    growing shows as a last third waiting far longer than the first."""
    w = r.waits_s
    k = max(1, len(w) // 3)
    head, tail = w[:k], w[-k:]
    return (sum(head) / len(head) if head else 0.0, sum(tail) / len(tail) if tail else 0.0)


def allocation_lines(results: Sequence[RunResult], policies: Sequence[str]) -> list[str]:
    """Per arm: the share of GPU-seconds allocated over the run and inside the open window, and the mean
    wait of the first and the last third of the jobs (mean [95 % CI] over seeds)."""
    out = []
    for pol in policies:
        rs = [r for r in results if r.policy == pol]
        if not rs:
            continue
        run, open_ = (ci95([100.0 * getattr(r, k) for r in rs]) for k in ("gpu_utilisation", "open_gpu_utilisation"))
        first, last = (ci95([_third_waits(r)[i] for r in rs]).mean for i in (0, 1))
        out.append(f"{pol} {ARMS[pol].name}: GPU allocated {run.fmt(1)} % over the run, {open_.fmt(1)} % in the open "
                   f"window; mean wait of the first / last third of the jobs {first:.0f} / {last:.0f} s")
    return out
