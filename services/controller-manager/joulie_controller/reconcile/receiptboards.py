"""Which of a window's ``hw.gpu.allocation`` series the receipts believe. Pure.

An allocation bills a board's whole energy to a Pod, and it reaches Prometheus over the same OTLP path as
everything else a node pushes, so a forged one could bill any Pod any board. Before it bills anyone, the
receipts run it through the check the job estimates use (``readings.gpuplausibility.check_board``: a board
the node's NodeHardware does not list is refuted, ``unlisted-board``), and one of their own: the Pod it
names must be one the controller knows on that node (``pod-not-on-node``). A refused allocation bills
nobody: its board, if metered, is unallocated for the time nobody else held it; the node's other
allocations stand (unlike the estimates, which hold a Pod whose board was refuted: a receipt bills what
was measured, and one bad series says nothing of a neighbouring board's owner).

What it cannot refute: a forged allocation naming a board the node has and a Pod that runs there (a
neighbour's board billed to it), as the estimates cannot.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from joulie_controller.readings.gpuplausibility import KIND_UNLISTED, NodeGpus, check_board
from joulie_controller.readings.gpusignals import BOARD_ID
from joulie_controller.readings.receiptinputs import Allocation

KIND_POD_ELSEWHERE: Final = "pod-not-on-node"
KINDS: Final = (KIND_UNLISTED, KIND_POD_ELSEWHERE)


@dataclass(frozen=True)
class Refused:
    allocation: Allocation
    kind: str
    reason: str


def believed_boards(
    allocations: Iterable[Allocation],
    gpus: Mapping[str, NodeGpus],
    pods_on: Mapping[str, Collection[str]],
) -> tuple[dict[tuple[str, str], tuple[int, ...]], list[Refused]]:
    """The boards each Pod held by (node, ``namespace/name``), and the allocations refused. ``gpus``: each
    node's boards as its NodeHardware lists them (``gpuplausibility.gpus_by_node``); ``pods_on``: the Pods
    the controller knows on each node (``namespace/name``)."""
    held: dict[tuple[str, str], set[int]] = {}
    refused: list[Refused] = []
    for a in allocations:
        m = BOARD_ID.match(a.hwid)
        r = check_board((a.node, a.hwid), {}, gpus.get(a.node))
        if r is not None:
            refused.append(Refused(a, r.kind, f"{r.reason}; allocated to {a.pod}"))
        elif m is None:
            refused.append(Refused(a, KIND_UNLISTED, f"{a.node} {a.hwid}: not a board index (gpu-<index>)"))
        elif a.pod not in pods_on.get(a.node, ()):
            refused.append(Refused(a, KIND_POD_ELSEWHERE, f"{a.node} {a.hwid}: allocated to {a.pod}, not on it"))
        else:
            held.setdefault((a.node, a.pod), set()).add(int(m.group(1)))
    return {k: tuple(sorted(v)) for k, v in held.items()}, refused
