"""The warm-up a unit is measured after (``--warmup``): the unit starts from the policy's own steady state.

Pure. Without it every unit (a seed, an SWF chunk) starts with every node on, idle, and a suspend
policy powers nodes off only after SUSPEND_AFTER: the first minutes of every unit are billed to the
policy as if it could not suspend, and short units understate suspend (one held-out log: -16 % with
22-minute units, -43 % with 45-minute ones). With a warm-up of ``W`` seconds, the unit's own last
``W`` seconds of arrivals are replayed before its first (renamed ``warmup-<id>``; the trace is
shifted ``W`` later), the run starts there, and everything measured (energy, power-offs, boots,
completion, the open window, the jobs) starts at ``W`` and counts the trace's jobs only:

- the unit's tail is its own mix at its own load; for a daily cycle of whole days it is also the phase
  that precedes the unit's start, so the policy enters the unit with the nodes on and off, the warm
  pool and the forecast's history it would have had at that hour;
- every arm of a unit replays the same warm-up, so the comparison stays paired; the warm-up jobs still
  running at ``W`` draw power inside the measurement (as yesterday's jobs do on a real cluster), and
  their work inside the open window counts as work done there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from joulie_workload.trace import Job

WARMUP_PREFIX: Final = "warmup-"


def with_warmup(jobs: Sequence[Job], warmup_s: float) -> list[Job]:
    """The unit's last ``warmup_s`` seconds of arrivals replayed in ``[0, warmup_s]``, then the unit itself
    shifted ``warmup_s`` later; ``jobs`` as they are for a warm-up of 0."""
    if not warmup_s > 0 or not jobs:
        if warmup_s < 0:
            raise ValueError(f"--warmup: {warmup_s:g} must be >= 0 seconds")
        return list(jobs)
    last = max(j.submit_s for j in jobs)
    tail = sorted((j for j in jobs if j.submit_s > last - warmup_s), key=lambda j: j.submit_s)
    lead = [
        j.model_copy(update={"job_id": WARMUP_PREFIX + j.job_id, "submit_s": j.submit_s - (last - warmup_s)})
        for j in tail
    ]
    return lead + [j.model_copy(update={"submit_s": j.submit_s + warmup_s}) for j in jobs]
