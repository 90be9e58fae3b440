"""How much work a job gets done at a given clock: one formula for GPUs and CPUs.

Work at full clock takes time ``c + (1 - c)``: the share ``c`` scales with the core clock
(compute-bound: ALUs, tensor cores), the rest waits on memory or I/O and does not. At clock ratio
``r`` (clock over the clock the work would run at uncapped) it takes ``c / r + 1 - c``, so

    throughput(r, c) = 1 / (c / r + 1 - c)        relative to uncapped, in (0, 1]

``c`` is the job's trace field ``sensitivity`` (per device), drawn from its workload kind's
distribution (``joulie_workload.kinds``). ``c = 1`` is the old linear model (speed = clock),
``c = 0`` work no clock slows.
"""

from __future__ import annotations


def throughput(clock_ratio: float, compute_share: float) -> float:
    """Work per second relative to full clock, for work whose compute-bound share is ``compute_share``."""
    r = min(max(clock_ratio, 1e-6), 1.0)
    c = min(max(compute_share, 0.0), 1.0)
    return 1.0 / (c / r + 1.0 - c)
