"""Each running GPU Pod's per-board samples (``GpuSample``) from the agent's per-GPU series in Prometheus.
Pure: strings in, strings out; query results in, samples by Pod out.

The node side (docs/work-aware-caps.md) exports per board, with ``hw.id=gpu-N`` and ``hw.type=gpu``:
``hw.power`` (W), ``hw.gpu.speed`` and ``hw.gpu.speed.limit`` (Hz), ``hw.gpu.utilization``
(``hw.gpu.task=general``), ``hw.gpu.sm.active``, ``hw.gpu.tensor.active``, ``hw.gpu.dram.active``
(0..1); and ``hw.gpu.allocation`` (1 with ``k8s.pod.name``, ``k8s.namespace.name``) for each board a
Pod holds, from the kubelet's pod-resources API. One query per signal for the whole cluster, each a
range selector over the staleness limit (``jobestimate.MAX_AGE_S``): a range selector returns the
samples with the time they were taken, so a sample's age is measured, not the query's; a board whose
signal is older than the limit reports nothing for it (the estimate stays where it was: neutral, never
guessed).

Boards are joined to their signals by node and ``hw.id``: the node attribute when Prometheus promotes
it onto the series (``OTEL_NODE_ATTRIBUTE_PROMOTED``), else the exporter's ``job`` and ``instance``
(every per-GPU series of a node then has to come from the one exporter, the agent).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from joulie_controller.model.jobestimate import MAX_AGE_S, GpuSample
from joulie_controller.readings.promql import MetricNaming, quote_name
from joulie_telemetry.vocabulary import (
    COMPONENT_POWER,
    GPU_ALLOCATION,
    GPU_DRAM_ACTIVE,
    GPU_SM_ACTIVE,
    GPU_SM_CLOCK,
    GPU_SM_CLOCK_MAX,
    GPU_TENSOR_ACTIVE,
    GPU_UTILIZATION,
    HW_GPU,
    HW_GPU_TASK,
    HW_GPU_TASK_GENERAL,
    HW_ID,
    HW_LIMIT_TYPE,
    HW_TYPE,
    K8S_NAMESPACE_NAME,
    K8S_POD_NAME,
    MetricSpec,
)

SIGNALS: Final[tuple[tuple[str, MetricSpec, tuple[tuple[str, str], ...]], ...]] = (
    ("power_w", COMPONENT_POWER, ((HW_TYPE, HW_GPU),)),
    ("clock_hz", GPU_SM_CLOCK, ()),
    # An exporter may leave the attribute off (``=~"v|"`` also matches a series without it).
    ("clock_max_hz", GPU_SM_CLOCK_MAX, ((HW_LIMIT_TYPE, "max|"),)),
    ("utilization", GPU_UTILIZATION, ((HW_GPU_TASK, f"{HW_GPU_TASK_GENERAL}|"),)),
    ("sm_active", GPU_SM_ACTIVE, ()),
    ("tensor_active", GPU_TENSOR_ACTIVE, ()),
    ("dram_active", GPU_DRAM_ACTIVE, ()),
)
"""Each signal: the field it fills, its metric, and the label matchers (regex) that pick the GPU series."""
ALLOCATION: Final = "allocation"
_LEGACY: Final = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")

Board = tuple[str, str]
"""(the node, or job/instance where the node attribute is not promoted; ``hw.id``)."""


@dataclass(frozen=True)
class GpuQueries:
    node_label: str
    """The label naming the node; "" when not promoted (boards then keyed by job and instance)."""
    id_label: str
    pod_label: str
    namespace_label: str
    by_field: Mapping[str, str]
    """Each signal's query (``SIGNALS``' fields, and ``allocation``)."""


def gpu_queries(naming: MetricNaming, node_attribute: str, promoted: bool, max_age_s: float = MAX_AGE_S) -> GpuQueries:
    """One range-selector query per signal over the last ``max_age_s``."""
    window = f"{max(1, math.ceil(max_age_s))}s"

    def query(spec: MetricSpec, matchers: tuple[tuple[str, str], ...]) -> str:
        parts = [f'{quote_name(naming.label(k))}=~"{v}"' for k, v in matchers]
        series = naming.series(spec)
        if _LEGACY.match(series):
            sel = f"{series}{{{', '.join(parts)}}}" if parts else series
        else:
            sel = "{" + ", ".join([quote_name(series), *parts]) + "}"
        return f"{sel}[{window}]"

    by_field = {f: query(spec, m) for f, spec, m in SIGNALS}
    by_field[ALLOCATION] = query(GPU_ALLOCATION, ())
    return GpuQueries(
        naming.label(node_attribute) if promoted else "",
        naming.label(HW_ID),
        naming.label(K8S_POD_NAME),
        naming.label(K8S_NAMESPACE_NAME),
        by_field,
    )


@dataclass(frozen=True)
class Point:
    value: float
    at_s: float
    """When the sample was taken (Unix seconds)."""


def _board(metric: Mapping[str, Any], q: GpuQueries) -> Board | None:
    hwid = str(metric.get(q.id_label, ""))
    where = (
        str(metric.get(q.node_label, ""))
        if q.node_label
        else f"{metric.get('job', '')}/{metric.get('instance', '')}".strip("/")
    )
    return (where, hwid) if hwid and where else None


def _last(item: Mapping[str, Any]) -> Point | None:
    """The newest finite sample of a range-vector series; None when it has none."""
    values = item.get("values")
    if not isinstance(values, list):
        return None
    for pair in reversed(values):
        try:
            at, v = float(pair[0]), float(pair[1])
        except (TypeError, ValueError, IndexError):
            continue
        if math.isfinite(v) and math.isfinite(at):
            return Point(v, at)
    return None


def parse_signal(result: Iterable[Mapping[str, Any]], q: GpuQueries) -> tuple[dict[Board, Point], list[str]]:
    """Each board's newest sample of one signal, and why any series was left out."""
    out: dict[Board, Point] = {}
    problems: list[str] = []
    for item in result:
        metric = item.get("metric") or {}
        board = _board(metric, q)
        if board is None:
            problems.append(f"series {dict(metric)!r}: expected a node and {q.id_label!r} label")
            continue
        point = _last(item)
        if point is None:
            problems.append(f"{board[0]} {board[1]}: no finite sample")
            continue
        if board not in out or point.at_s > out[board].at_s:
            out[board] = point
    return out, problems


def parse_allocation(result: Iterable[Mapping[str, Any]], q: GpuQueries) -> dict[Board, tuple[str, Point]]:
    """Each board's holder, ``namespace/name``, from the newest allocation point of value 1 (a board two
    series claim goes to the newer: the older is the previous Pod's, ending)."""
    out: dict[Board, tuple[str, Point]] = {}
    for item in result:
        metric = item.get("metric") or {}
        board = _board(metric, q)
        ns, name = str(metric.get(q.namespace_label, "")), str(metric.get(q.pod_label, ""))
        point = _last(item)
        if board is None or not ns or not name or point is None or point.value != 1.0:
            continue
        if board not in out or point.at_s > out[board][1].at_s:
            out[board] = (f"{ns}/{name}", point)
    return out


def samples_by_pod(
    signals: Mapping[str, Mapping[Board, Point]],
    allocation: Mapping[Board, tuple[str, Point]],
    now_s: float,
    max_age_s: float = MAX_AGE_S,
) -> dict[str, list[GpuSample]]:
    """``Snapshot.gpu_samples``: each held board's signals as a ``GpuSample``, by its Pod's key.

    A signal older than ``max_age_s`` (or from the future by more than it: clocks apart) is left
    None; ``age_s`` is the oldest signal kept. A board whose allocation is stale, or with no fresh
    signal, gives no sample."""

    def fresh(p: Point | None) -> Point | None:
        return p if p is not None and -max_age_s <= now_s - p.at_s <= max_age_s else None

    out: dict[str, list[GpuSample]] = {}
    for board, (pod, held) in sorted(allocation.items()):
        if fresh(held) is None:
            continue
        got = {f: fresh(signals.get(f, {}).get(board)) for f, _, _ in SIGNALS}
        kept = [p for p in got.values() if p is not None]
        if not kept:
            continue

        def v(f: str, got: dict[str, Point | None] = got) -> float | None:
            p = got[f]
            return p.value if p is not None else None

        clock, top = v("clock_hz"), v("clock_max_hz")
        sample = GpuSample(
            power_w=v("power_w"),
            clock_ratio=clock / top if clock is not None and top is not None and top > 0 else None,
            utilization=v("utilization"),
            sm_active=v("sm_active"),
            tensor_active=v("tensor_active"),
            dram_active=v("dram_active"),
        )
        out.setdefault(pod, []).append(replace(sample, age_s=max(0.0, max(now_s - p.at_s for p in kept))))
    return out


BOARD_ID = re.compile(r"^gpu-(\d+)$")
"""A GPU board's ``hw.id`` (``gpu-<index>``), as the agents export it: the one parse of it the readings,
the receipts and the board map share."""


def boards_by_pod(
    allocation: Mapping[Board, tuple[str, Point]], now_s: float, max_age_s: float = MAX_AGE_S
) -> dict[tuple[str, str], tuple[int, ...]]:
    """``Snapshot.gpu_boards``: the board indices each Pod holds by a fresh allocation point (``hw.id``
    ``gpu-N``), by (node, ``namespace/name``) as ``reconcile.receiptboards.believed_boards`` keys them.
    The node is the point's own: a Pod name's points from two nodes (a stale or forged allocation
    elsewhere) stay apart, and the policy reads only the Pod's own node's. A stale point names no board:
    the Pod's boards are then unknown, and its node is planned with one lock for every board."""
    out: dict[tuple[str, str], set[int]] = {}
    for (node, hwid), (pod, point) in allocation.items():
        m = BOARD_ID.match(hwid)
        if m is None or not -max_age_s <= now_s - point.at_s <= max_age_s:
            continue
        out.setdefault((node, pod), set()).add(int(m.group(1)))
    return {key: tuple(sorted(b)) for key, b in out.items()}
