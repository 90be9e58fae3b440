"""The energy receipt a Pod carries, as the annotation ``joulie.io/energy-receipt`` (``names.ANNOTATION_ENERGY_RECEIPT``).

One small JSON object (a few hundred bytes: an annotation, not a CRD, since it belongs to the Pod and
goes with it), written by the controller manager and read by ``kubectl joulie receipt(s)``. Pure: no I/O.
Energies in joules, times in seconds; the method and the rules are in docs/energy-receipts.md::

    {"v": 1, "node": "gpu-0", "state": "finished", "heldS": 3600.0,
     "energyJ": {"gpu": 2.1e6, "cpuBusy": 4.0e4, "cpuIdle": 3.1e4, "platform": 2.2e5},
     "savedJ": 1.2e5, "savedRangeJ": [4.0e4, 1.6e5], "addedS": 95.0,
     "method": "attribution:joulie/v1; counterfactual:capmodel-ratio", "updated": "2026-12-05T22:00:00Z"}
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

VERSION = 1
DEVICE_KINDS = ("gpu", "cpuBusy", "cpuIdle", "platform")
"""The receipt's energy parts: GPU boards held, the CPU packages' busy and idle shares, memory and platform."""
STATES = ("running", "finished")


class ReceiptFormatError(ValueError):
    """An annotation that is not a receipt; the message names the field, the value and what was expected."""


@dataclass(frozen=True)
class EnergyReceipt:
    node: str
    state: str
    """``running`` (a running total) or ``finished``."""
    held_s: float
    energy_j: dict[str, float] = field(default_factory=dict)
    saved_j: float = 0.0
    saved_range_j: tuple[float, float] = (0.0, 0.0)
    added_s: float = 0.0
    method: str = ""
    updated: str = ""

    @property
    def total_j(self) -> float:
        return sum(self.energy_j.values())

    def to_annotation(self) -> str:
        body = {
            "v": VERSION,
            "node": self.node,
            "state": self.state,
            "heldS": round(self.held_s, 1),
            "energyJ": {k: round(self.energy_j.get(k, 0.0), 1) for k in DEVICE_KINDS},
            "savedJ": round(self.saved_j, 1),
            "savedRangeJ": [round(v, 1) for v in self.saved_range_j],
            "addedS": round(self.added_s, 1),
            "method": self.method,
            "updated": self.updated,
        }
        return json.dumps(body, separators=(",", ":"))


def _number(body: dict[str, Any], key: str, default: float | None = None) -> float:
    raw = body.get(key, default)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise ReceiptFormatError(f"{key}={raw!r}: expected a finite number")
    return float(raw)


def parse_annotation(text: str) -> EnergyReceipt:
    """The receipt in ``text`` (the annotation's value); ReceiptFormatError when it is not one."""
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise ReceiptFormatError(f"not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ReceiptFormatError(f"expected a JSON object, got {type(body).__name__}")
    if body.get("v") != VERSION:
        raise ReceiptFormatError(f"v={body.get('v')!r}: expected {VERSION}")
    state = body.get("state")
    if state not in STATES:
        raise ReceiptFormatError(f"state={state!r}: expected one of {', '.join(STATES)}")
    energy = body.get("energyJ")
    if not isinstance(energy, dict):
        raise ReceiptFormatError(f"energyJ={energy!r}: expected an object of {', '.join(DEVICE_KINDS)}")
    parts = {k: _number(energy, k, 0.0) for k in DEVICE_KINDS}
    rng = body.get("savedRangeJ", [0.0, 0.0])
    if not isinstance(rng, list) or len(rng) != 2:
        raise ReceiptFormatError(f"savedRangeJ={rng!r}: expected [low, high]")
    low, high = (_number({"savedRangeJ": v}, "savedRangeJ") for v in rng)
    return EnergyReceipt(
        str(body.get("node", "")),
        state,
        _number(body, "heldS"),
        parts,
        _number(body, "savedJ", 0.0),
        (low, high),
        _number(body, "addedS", 0.0),
        str(body.get("method", "")),
        str(body.get("updated", "")),
    )


@dataclass
class ReceiptTotal:
    """Receipts summed (a namespace, a team, the cluster): what an operator reports. The one roll-up of
    receipts, for ``kubectl joulie receipts`` and the controller manager alike."""

    pods: int = 0
    running: int = 0
    energy_j: dict[str, float] = field(default_factory=dict)
    saved_j: float = 0.0
    saved_low_j: float = 0.0
    saved_high_j: float = 0.0
    added_s: float = 0.0

    @property
    def total_j(self) -> float:
        return sum(self.energy_j.values())

    def add(self, r: EnergyReceipt) -> None:
        self.pods += 1
        self.running += r.state == "running"
        for k, v in r.energy_j.items():
            self.energy_j[k] = self.energy_j.get(k, 0.0) + v
        self.saved_j += r.saved_j
        self.saved_low_j += r.saved_range_j[0]
        self.saved_high_j += r.saved_range_j[1]
        self.added_s += r.added_s

    def to_json(self) -> dict[str, Any]:
        return {
            "pods": self.pods,
            "running": self.running,
            "energyJ": {**self.energy_j, "total": self.total_j},
            "savedJ": self.saved_j,
            "savedRangeJ": [self.saved_low_j, self.saved_high_j],
            "addedS": self.added_s,
        }


def roll_up(receipts: Iterable[tuple[str, EnergyReceipt]]) -> tuple[dict[str, ReceiptTotal], ReceiptTotal]:
    """Receipts summed by key (a namespace, a team label), sorted by key, and all of them together."""
    by_key: dict[str, ReceiptTotal] = {}
    total = ReceiptTotal()
    for key, r in receipts:
        by_key.setdefault(key, ReceiptTotal()).add(r)
        total.add(r)
    return dict(sorted(by_key.items())), total
