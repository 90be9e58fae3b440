"""Whether a board's per-GPU series are ones the node's hardware could have produced. Pure.

The per-GPU signals and ``hw.gpu.allocation`` reach Prometheus over the same OTLP path as node power
(issue 36), so a sender that reaches the receiver (or one node holding the shared push certificate)
can push them for any board. They feed each GPU Pod's job estimate (``model.jobestimate``), which
steers that Pod's board caps and its energy receipt. A series the hardware refutes is dropped and the
estimate of the Pod holding that board is held where it was for the tick (neutral, as with no data),
whatever its other boards say: one refuted board is reason enough to doubt what was pushed beside it.

Three refutations, each against what the controller knows independently of the series:

- **Board power above its limit** (``power-above-limit``): above ``POWER_LIMIT_FACTOR`` x the board's
  maximum power limit (NodeHardware ``capRangePerGpu.maxWatts``), or negative. A board's averaged
  draw stays at its enforced limit; the margin covers a reading sampled in a transient (the same
  bound below which ``jobestimate`` uses a power sample at all).
- **Activity ratio outside [0, 1]** (``ratio-out-of-range``): ``hw.gpu.utilization``,
  ``hw.gpu.sm.active``, ``hw.gpu.tensor.active``, ``hw.gpu.dram.active`` are shares of time.
- **A board its NodeHardware does not list** (``unlisted-board``): an allocation or a signal naming
  ``hw.id`` other than ``gpu-0`` .. ``gpu-<count-1>`` on a node whose NodeHardware says how many
  boards it has (no GPU at all counts: ``count`` 0).

What it cannot refute: a value inside these bounds (a forged 0.4 for a true 0.9), a node with no
NodeHardware (no count, no limit), and, where the node attribute is not promoted onto the series
(``OTEL_NODE_ATTRIBUTE_PROMOTED=false``: boards keyed by job and instance), anything but the ratios.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from joulie_api.generated.nodehardware import NodeHardware
from joulie_controller.model.hardware import NodeInfo, from_node_hardware
from joulie_controller.readings.gpusignals import Board, Point

POWER_LIMIT_FACTOR: Final = 1.5
"""A board reading above this many times its maximum power limit is refuted."""
RATIO_SLACK: Final = 1e-6
"""Rounding an exporter may add above 1.0 (a ratio computed from two counters)."""
RATIO_SIGNALS: Final = ("utilization", "sm_active", "tensor_active", "dram_active")

KIND_POWER: Final = "power-above-limit"
KIND_RATIO: Final = "ratio-out-of-range"
KIND_UNLISTED: Final = "unlisted-board"
KINDS: Final = (KIND_POWER, KIND_RATIO, KIND_UNLISTED)

_BOARD_ID: Final = re.compile(r"^gpu-(0|[1-9][0-9]{0,5})$")


@dataclass(frozen=True)
class NodeGpus:
    """What a node's NodeHardware says of its boards."""

    count: int
    max_w: float = 0.0
    """Each board's maximum power limit, watts; 0 when unknown (no power bound then)."""


@dataclass(frozen=True)
class Refuted:
    kind: str
    reason: str
    """One line naming the series, the value and the bound."""


def _listed(hwid: str, gpus: NodeGpus) -> bool:
    m = _BOARD_ID.match(hwid)
    return m is not None and int(m.group(1)) < gpus.count


def check_board(board: Board, signals: Mapping[str, Point], gpus: NodeGpus | None) -> Refuted | None:
    """The first refutation of one board's newest samples (by signal field), or None.
    ``gpus``: its node's NodeHardware, None when unknown (or the board is keyed by job and instance)."""
    where, hwid = board
    if gpus is not None and not _listed(hwid, gpus):
        return Refuted(
            KIND_UNLISTED,
            f"{where} {hwid}: its NodeHardware lists {gpus.count} GPU(s) (gpu-0 .. gpu-{gpus.count - 1})"
            if gpus.count
            else f"{where} {hwid}: its NodeHardware lists no GPU",
        )
    for field in RATIO_SIGNALS:
        p = signals.get(field)
        if p is not None and not (0.0 <= p.value <= 1.0 + RATIO_SLACK):
            return Refuted(KIND_RATIO, f"{where} {hwid}: {field} {p.value:g} is outside [0, 1]")
    power = signals.get("power_w")
    if power is not None:
        if power.value < 0:
            return Refuted(KIND_POWER, f"{where} {hwid}: power {power.value:g} W is negative")
        if gpus is not None and gpus.max_w > 0 and power.value > POWER_LIMIT_FACTOR * gpus.max_w:
            return Refuted(
                KIND_POWER,
                f"{where} {hwid}: power {power.value:.0f} W is above "
                f"{POWER_LIMIT_FACTOR:g} x its limit {gpus.max_w:.0f} W",
            )
    return None


def refute(
    signals: Mapping[str, Mapping[Board, Point]],
    allocation: Mapping[Board, tuple[str, Point]],
    gpus_by_node: Mapping[str, NodeGpus],
    by_node: bool,
) -> dict[Board, Refuted]:
    """Each board, held or not, whose series the hardware refutes. ``by_node``: boards are keyed by
    node name (the attribute is promoted), so ``gpus_by_node`` applies; else only the ratios are checked."""
    boards = set(allocation)
    for per_board in signals.values():
        boards.update(per_board)
    out: dict[Board, Refuted] = {}
    for board in sorted(boards):
        got = {f: per_board[board] for f, per_board in signals.items() if board in per_board}
        gpus = gpus_by_node.get(board[0]) if by_node else None
        r = check_board(board, got, gpus)
        if r is not None:
            out[board] = r
    return out


def without_refuted(
    allocation: Mapping[Board, tuple[str, Point]], refuted: Mapping[Board, Refuted]
) -> tuple[dict[Board, tuple[str, Point]], dict[str, Refuted]]:
    """The allocation less every board of a Pod that holds a refuted board (its estimate held this tick),
    and those Pods with the refutation that held them."""
    held: dict[str, Refuted] = {}
    for board, (pod, _) in sorted(allocation.items()):
        if board in refuted and pod not in held:
            held[pod] = refuted[board]
    return {b: a for b, a in allocation.items() if a[0] not in held}, held


def gpus_by_node(hardware: Mapping[str, NodeHardware], nodes: Iterable[NodeInfo]) -> dict[str, NodeGpus]:
    """What each node's NodeHardware (by spec.nodeName) says of its boards; a node without one is absent
    (nothing to refute its boards with). A NodeHardware that says GPUs are present without a count
    takes the Node's allocatable GPUs, as the twin does."""
    allocatable = {n.name: n.allocatable_gpus for n in nodes}
    out: dict[str, NodeGpus] = {}
    for name, nhw in hardware.items():
        view = from_node_hardware(nhw, allocatable.get(name, 0))
        max_w = view.gpu_max_w if math.isfinite(view.gpu_max_w) and view.gpu_max_w > 0 else 0.0
        out[name] = NodeGpus(max(0, view.gpu_count), max_w)
    return out
