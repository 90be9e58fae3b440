"""OTLP builders for the vocabulary: data points, counters, gauges and a node's resource.

The agent and the simulator build `MetricsData` directly and send it with the SDK's exporter (no
meter provider, no per-node SDK state); these are the pieces both assemble it from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.metrics.export import AggregationTemporality, Gauge, Metric, NumberDataPoint, Sum
from opentelemetry.sdk.resources import Resource

from joulie_telemetry.vocabulary import HOST_NAME, K8S_NODE_NAME, SERVICE_INSTANCE_ID, SERVICE_NAME, MetricSpec


def point(value: float, start_ns: int, now_ns: int, attrs: Mapping[str, Any] | None = None) -> NumberDataPoint:
    return NumberDataPoint(
        attributes=dict(attrs or {}), start_time_unix_nano=start_ns, time_unix_nano=now_ns, value=value
    )


def metric(spec: MetricSpec, points: list[NumberDataPoint], description: str | None = None) -> Metric:
    """The spec's metric over `points`: a cumulative monotonic sum for a counter, else a gauge."""
    desc = description if description is not None else spec.description
    if spec.kind == "counter":
        return Metric(spec.name, desc, spec.unit, Sum(points, AggregationTemporality.CUMULATIVE, is_monotonic=True))
    return Metric(spec.name, desc, spec.unit, Gauge(points))


def node_resource(service: str, node: str) -> Resource:
    """One resource per node. service.instance.id must differ per node: Prometheus turns it into
    `instance`, and without promoted attributes (job, instance) is all that tells the nodes' series
    and their target_info apart (telemetry mode otel-unpromoted)."""
    if not node:
        return Resource.create({SERVICE_NAME: service})
    return Resource.create({SERVICE_NAME: service, SERVICE_INSTANCE_ID: node, K8S_NODE_NAME: node, HOST_NAME: node})
