"""The per-GPU samples a node's exporter gives the controller, for each running GPU Pod, each reconcile.

A real node exports, per board, what NVML and DCGM read (``joulie_telemetry.vocabulary.GPU_METRICS``);
the controller's shell reads them back by Pod (the boards a Pod holds) and hands them to ``reconcile``
as ``Snapshot.gpu_samples``. Here the emulator's truth takes the exporter's place: for each running job
the simulator's ``board_signals`` of each board it holds (its phases under the variant's physics, the
board's enforced limit and clock lock, the job's own activity constants, with noise), turned into the
controller's ``GpuSample``. What the controller gets is only what a node exports: never the job's
compute share or draw (``truth`` keeps those for the benchmark's own plots).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from joulie_controller.api import GpuSample
from joulie_hwprofiles.schema import Profile
from joulie_simulator.api import (
    ActivityTraits,
    Emulator,
    Engine,
    Phase,
    TelemetryNoise,
    board_signals,
    draw_traits,
    job_phases,
    lock_ratio,
)
from joulie_workload.trace import Job

TELEMETRY_STREAM = 35
"""Mixed into the run's seed so the telemetry's noise is its own stream (the trace's draws stay as they were)."""


def phases_of(job: Job) -> tuple[Phase, ...]:
    """The job's GPU work as phases: its serving phases, else one phase of its compute share and draw."""
    return job_phases(job) or (Phase(1.0, job.sensitivity.gpu, job.utilization.gpu),)


@dataclass
class GpuTelemetry:
    """The exporter of every node: samples per Pod from the emulator's boards (``seed``: the run's)."""

    seed: int
    noise: TelemetryNoise = field(default_factory=TelemetryNoise)
    _rng: np.random.Generator = field(init=False)
    _traits: dict[str, ActivityTraits] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng([self.seed, TELEMETRY_STREAM])

    def traits(self, job_id: str) -> ActivityTraits:
        if job_id not in self._traits:
            self._traits[job_id] = draw_traits(self.seed, job_id)
        return self._traits[job_id]

    def samples(
        self, emu: Emulator, engine: Engine, profiles: Mapping[str, Profile], pod_keys: Mapping[str, str]
    ) -> dict[str, list[GpuSample]]:
        """``{"namespace/name": [one GpuSample per board the Pod holds]}`` for every running GPU job on a
        node that is on. ``profiles``: the emulator's (true) profile per node; ``pod_keys``: job id -> Pod key."""
        out: dict[str, list[GpuSample]] = {}
        for r in engine.running():
            if r.job.requests.gpu <= 0 or not r.gpu_indices or emu.power_state(r.node) != "on":
                continue
            prof = profiles[r.node]
            g, spec = prof.physics.gpu, prof.gpus
            if g is None or spec is None:
                continue
            boards = emu.node(r.node).state.gpus
            phases, traits = phases_of(r.job), self.traits(r.job.job_id)
            got = []
            for i in r.gpu_indices:
                if i >= len(boards):
                    continue
                b = boards[i]
                s = board_signals(
                    g,
                    spec.sm_clock_max_mhz,
                    phases,
                    b.enforced_w,
                    lock_ratio(prof, b.lock_max_mhz),
                    traits,
                    self._rng,
                    self.noise,
                    power_w=b.power_w,
                )
                got.append(
                    GpuSample(
                        power_w=s.power_w,
                        clock_ratio=s.clock_ratio,
                        utilization=s.utilization,
                        sm_active=s.sm_active,
                        tensor_active=s.tensor_active,
                        dram_active=s.dram_active,
                        age_s=0.0,
                    )
                )
            if got:
                out[pod_keys[r.job.job_id]] = got
        return out


def boards(emu: Emulator, engine: Engine, pod_keys: Mapping[str, str]) -> dict[tuple[str, str], tuple[int, ...]]:
    """``{(node, "namespace/name"): board indices}`` of every running GPU job on a node that is on: what
    the kubelet's pod-resources API tells the node's agent, which exports it as ``hw.gpu.allocation``
    (``Snapshot.gpu_boards``' keying)."""
    return {
        (r.node, pod_keys[r.job.job_id]): tuple(sorted(r.gpu_indices))
        for r in engine.running()
        if r.job.requests.gpu > 0 and r.gpu_indices and emu.power_state(r.node) == "on"
    }
