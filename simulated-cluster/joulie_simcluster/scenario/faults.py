"""A scenario's ``fault`` step through ``simcluster chaos``'s own injection (``chaos/inject.py``):
the one place a scenario reaches into chaos, so the catalogue's faults mean the same in both.

The chaos plan picks a fault's target Node with a number in [0, 1) over the sorted candidates; a
scenario names the Node, so the number is the one that falls on it. A fault that holds is cleared
by a timer after its hold while the scenario's next steps run (they may assert what it does).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from joulie_simcluster.chaos import catalogue, inject
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.scenario.schema import Fault
from joulie_simcluster.state import StateDir

NODE_FAULTS = {"agent-kill": "agents", "limit-reset": "capped", "write-refused": "capped"}


def pick_for(node: str | None, candidates: Sequence[str], kind: str) -> float:
    """The chaos plan's pick that chooses `node` among `candidates` (None: the first by name)."""
    if node is None:
        return 0.0
    ordered = sorted(candidates)
    if node not in ordered:
        raise RuntimeFailure(f"fault {kind}: node {node!r} is not one it can hit; candidates: {', '.join(ordered) or 'none'}")
    return (ordered.index(node) + 0.5) / len(ordered)


@dataclass
class Held:
    """A fault that holds, and the timer that clears it."""

    target: str
    timer: threading.Timer
    clear: Callable[[], None]


def inject_fault(state: StateDir, fault: Fault, agent_nodes: list[str], capped_nodes: list[str],
                 progress: Callable[[str], None]) -> tuple[str, Held | None]:
    """Injects `fault` now; returns what it hit and, for a fault that holds, its pending clear."""
    spec = catalogue.FAULTS[fault.kind]
    which = NODE_FAULTS.get(fault.kind)
    candidates = agent_nodes if which == "agents" else capped_nodes if which == "capped" else []
    if fault.node is not None and which is None:
        raise RuntimeFailure(f"fault {fault.kind}: hits a process, not a Node; remove node: {fault.node}")
    pick = pick_for(fault.node, candidates, fault.kind) if which else 0.0
    hit = inject.inject(state, catalogue.Step(spec, 1, 0.0, pick), agent_nodes, capped_nodes)
    hold_s = fault.hold_s if fault.hold_s is not None else spec.hold_s
    if hit.clear is None or hold_s <= 0:
        return hit.target, None
    clear = hit.clear

    def _clear() -> None:
        try:
            clear()
            progress(f"fault {fault.kind} on {hit.target}: cleared after {hold_s:g}s")
        except (RuntimeFailure, OSError) as e:
            progress(f"fault {fault.kind} on {hit.target}: clearing failed: {e}")

    timer = threading.Timer(hold_s, _clear)
    timer.daemon = True
    timer.start()
    return hit.target, Held(hit.target, timer, _clear)


def clear_pending(held: list[Held]) -> None:
    """At the end of a run: every fault still held is cleared now (a scenario leaves no fault behind)."""
    for h in held:
        if h.timer.is_alive():
            h.timer.cancel()
            h.clear()
