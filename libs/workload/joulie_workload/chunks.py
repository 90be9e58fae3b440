"""A long extracted trace cut into benchmark units. Pure.

An SWF log or the Alibaba GPU trace holds months of jobs; the benchmark runs it as consecutive
chunks of ``chunk_jobs`` jobs in arrival order (at most ``max_chunks``), each re-based so its first
job arrives at 0, and pairs the policies per chunk as it pairs them per seed.
"""

from __future__ import annotations

from collections.abc import Sequence

from joulie_workload.trace import Job


def cut_units(jobs: Sequence[Job], chunk_jobs: int, max_chunks: int) -> list[list[Job]]:
    """Consecutive chunks of ``chunk_jobs`` jobs (at least 1), at most ``max_chunks``, each starting at 0."""
    size = max(1, chunk_jobs)
    ordered = sorted(jobs, key=lambda j: (j.submit_s, j.job_id))
    units = []
    for i in range(min(max_chunks, -(-len(ordered) // size))):
        chunk = ordered[i * size:(i + 1) * size]
        t0 = chunk[0].submit_s
        units.append([j.model_copy(update={"submit_s": j.submit_s - t0}) for j in chunk])
    return units
