"""A counter's increase over one receipts window from its raw samples, without extrapolation. Pure.

Prometheus' ``increase()`` over a short window extrapolates the first and last samples to the window's
edges, so consecutive windows neither add up to the counter's difference nor agree with each other (a
12 s window read -2.4 % to +8.1 % of the counter's own difference in the simulated cluster,
docs/energy-receipts.md). The receipts read each counter's raw samples instead (a range selector) and
take differences between samples:

- a window's increase runs from its **mark** (the newest sample the previous window used) to the newest
  sample at or before the window's end, summed over consecutive samples, a drop counted as the counter
  starting again from 0 (an agent restarted), as ``increase()`` counts it. The next window starts from
  that sample, so consecutive windows **telescope**: their sum is the counter's difference between the
  first mark and the last sample, exactly. A sample that reaches Prometheus after the close (a late
  export) is counted by the next window; a late sample older than the mark adds nothing a cumulative
  counter's later sample does not already hold.
- with no mark (the controller started, or the series is new): the newest sample at or before the window's
  start, else the window's first sample (what the counter held before it is nobody's in this window).
- the window's energy is that of its samples' span, which lags the window by up to one export interval at
  each edge; the lags of consecutive windows cancel.
- a window with no new sample for the series has no reading (neutral: its node's Pods are billed nothing
  for it) and keeps its mark, so the next window bills the energy in between.
- a difference across more than ``max_gap_s`` without a sample (an exporter or Prometheus out longer
  than that) is an outage: its energy is nobody's, and counting starts again after it; a mark that old
  is dropped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

MIN_GAP_S: Final = 60.0
"""The shortest gap between two samples counted as an outage (several of the agents' 10 s export
intervals: a late or missed export is not one)."""

SeriesKey = tuple[tuple[str, str], ...]
"""A series' labels, sorted: one counter."""


@dataclass(frozen=True)
class Mark:
    """The sample a window's increase ended on: where the next window's starts."""

    at_s: float
    value: float


def max_gap_s(window_s: float) -> float:
    """The longest span between two samples whose difference still counts: a window, at least a minute."""
    return max(window_s, MIN_GAP_S)


def series_key(metric: Mapping[str, Any]) -> SeriesKey:
    return tuple(sorted((str(k), str(v)) for k, v in metric.items()))


def points(item: Mapping[str, Any]) -> list[tuple[float, float]]:
    """A range-vector series' finite samples (Unix seconds, value), oldest first."""
    out: list[tuple[float, float]] = []
    values = item.get("values")
    for pair in values if isinstance(values, list) else []:
        try:
            at, v = float(pair[0]), float(pair[1])
        except (TypeError, ValueError, IndexError):
            continue
        if math.isfinite(at) and math.isfinite(v):
            out.append((at, v))
    return sorted(out)


def increase(
    samples: Sequence[tuple[float, float]], mark: Mark | None, start_s: float, end_s: float, gap_s: float
) -> tuple[float | None, Mark | None]:
    """The counter's increase over the window ``(start_s, end_s]`` from ``mark`` (module docstring), and
    the mark for the next window. ``None`` increase: no reading this window (no sample after the
    baseline). ``None`` mark: none to keep (no sample at all, or the last one older than ``gap_s``)."""
    got, kept, _ = increase_over(samples, mark, start_s, end_s, gap_s)
    return got, kept


def increase_over(
    samples: Sequence[tuple[float, float]], mark: Mark | None, start_s: float, end_s: float, gap_s: float
) -> tuple[float | None, Mark | None, tuple[float, float] | None]:
    """``increase``, and the span of samples it covers (first, last sample time; None without a reading):
    the energy's own interval, which differs from the window's by the export phase at each edge."""
    seen = [(t, v) for t, v in samples if t <= end_s]
    base: tuple[float, float] | None = (mark.at_s, mark.value) if mark is not None else None
    if base is None:
        before = [p for p in seen if p[0] <= start_s]
        base = before[-1] if before else None
    if base is None:
        inside = [p for p in seen if p[0] > start_s]
        if not inside:
            return None, None, None
        base = inside[0]
    total: float | None = None
    last = base
    for t, v in seen:
        if t <= last[0]:
            continue
        if t - last[0] <= gap_s:
            total = (total or 0.0) + (v - last[1] if v >= last[1] else v)
        last = (t, v)
    if last is base and end_s - base[0] > gap_s:
        return None, None, None
    return total, Mark(*last), ((base[0], last[0]) if total is not None else None)


@dataclass(frozen=True)
class Increases:
    """One counter query's increases over a window, and the marks for the next."""

    values: list[tuple[Mapping[str, Any], float]]
    """Each series with a reading: its labels and its increase."""
    marks: dict[SeriesKey, Mark]
    spans: list[tuple[float, float]] = field(default_factory=list)
    """Each reading's span of samples (first, last sample time), in the order of ``values``."""


def increases(
    result: Iterable[Mapping[str, Any]],
    marks: Mapping[SeriesKey, Mark],
    start_s: float,
    end_s: float,
    gap_s: float,
) -> Increases:
    """``increase`` of every series of a range query's result (a ``matrix``). A series absent from the
    result loses its mark (nothing of it in the range the marks asked for)."""
    values: list[tuple[Mapping[str, Any], float]] = []
    spans: list[tuple[float, float]] = []
    kept: dict[SeriesKey, Mark] = {}
    for item in result:
        metric = item.get("metric") or {}
        key = series_key(metric)
        got, mark, span = increase_over(points(item), marks.get(key), start_s, end_s, gap_s)
        if got is not None and span is not None:
            values.append((metric, got))
            spans.append(span)
        if mark is not None:
            kept[key] = mark
    return Increases(values, kept, spans)


def lookback_s(marks: Mapping[SeriesKey, Mark], start_s: float, end_s: float, gap_s: float) -> float:
    """How far back from ``end_s`` a window's range query must reach: the oldest mark (a second more: a range
    selector leaves out a sample at its very start, and a series the result lacks loses its mark), and a
    sample up to ``gap_s`` before the window's start (the baseline without a mark)."""
    oldest = min([start_s - gap_s, *(m.at_s for m in marks.values())])
    return max(end_s - oldest + 1.0, 0.001)
