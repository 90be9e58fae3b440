"""The ``curve`` command's plot (matplotlib, PNG): throughput and device energy per work versus the
cap or the clock lock, one line per kind, and the published points (``physics.cited``) beside them
as markers, bands and levels. A shell: it writes the file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from joulie_hwprofiles.schema import Profile
from joulie_simulator.physics.cited import Axis, CitedMark, marks_for
from joulie_simulator.physics.curve import CurvePoint

MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def _x(r: CurvePoint, axis: Axis) -> float:
    return r.clock_pct if axis == "clock" else 100.0 * r.cap_w / r.max_limit_w


def _series_key(r: CurvePoint, axis: Axis) -> tuple[str, float]:
    """Rows of one line: the same kind at the same fixed other setting."""
    return (r.kind, r.cap_pct if axis == "clock" else r.clock_pct)


def _lines(ax_t: Any, ax_e: Any, rows: Sequence[CurvePoint], axis: Axis) -> None:
    keys = list(dict.fromkeys(_series_key(r, axis) for r in rows))
    for kind, fixed in keys:
        pts = sorted((r for r in rows if _series_key(r, axis) == (kind, fixed)), key=lambda r: _x(r, axis))
        other = "" if fixed == 100.0 else (f" (cap {fixed:g} %)" if axis == "clock" else f" (lock {fixed:g} %)")
        label = f"model: {kind}{other}" if len(keys) > 1 or other else f"model: {kind}"
        xs = [_x(r, axis) for r in pts]
        line = ax_t.plot(xs, [r.throughput for r in pts], marker=".", label=label)[0]
        ax_e.plot(xs, [r.energy_per_work for r in pts], marker=".", color=line.get_color(), label=label)


def _cited(ax_t: Any, ax_e: Any, cited: Sequence[CitedMark]) -> None:
    for i, m in enumerate(cited):
        style = {"marker": MARKERS[i % len(MARKERS)], "linestyle": "none", "color": "black", "markerfacecolor": "none"}
        if m.throughput is not None:
            ax_t.plot(m.xs, m.throughput, label=m.label, **style)
        if m.energy is not None:
            ax_e.plot(m.xs, m.energy, label=m.label, **style)
        if m.span is not None:
            for ax in (ax_t, ax_e):
                ax.axvspan(*m.span, color="grey", alpha=0.15, label=m.label if ax is ax_t else None)
        if m.level is not None:
            ax_e.axhline(m.level, color="black", linestyle=":", label=m.label)


def plot(profile: Profile, kinds: list[str], rows: list[CurvePoint], path: Path, axis: Axis) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(13, 5.2))
    _lines(ax_t, ax_e, rows, axis)
    cited = list(dict.fromkeys(m for k in kinds for m in marks_for(k, axis)))
    _cited(ax_t, ax_e, cited)
    xlabel = "SM clock lock, % of the board's maximum" if axis == "clock" else "cap, % of the maximum limit"
    what = "clock lock" if axis == "clock" else "power cap"
    ax_t.set(xlabel=xlabel, ylabel="throughput (no cap, no lock = 1)", title=f"{profile.name}: throughput under a {what}")
    ax_e.set(xlabel=xlabel, ylabel="device energy per work (no cap, no lock = 1)", title="energy per work")
    for ax in (ax_t, ax_e):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    if cited:
        fig.text(0.01, 0.01, "black open markers, bands and dotted levels: published measurements on other boards "
                 "(docs/physics-calibration.md), placed at the same share of their own maximum", fontsize=7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
