"""How much work a job gets done at a given clock: one formula for GPUs and CPUs.

Work at full clock takes time ``c + (1 - c)``: the share ``c`` scales with the core clock
(compute-bound: ALUs, tensor cores), the rest waits on memory or I/O and does not. At clock ratio
``r`` (clock over the clock the work would run at uncapped) it takes ``c / r + 1 - c``, so

    throughput(r, c) = 1 / (c / r + 1 - c)        relative to uncapped, in (0, 1]

``c`` is the job's trace field ``sensitivity`` (per device), drawn from its workload kind's
distribution (``joulie_workload.kinds``). ``c = 1`` is the old linear model (speed = clock),
``c = 0`` work no clock slows. ``stretch`` is the time factor itself (``1 / throughput``): the
serving phases of a GPU board (``physics.gpu.board_operating_point``) weigh their time by it.
"""

from __future__ import annotations


def stretch(clock_ratio: float, compute_share: float) -> float:
    """Time the work takes at ``clock_ratio`` over its time at full clock (>= 1)."""
    r = min(max(clock_ratio, 1e-6), 1.0)
    c = min(max(compute_share, 0.0), 1.0)
    return c / r + 1.0 - c


def throughput(clock_ratio: float, compute_share: float) -> float:
    """Work per second relative to full clock, for work whose compute-bound share is ``compute_share``."""
    return 1.0 / stretch(clock_ratio, compute_share)
