"""When a schedbench arm stops making progress, and why its Pods stayed unbound: pure, no I/O.

An arm whose last Pods can never bind (no Node passes the filter) waited for its whole deadline,
44 minutes at 5000 Pods; a stall (nothing bound for ``stall_s``) now ends it early, and the Pods'
PodScheduled conditions, grouped, say why they stayed unschedulable.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass
class StallWatch:
    """Fed (time, Pods bound so far) samples; says when nothing has bound for ``stall_s``.

    The clock starts at the first sample (the scheduler's start), so an arm in which nothing ever
    binds stalls too.
    """

    stall_s: float
    last_count: int = -1
    last_change_s: float | None = None

    def observe(self, now_s: float, bound: int) -> bool:
        """Whether the arm has stalled as of this sample."""
        if self.last_change_s is None or bound > self.last_count:
            self.last_count, self.last_change_s = bound, now_s
            return False
        return now_s - self.last_change_s >= self.stall_s


def stalled_at(samples: Iterable[tuple[float, int]], stall_s: float) -> float | None:
    """The time of the first sample at which a series of (time, bound) samples has stalled, or None."""
    watch = StallWatch(stall_s)
    for now_s, bound in samples:
        if watch.observe(now_s, bound):
            return now_s
    return None


NO_CONDITION = "no PodScheduled condition yet (the scheduler has not tried it)"


def why(reason: str | None, message: str | None) -> str:
    """One Pod's PodScheduled=False condition as one line ("Unschedulable: 0/20 nodes are available: ...")."""
    if not reason and not message:
        return NO_CONDITION
    text = " ".join((message or "").split())  # the scheduler's message may span lines
    return f"{reason}: {text}" if reason and text else (reason or text)


def group_reasons(reasons: Iterable[str]) -> list[tuple[int, str]]:
    """(Pods, reason) for each distinct reason, the most common first (ties by reason)."""
    counts = Counter(reasons)
    return sorted(((n, r) for r, n in counts.items()), key=lambda nr: (-nr[0], nr[1]))


def report_lines(groups: list[tuple[int, str]], max_groups: int = 10) -> list[str]:
    """The report: "20 Pods: Unschedulable: 0/1000 nodes are available: ...", the rest summed."""
    lines = [f"{n} Pod{'s' if n != 1 else ''}: {r}" for n, r in groups[:max_groups]]
    rest = sum(n for n, _r in groups[max_groups:])
    if rest:
        lines.append(f"{rest} more Pods with {len(groups) - max_groups} other reasons")
    return lines
