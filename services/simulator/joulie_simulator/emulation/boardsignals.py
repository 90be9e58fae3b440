"""Each emulated board's activity as its tools report it, per tick: ``physics.gpusignals`` on the live node
(drawn when the tools first read a tick, ``Emulator.shown``).

The benchmark's per-GPU telemetry (``joulie_bench.gputelemetry``) and the live emulator use the same
model, ``physics.gpusignals.board_signals``: a board held by a job (``Load.gpu_jobs``) reports the
utilisation, SM clock and DCGM SM / tensor / DRAM activity of the job's phases (its ``gpu_phases``,
else one phase of its compute share at the board's draw) under the board's enforced limit and lock,
with the job's own activity constants (``draw_traits(seed, job_id)``: the same job reads alike in the
benchmark and on the cluster for one seed) and the documented noise. The noise is seeded per node
and tick (one generator drawn board after board), so a run is reproducible and no generator state is kept.
Cost: about 25 µs per busy board and tick on this machine (the operating point of a board's phases,
limit and lock is computed once while they hold: ``gpusignals._operating_memo``; 75 µs before), nothing
for an idle node.

A board nobody holds but that carries a load (a harness's ``SetNodeLoad`` without jobs) runs one phase
of compute share ``UNKNOWN_COMPUTE_SHARE`` with the default constants. An idle board reads utilisation
and activity 0 at its lowest SM clock (an idle board drops to its lowest P-state). Pure.
"""

from __future__ import annotations

import zlib
from functools import lru_cache

import numpy as np

from joulie_hwprofiles.schema import Profile
from joulie_simulator.physics.gpu import Phase
from joulie_simulator.physics.gpusignals import ActivityTraits, TelemetryNoise, board_signals, draw_traits
from joulie_simulator.physics.model import GpuReading, GpuTruth, NodeState, moved

UNKNOWN_COMPUTE_SHARE = 0.5
"""The compute share of a board's load that no job describes (a harness's load)."""
NOISE = TelemetryNoise()
DEFAULT_TRAITS = ActivityTraits()


def with_signals(profile: Profile, state: NodeState, seed: int, noise: TelemetryNoise = NOISE) -> NodeState:
    """``state`` with each NVIDIA board's ``signals`` for this tick."""
    spec, phys = profile.gpus, profile.physics.gpu
    # AMD boards: amd-smi has no DCGM and the agent reads no activity from them.
    if spec is None or phys is None or not state.gpus or spec.vendor != "nvidia":
        return state
    load = state.load
    idle = _idle(spec.sm_clock_min_mhz)
    busy = {i for i, u in enumerate(load.gpu_util) if u > 0} | {j.index for j in load.gpu_jobs}
    if not busy and all(g.signals is idle for g in state.gpus):
        return state  # an idle node (most of a large cluster): nothing to draw, nothing to replace
    jobs = {j.index: j for j in load.gpu_jobs}
    # One generator per node and tick, drawn board after board: reproducible, and no state kept.
    rng = np.random.default_rng([seed, zlib.crc32(state.name.encode()), state.tick])
    out: list[GpuTruth] = []
    for g in state.gpus:
        util = load.gpu_util[g.index] if g.index < len(load.gpu_util) else 0.0
        job = jobs.get(g.index)
        if g.index not in busy:
            out.append(g if g.signals is idle else moved(g, {"signals": idle}))
            continue
        phases = load.gpu_phases[g.index] if g.index < len(load.gpu_phases) else ()
        if not phases:
            c = job.compute_share if job is not None else UNKNOWN_COMPUTE_SHARE
            phases = (Phase(1.0, c, util),)
        traits = _traits(seed, job.job_id) if job is not None else DEFAULT_TRAITS
        lock = g.lock_max_mhz / spec.sm_clock_max_mhz if g.lock_max_mhz is not None else 1.0
        s = board_signals(
            phys, spec.sm_clock_max_mhz, phases, g.enforced_w, min(1.0, lock), traits, rng, noise, power_w=g.power_w
        )
        out.append(
            moved(g, {"signals": GpuReading(s.utilization, s.sm_clock_mhz, s.sm_active, s.tensor_active, s.dram_active)})
        )
    return moved(state, {"gpus": tuple(out)})


@lru_cache(maxsize=4096)
def _traits(seed: int, job_id: str) -> ActivityTraits:
    return draw_traits(seed, job_id)


@lru_cache(maxsize=64)
def _idle(min_mhz: float) -> GpuReading:
    return GpuReading(0.0, float(min_mhz), 0.0, 0.0, 0.0)
