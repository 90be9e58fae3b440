"""The simulator's public surface, pure part: what the products (the simulated cluster, the benchmark,
the acceptance tests) may use of its models. It imports no I/O and no heavy library (the pure-core
contract covers it), so the benchmark and the smoke checks use the emulator without FUSE, FastAPI or
the OpenTelemetry SDK; the servers and views are in ``shell_api``. Everything else in
``joulie_simulator`` is internal and may move; the layering test refuses a product import of any
other module.

- The emulated hardware: :class:`Emulator` (nodes, physics on one tick), :class:`Load` and
  :func:`initial_state` (a node's load and starting state), :class:`NodeState` (a node's state: its
  devices' powers and energy ledgers, which the benchmark's per-job truth reads).
- The workload engine: :class:`Engine` (its :class:`JobRun` per job) and :func:`speed_from_state` (job progress under a clock).
- The facility: :func:`pue`, :func:`node_nameplate_w` (the pure model) and :class:`FacilityLive`
  (the model fed by a running emulator).
- Telemetry: :func:`components` (a node's truth as CPU, DRAM and GPU components, in the hardware
  semantic conventions' names).
- Per-GPU telemetry (what NVML and DCGM export for a board running a job): :func:`board_signals` gives
  :class:`GpuSignals` from the job's phases, the board's limit and lock, the job's :class:`ActivityTraits`
  (:func:`draw_traits`) and :class:`TelemetryNoise`; :func:`job_phases` the phases of a trace's job and
  :func:`mean_compute_share` the truth an estimate is compared with; :func:`board_operating_point` a board's
  power and throughput for phases under a limit and a lock (the benchmark's bound of what levers allow).
- Physics variants (robustness runs): :data:`VARIANTS` by name, :func:`physics_variant`, and the
  emulator's side of one, :func:`variant_profile` and :func:`variant_jobs` (the controller's view stays
  the unmodified profile and the Pods).
"""

from __future__ import annotations

from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.emulation.hwsemconv import components
from joulie_simulator.emulation.powerfaults import PowerOnFaults
from joulie_simulator.facility import node_nameplate_w, pue
from joulie_simulator.facility.live import FacilityLive
from joulie_simulator.physics.gpu import Phase, board_operating_point
from joulie_simulator.physics.gpusignals import (
    QUIET,
    ActivityTraits,
    GpuSignals,
    TelemetryNoise,
    board_signals,
    draw_traits,
    mean_compute_share,
)
from joulie_simulator.physics.model import Load, NodeState, initial_state
from joulie_simulator.physics.variants import (
    CALIBRATED,
    VARIANTS,
    PhysicsVariant,
    physics_variant,
    variant_jobs,
    variant_profile,
)
from joulie_simulator.workload.engine import Engine, JobRun, job_phases, lock_ratio, speed_from_state

__all__ = [
    "ActivityTraits", "CALIBRATED", "Emulator", "Engine", "FacilityLive", "GpuSignals", "JobRun", "Load", "NodeState",
    "Phase", "PhysicsVariant", "PowerOnFaults", "QUIET", "TelemetryNoise", "VARIANTS", "board_operating_point", "board_signals",
    "components", "draw_traits", "initial_state", "job_phases", "lock_ratio", "mean_compute_share",
    "node_nameplate_w", "physics_variant", "pue", "speed_from_state", "variant_jobs", "variant_profile",
]
