"""A NodeTwin status's dead band: which of its measured values may move how far before the status is
worth a write (``status_changed``: the whole status's JSON form against the held one's;
``fixed_changed`` and ``measured_changed``: the same answer in two parts, the second over the
measured values alone, as ``reuse.Reuse.status`` asks it tick after tick), and the policy decision's
own bands (``decision_within``). Pure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

MeasuredRow = tuple[float | None, ...]
"""A status's measured values in ``_MEASURED``'s order, each None where the status holds no number."""


# Measured status values and how each one's dead band is sized: (path in the status, "rel" for a
# share of the value itself, "power" for a share of the measured node power, "points" for the 0-100
# scores), and the least move that counts whatever the share.
_MEASURED: Final = (
    (("powerMeasurement", "measuredNodePowerW"), "rel", 0.0),
    (("powerMeasurement", "powerTrendWPerMin"), "power", 1.0),
    (("predictedPowerHeadroomScore",), "points", 0.0),
    (("predictedCoolingStressScore",), "points", 0.0),
    (("predictedPsuStressScore",), "points", 0.0),
    (("estimatedPUE",), "rel", 0.0),
)


def _get(body: dict[str, Any], path: tuple[str, ...]) -> Any:
    v: Any = body
    for k in path:
        if not isinstance(v, dict):
            return None
        v = v.get(k)
    return v


def _allowed(scale: str, least: float, new: float, old: float, power: Any, share: float) -> float:
    """How far a measured value may move (``_MEASURED``'s rule ``scale``, ``least``) at a dead band of
    ``share``; ``power``: the held measured node power (anything not a number: none)."""
    if scale == "rel":
        band = share * max(abs(new), abs(old))
    elif scale == "power":
        band = share * abs(power) if isinstance(power, (int, float)) else 0.0
    else:
        band = share * 100.0
    return max(least, band)


def measured_within(desired: dict[str, Any], existing: dict[str, Any], deadband_pct: float) -> dict[str, Any]:
    """``desired`` with each measured value that moved less than its dead band since ``existing``
    put back as ``existing`` holds it: comparing the two then tells a change worth writing."""
    if deadband_pct <= 0:
        return desired
    share = deadband_pct / 100.0
    power = _get(existing, ("powerMeasurement", "measuredNodePowerW"))
    out = desired
    for path, scale, least in _MEASURED:
        new, old = _get(desired, path), _get(existing, path)
        if not isinstance(new, (int, float)) or not isinstance(old, (int, float)) or new == old:
            continue
        if abs(new - old) > _allowed(scale, least, new, old, power, share):
            continue
        out = _put(out, path, old, desired)
    return out


def _put(body: dict[str, Any], path: tuple[str, ...], value: Any, original: dict[str, Any]) -> dict[str, Any]:
    """``body`` with ``value`` at ``path``, ``original`` left as it is: the dicts along the path are
    copied once (the rest is shared: a deep copy of the whole status was a fifth of a tick at 10 000 Nodes when
    readings move within the dead band)."""
    out = dict(body) if body is original else body
    parent: dict[str, Any] = out
    source: Any = original
    for k in path[:-1]:
        child = parent[k]
        source = source.get(k) if isinstance(source, dict) else None
        if child is source:
            child = parent[k] = dict(child)
        parent = child
    parent[path[-1]] = value
    return out


# The capDecision numbers that move with every tick's telemetry once Pods are planned from their
# estimates, and the least move worth a write (None: never on its own, refreshed with the next write).
# Without this a GPU node running Pods would write its status every tick for the third decimal of
# an estimate. What the policy chose (caps, lock, drivers, levers, budgets) always counts.
_DEVICE_BANDS: Final = (("predictedSlowdownPct", 0.5), ("predictedEnergySavingPct", 1.0))
_POD_BANDS: Final = (("estimatedComputeShare", 0.05), ("estimatedDraw", 0.05), ("predictedSlowdownPct", 0.5),
                     ("observations", None), ("realisedSlowdownPct", 0.5), ("realisedSlowdownLowPct", 0.5),
                     ("realisedSlowdownHighPct", 0.5), ("realisedSeconds", None))


def _within(new: Any, old: Any, bands: tuple[tuple[str, float | None], ...]) -> bool:
    """Do two objects differ only in the banded numbers, each by less than its band?"""
    if not isinstance(new, dict) or not isinstance(old, dict):
        return bool(new == old)
    banded = {k for k, _ in bands}
    if {k: v for k, v in new.items() if k not in banded} != {k: v for k, v in old.items() if k not in banded}:
        return False
    for key, band in bands:
        a, b = new.get(key), old.get(key)
        if (a is None) != (b is None):
            return False
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and band is not None and abs(a - b) >= band:
            return False
    return True


def decision_within(desired: dict[str, Any], existing: dict[str, Any]) -> dict[str, Any]:
    """``desired`` with status.capDecision put back as ``existing`` holds it when the choice is the same
    and only its predictions and estimates moved, each by less than its band (the reason's figures
    included: it is kept with the rest)."""
    new, old = desired.get("capDecision"), existing.get("capDecision")
    if not isinstance(new, dict) or not isinstance(old, dict) or new == old or not _same_choice(new, old):
        return desired
    out = dict(desired)
    out["capDecision"] = old
    return out


def _same_choice(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Do two capDecisions differ only in their banded predictions and estimates (``decision_within``)?"""
    fixed = ("slowdownBudgetPct", "gpuClockLockPctOfMax", "gpuClockLocks")
    if any(new.get(k) != old.get(k) for k in fixed):
        return False
    if not all(_within(new.get(d), old.get(d), _DEVICE_BANDS) for d in ("cpu", "gpu")):
        return False
    new_pods, old_pods = new.get("pods") or [], old.get("pods") or []
    return len(new_pods) == len(old_pods) and all(
        _within(a, b, _POD_BANDS) for a, b in zip(new_pods, old_pods, strict=True))


def status_changed(desired: dict[str, Any], held: dict[str, Any], deadband_pct: float) -> bool:
    """Does ``desired`` (a status's JSON form) differ from ``held`` (``owned_status`` of the cluster's)
    by more than noise: a value the controller chose, or a measured one beyond its dead band?

    The answer of ``decision_within(measured_within(desired, held, deadband_pct), held) != held``,
    found value by value without the copies that put the banded values back (every node, every tick,
    with readings moving); ``status_body_test`` holds the two to the same answers."""
    return _differs(desired, held, lambda path, new, old: deadband_pct > 0 and _in_band(path, new, old, held, deadband_pct))


def _differs(desired: dict[str, Any], held: dict[str, Any], passes: Callable[[tuple[str, ...], Any, Any], bool]) -> bool:
    """Does ``desired`` differ from ``held`` in a value other than the policy decision's banded
    choices (``_same_choice``) and the measured values ``passes`` lets through?"""
    if desired.keys() != held.keys():
        return True
    for key, new in desired.items():
        old = held[key]
        if new is old or new == old:
            continue
        if key == "capDecision":
            if isinstance(new, dict) and isinstance(old, dict) and _same_choice(new, old):
                continue
            return True
        if key == "powerMeasurement" and isinstance(new, dict) and isinstance(old, dict):
            if new.keys() != old.keys():
                return True
            for name, value in new.items():
                was = old[name]
                if value is not was and value != was and not passes(("powerMeasurement", name), value, was):
                    return True
            continue
        if not passes((key,), new, old):
            return True
    return False


_BANDS: Final[dict[tuple[str, ...], tuple[str, float]]] = {path: (scale, least) for path, scale, least in _MEASURED}


def measured_values(body: dict[str, Any]) -> MeasuredRow:
    """The measured values ``body`` (a status's JSON form) holds, as ``measured_row`` makes them."""
    return tuple(v if isinstance(v := _get(body, path), (int, float)) else None for path, _, _ in _MEASURED)


def fixed_changed(desired: dict[str, Any], held: dict[str, Any]) -> bool:
    """Does ``desired`` differ from ``held`` in anything but the measured values that are numbers in both
    (``measured_changed`` compares those)? ``status_changed`` is the one answer or the other.

    It follows the caps, the hardware, the reading's source and the policy's decision, not the readings:
    a node whose inputs to those and whose held status did not change keeps last tick's answer, and
    only its measured values are compared, as numbers (``reuse.Reuse.status``). Comparing every node's
    status whole was a fifth of the tick at 10 000 Nodes with readings moving."""
    return _differs(desired, held, _both_measured)


def _both_measured(path: tuple[str, ...], new: Any, old: Any) -> bool:
    return path in _BANDS and isinstance(new, (int, float)) and isinstance(old, (int, float))


def measured_changed(desired: MeasuredRow, held: MeasuredRow, deadband_pct: float) -> bool:
    """Does a measured value that is a number in both rows (``measured_values``) move beyond its dead
    band, as ``status_changed`` bands it? A value that is a number in one row only is ``fixed_changed``'s."""
    share = deadband_pct / 100.0
    power = held[0]
    for (_, scale, least), new, old in zip(_MEASURED, desired, held, strict=True):
        if new is None or old is None or new is old or new == old:
            continue
        if deadband_pct <= 0:
            return True
        if not abs(new - old) <= _allowed(scale, least, new, old, power, share):
            return True
    return False


def _in_band(path: tuple[str, ...], new: Any, old: Any, held: dict[str, Any], deadband_pct: float) -> bool:
    """Is ``new`` a measured value (``_MEASURED``) within its dead band of ``old`` (as ``measured_within``)?"""
    rule = _BANDS.get(path)
    if rule is None or not isinstance(new, (int, float)) or not isinstance(old, (int, float)):
        return False
    scale, least = rule
    power = _get(held, ("powerMeasurement", "measuredNodePowerW")) if scale == "power" else None
    return abs(new - old) <= _allowed(scale, least, new, old, power, deadband_pct / 100.0)
