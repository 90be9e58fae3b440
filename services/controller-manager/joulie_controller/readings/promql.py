"""PromQL for measured node power from the OpenTelemetry hardware metrics. Pure: strings in, strings out.

The OTel metrics `hw.host.energy` (counter, J) and `hw.host.power` (gauge, W) reach Prometheus
through its OTLP receiver, which renames them according to its `translation_strategy`, and copies
resource attributes (`k8s.node.name`) onto series only when `promote_resource_attributes` lists
them; otherwise they live on `target_info`, joined on job/instance.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from joulie_telemetry.vocabulary import (
    AGENT_RECONCILE_TIME,
    COMPONENT_ENERGY,
    COMPONENT_POWER,
    HOST_ENERGY,
    HOST_POWER,
    MetricSpec,
)

_LEGACY_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_NOT_LEGACY_CHAR = re.compile(r"[^a-zA-Z0-9_:]")


@dataclass(frozen=True)
class MetricNaming:
    """How Prometheus spells OTel names: the translation strategy, by its effect."""

    escape: bool
    """Dots become underscores (UnderscoreEscaping*); False keeps UTF-8 names (NoUTF8Escaping*/NoTranslation)."""
    suffixes: bool
    """Unit and _total suffixes are appended (*WithSuffixes)."""

    @classmethod
    def from_setting(cls, value: str) -> MetricNaming:
        return {
            "underscore-suffixes": cls(True, True),
            "underscore": cls(True, False),
            "utf8-suffixes": cls(False, True),
            "utf8": cls(False, False),
        }[value]

    def metric(self, otel_name: str, unit_suffix: str = "", counter: bool = False) -> str:
        name = otel_name
        if self.escape:
            name = _NOT_LEGACY_CHAR.sub("_", name)
        if self.suffixes:
            if unit_suffix:
                name += f"_{unit_suffix}"
            if counter:
                name += "_total"
        return name

    def series(self, spec: MetricSpec) -> str:
        """The series name of a vocabulary metric (its unit suffix and `_total` from the spec)."""
        return spec.prometheus_name(escape=self.escape, suffixes=self.suffixes)

    def label(self, otel_attribute: str) -> str:
        return _NOT_LEGACY_CHAR.sub("_", otel_attribute) if self.escape else otel_attribute


def quote_name(name: str) -> str:
    """A metric or label name as PromQL needs it: bare when legacy-valid, else quoted (Prometheus 3)."""
    if _LEGACY_NAME.match(name):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _selector(metric: str) -> str:
    return metric if _LEGACY_NAME.match(metric) else "{" + quote_name(metric) + "}"


@dataclass(frozen=True)
class PowerQueries:
    node_label: str
    """The series label carrying the node name in query results."""
    energy_rate: str
    """Watts per node from the energy counter (preferred: exact over the window)."""
    power_gauge: str
    """Watts per node from the power gauge (fallback when no energy counter exists)."""
    component_energy_rate: str
    """Watts per node summed over its components' `hw.energy` counters (cpu, gpu, memory, ...)."""
    component_power_gauge: str
    """Watts per node summed over its components' `hw.power` gauges."""


def power_queries(naming: MetricNaming, node_attribute: str, promoted: bool, rate_window: str) -> PowerQueries:
    label = naming.label(node_attribute)
    q_label = quote_name(label)
    def per_node(expr: str) -> str:
        if not promoted:
            expr = f"({expr} * on (job, instance) group_left ({q_label}) {_selector('target_info')})"
        return f"sum by ({q_label}) ({expr})"

    def energy(spec: MetricSpec) -> str:
        return f"rate({_selector(naming.series(spec))}[{rate_window}])"

    return PowerQueries(
        node_label=label,
        energy_rate=per_node(energy(HOST_ENERGY)),
        power_gauge=per_node(_selector(naming.series(HOST_POWER))),
        component_energy_rate=per_node(energy(COMPONENT_ENERGY)),
        component_power_gauge=per_node(_selector(naming.series(COMPONENT_POWER))),
    )


def agent_reconcile_query(naming: MetricNaming, node_attribute: str, promoted: bool, window_s: float) -> str:
    """Per node, the latest reconcile time its agent reported within ``window_s`` (issue 39). Over a
    window, not the last sample: a dead agent's series must stay read as long as its Lease is
    believed (``kube.heartbeats.evidence``), past Prometheus' 5-minute staleness."""
    q_label = quote_name(naming.label(node_attribute))
    expr = f"max_over_time({_selector(naming.series(AGENT_RECONCILE_TIME))}[{int(window_s)}s])"
    if not promoted:
        # target_info over the same window: a bare selector drops 5 min after the agent's last push
        # (Prometheus' lookback), and the node's time would go with it while its Lease is believed.
        info = f"last_over_time({_selector('target_info')}[{int(window_s)}s])"
        expr = f"({expr} * on (job, instance) group_left ({q_label}) {info})"
    return f"max by ({q_label}) ({expr})"


@dataclass(frozen=True)
class Sample:
    node: str
    value_w: float


@dataclass(frozen=True)
class Rejected:
    node: str
    field: str
    raw: str
    reason: str


def _node_numbers(result: Iterable[Mapping[str, Any]], node_label: str, field: str,
                  rejected: list[Rejected]) -> Iterator[tuple[str, float, str]]:
    """Each series of an instant-vector result as (node, value, raw text); a series without the node
    label or whose value is not a number goes to ``rejected`` instead."""
    for item in result:
        metric = item.get("metric") or {}
        node = str(metric.get(node_label, "")) if isinstance(metric, Mapping) else ""
        value = item.get("value")
        raw = str(value[1]) if isinstance(value, (list, tuple)) and len(value) == 2 else repr(value)
        if not node:
            rejected.append(Rejected("(no node label)", field, raw, f"series has no {node_label!r} label"))
            continue
        try:
            number = float(raw)
        except ValueError:
            rejected.append(Rejected(node, field, raw, "not a number"))
            continue
        yield node, number, raw


def parse_vector(result: Iterable[Mapping[str, Any]], node_label: str, field: str) -> tuple[list[Sample], list[Rejected]]:
    """Turn an instant-vector result into per-node watts; NaN, infinite or negative values are rejected."""
    samples: list[Sample] = []
    rejected: list[Rejected] = []
    for node, watts, raw in _node_numbers(result, node_label, field, rejected):
        if math.isnan(watts) or math.isinf(watts):
            rejected.append(Rejected(node, field, raw, "not a finite number"))
        elif watts < 0:
            rejected.append(Rejected(node, field, raw, "negative power"))
        else:
            samples.append(Sample(node, watts))
    return samples, rejected


def parse_reported_times(result: Iterable[Mapping[str, Any]], node_label: str) -> tuple[dict[str, datetime], list[Rejected]]:
    """The agents' reported reconcile times (Unix seconds) per node; a value that is not a finite,
    positive time is rejected (it says nothing about the agent)."""
    times: dict[str, datetime] = {}
    rejected: list[Rejected] = []
    field = "agentReconcileTime"
    for node, t, raw in _node_numbers(result, node_label, field, rejected):
        if not math.isfinite(t) or t <= 0 or t > 1e11:
            rejected.append(Rejected(node, field, raw, "not a time (Unix seconds)"))
            continue
        times[node] = datetime.fromtimestamp(t, UTC)
    return times, rejected
