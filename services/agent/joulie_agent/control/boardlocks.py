"""Per-board SM clock locks: the node-wide ``spec.gpu.clockLock`` and the ``spec.gpu.clockLocks``
entries merged into one ceiling per board, and what each board's result is. Pure.

Each lock is planned as ``gpulock.plan_clock_lock`` plans the node-wide one (rounded down to a
clock the board supports, refused outside its range, never clamped): the node-wide lock over every
board, each entry over its own boards. On a board both name, the lower clock wins, so an operator's
node-wide ceiling always holds. A refused lock takes nothing from the others: a refused entry leaves
its boards at the node-wide lock, a refused node-wide lock leaves the entries in force.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from joulie_agent.control.gpulock import Ceiling, LockPlan, describe_request, holds, plan_clock_lock
from joulie_agent.control.outcomes import BoardOutcome
from joulie_agent.discovery.gpuclocks import ClockRange, LockReading
from joulie_api.generated.nodetwin import GPUBoardClockLock, GPUClockLock

NODE_WIDE = "clockLock"


@dataclass(frozen=True)
class MergedPlan:
    """targets: each locked board's ceiling, MHz (None: at its maximum, no lock); floors: its lowest
    clock; sources: which lock it takes ("clockLock", "clockLocks[N]"); blocked: boards a refused
    lock named, and why; blocked_by: which lock that was; refusals: each refused lock's reason, for the
    node's message."""

    targets: dict[int, Ceiling] = field(default_factory=dict)
    floors: dict[int, int] = field(default_factory=dict)
    sources: dict[int, str] = field(default_factory=dict)
    blocked: dict[int, str] = field(default_factory=dict)
    blocked_by: dict[int, str] = field(default_factory=dict)
    refusals: list[str] = field(default_factory=list)
    # What was asked, per lock: "1500 MHz", or "clockLock 80 % of max; clockLocks[0] 60 % of max".
    asked: str = ""

    @property
    def requested(self) -> bool:
        return bool(self.targets or self.blocked or self.refusals)


def intent_key(lock: GPUClockLock | None, entries: Sequence[GPUBoardClockLock]) -> tuple[object, ...]:
    """What the spec asks, comparable between reconciles (a change re-reads the boards)."""
    node = (lock.max_mhz, lock.pct_of_max) if lock is not None else None
    return (node, tuple((tuple(sorted(e.gpus)), e.max_mhz, e.pct_of_max) for e in entries))


def _plan_entry(entry: GPUBoardClockLock, indices: list[int], ranges: dict[int, ClockRange]) -> LockPlan:
    lock = GPUClockLock(max_mhz=entry.max_mhz, pct_of_max=entry.pct_of_max)
    absent = sorted(set(entry.gpus) - set(indices))
    if absent:
        have = ", ".join(map(str, sorted(indices)))
        missing = ", ".join(map(str, absent))
        return LockPlan({}, {}, f"gpu {missing} is not on this node (gpus {have})", describe_request(lock))
    return plan_clock_lock(lock, sorted(set(entry.gpus)), ranges)


def _lower(new: Ceiling, old: Ceiling, tie: bool) -> bool:
    """Whether ``new`` is the lower ceiling (None: the board's maximum); ``tie``: whether an equal one wins."""
    if new is None:
        return False
    return old is None or new < old or (tie and new == old)


def plan_board_locks(
    lock: GPUClockLock | None,
    entries: Sequence[GPUBoardClockLock],
    indices: list[int],
    ranges: dict[int, ClockRange],
) -> MergedPlan:
    """Every board's ceiling from the node-wide lock and the entries, the lower clock per board."""
    plans: list[tuple[str, LockPlan, list[int]]] = []
    if lock is not None:
        plans.append((NODE_WIDE, plan_clock_lock(lock, indices, ranges), sorted(indices)))
    for k, entry in enumerate(entries):
        plans.append((f"clockLocks[{k}]", _plan_entry(entry, indices, ranges), sorted(set(entry.gpus))))
    # Without entries the messages read as they did before there were any: no source named.
    named = bool(entries)
    out = MergedPlan(asked="; ".join(f"{src} {p.asked}" if named else p.asked for src, p, _ in plans))
    present = set(indices)
    entry_boards = {i for src, p, boards in plans if src != NODE_WIDE and not p.blocked for i in boards}
    for src, plan, boards in plans:
        if plan.blocked:
            why = f"{src}: {plan.blocked}" if named else plan.blocked
            out.refusals.append(why)
            for i in boards:
                # A refused node-wide lock blocks only the boards no entry holds; a board the node
                # does not have has no result to report.
                if i not in present:
                    continue
                if src != NODE_WIDE:
                    out.blocked[i], out.blocked_by[i] = why, src  # its own entry says more than the node-wide lock
                elif i not in entry_boards:
                    out.blocked.setdefault(i, why)
                    out.blocked_by.setdefault(i, src)
            continue
        for i, target in plan.targets.items():
            if i not in out.targets or _lower(target, out.targets[i], tie=src != NODE_WIDE):
                out.targets[i], out.floors[i], out.sources[i] = target, plan.floors[i], src
    return out


@dataclass(frozen=True)
class BoardFacts:
    """What the enforcer knows after this reconcile, for the per-board results."""

    readings: dict[int, LockReading]
    ranges: dict[int, ClockRange]
    failures: dict[int, str]
    read_failed: str
    drift: dict[int, str]
    released: frozenset[int]
    simulate_only: bool


def _held(target: Ceiling, i: int, facts: BoardFacts) -> bool | None:
    r = facts.ranges.get(i)
    return holds(target, facts.readings.get(i), r.max_mhz if r is not None else None)


def _released(i: int, plan: MergedPlan, facts: BoardFacts) -> BoardOutcome:
    if facts.simulate_only:
        return BoardOutcome(i, "none", message="simulate-only mode: lock release not enforced")
    if i in facts.failures:
        return BoardOutcome(i, "error", message=f"release failed: {facts.failures[i]}"[:512])
    if facts.read_failed:
        return BoardOutcome(i, "error", message=f"released, not verified: read-back failed: {facts.read_failed}"[:512])
    held = _held(None, i, facts)
    if held:
        why = (
            "the board is in no lock of the spec"
            if i not in plan.blocked
            else f"the lock that set it left the spec; {plan.blocked[i]}"
        )
        return BoardOutcome(i, "released", message=f"lock released: {why}"[:512])
    why = (
        "still limited by a clock setting after the release" if held is False else "reports no clock state (unverified)"
    )
    return BoardOutcome(i, "error", message=f"released; {why}")


def _locked(i: int, plan: MergedPlan, facts: BoardFacts) -> BoardOutcome:
    target, source = plan.targets.get(i), plan.sources.get(i, "")
    what = f"{target} MHz" if target is not None else "its maximum (no lock)"
    drift = facts.drift.get(i, "")
    if i in plan.blocked:
        holding = f"; holds {source} {what}" if i in plan.targets else ""
        return BoardOutcome(i, "blocked", source, message=f"{plan.blocked[i]}{holding}"[:512])
    if facts.simulate_only:
        return BoardOutcome(i, "none", source, message=f"simulate-only mode: SM clock lock {what} not enforced")
    if i in facts.failures:
        return BoardOutcome(i, "error", source, message=facts.failures[i][:512], drift=drift)
    if facts.read_failed:
        msg = f"set to {what}, not verified: read-back failed: {facts.read_failed}"
        return BoardOutcome(i, "error", source, message=msg[:512], drift=drift)
    held = _held(target, i, facts)
    if held:
        return BoardOutcome(i, "applied", source, target, f"holds {what}", drift)
    why = "not limited by it after the set" if held is False else "reports no clock event reasons (unverified)"
    return BoardOutcome(i, "error", source, message=f"set to {what}; {why}", drift=drift)


def board_outcomes(plan: MergedPlan, facts: BoardFacts) -> tuple[BoardOutcome, ...]:
    """One result per board that has a lock, was refused one, or was released; ``applied`` only for
    what the board reads back."""
    boards = sorted(set(plan.targets) | set(plan.blocked) | facts.released)
    return tuple(_released(i, plan, facts) if i in facts.released else _locked(i, plan, facts) for i in boards)
