"""The agent's public surface, pure part: what the simulated cluster, the benchmark and the acceptance
tests use of its decisions and parsers. It imports no I/O (the agent's pure-core contract covers it),
so a pure module of a product may use it; the agent loop and its shells are in ``shell_api``.

Products import the agent only from ``api``, ``shell_api`` and (tests) ``testing``: the layering
test enforces it, so the agent's folders can move without breaking them. What is here:

- the pure cap planners, so a benchmark writes exactly what a real agent writes: ``DvfsConfig``,
  ``resolve_cpu_cap``, ``published_cap_range_w``, ``plan_rapl`` (CPU), ``GPUDevice``,
  ``plan_gpu_caps``, ``changed_targets``, ``nvml_limit_mw`` (GPU), the SM clock lock's plan
  ``plan_clock_lock`` over each board's ``ClockRange``, and ``plan_board_locks`` (``MergedPlan``),
  which merges it with the per-board ``spec.gpu.clockLocks`` entries (the lower clock per board), and
  the powercap zone parser
  ``parse_zone``/``Zone`` with the file names it reads (``ZONE_DIR_RE``, ``ZONE_FILES``,
  ``CONSTRAINT_FILE_RE``);
- what a control pass reports: ``CPUOutcome``, ``GPUOutcome``, ``MSG_NO_CPU_BACKEND``, and the
  power export's ``NO_COUNTERS_REASON``; the hardware catalog, ``load_catalog``."""

from __future__ import annotations

from joulie_agent.control.boardlocks import MergedPlan, plan_board_locks
from joulie_agent.control.cpucontrol import DvfsConfig, plan_rapl, published_cap_range_w, resolve_cpu_cap
from joulie_agent.control.gpucontrol import changed_targets, nvml_limit_mw, plan_gpu_caps
from joulie_agent.control.gpulock import LockPlan, plan_clock_lock
from joulie_agent.control.outcomes import MSG_NO_CPU_BACKEND, CPUOutcome, GPUOutcome
from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.discovery.gpuclocks import ClockRange
from joulie_agent.discovery.gputools import GPUDevice
from joulie_agent.discovery.powercap import CONSTRAINT_FILE_RE, ZONE_DIR_RE, ZONE_FILES, Zone, parse_zone
from joulie_agent.power.powerexport import NO_COUNTERS_REASON

__all__ = [
    "CONSTRAINT_FILE_RE",
    "MSG_NO_CPU_BACKEND",
    "NO_COUNTERS_REASON",
    "ZONE_DIR_RE",
    "ZONE_FILES",
    "CPUOutcome",
    "ClockRange",
    "DvfsConfig",
    "GPUDevice",
    "GPUOutcome",
    "LockPlan",
    "MergedPlan",
    "Zone",
    "changed_targets",
    "load_catalog",
    "nvml_limit_mw",
    "parse_zone",
    "plan_board_locks",
    "plan_clock_lock",
    "plan_gpu_caps",
    "plan_rapl",
    "published_cap_range_w",
    "resolve_cpu_cap",
]
