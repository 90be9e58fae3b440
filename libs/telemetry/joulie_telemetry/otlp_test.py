from __future__ import annotations

from opentelemetry.sdk.metrics.export import AggregationTemporality, Gauge, Sum

from joulie_telemetry.otlp import metric, node_resource, point
from joulie_telemetry.vocabulary import HOST_ENERGY, HOST_POWER


def test_a_counter_is_a_cumulative_monotonic_sum_in_joules() -> None:
    m = metric(HOST_ENERGY, [point(12.5, 1, 2, {"a": "b"})])
    assert m.name == "hw.host.energy" and m.unit == "J"
    assert isinstance(m.data, Sum) and m.data.is_monotonic
    assert m.data.aggregation_temporality == AggregationTemporality.CUMULATIVE
    assert m.data.data_points[0].value == 12.5 and dict(m.data.data_points[0].attributes or {}) == {"a": "b"}


def test_a_gauge_keeps_its_unit_and_a_description_can_be_more_precise() -> None:
    m = metric(HOST_POWER, [point(300.0, 1, 2)], description="from the BMC")
    assert isinstance(m.data, Gauge) and m.unit == "W" and m.description == "from the BMC"


def test_a_node_resource_names_the_node_four_ways_and_none_without_a_node() -> None:
    attrs = dict(node_resource("joulie-agent", "n1").attributes)
    assert attrs["service.name"] == "joulie-agent"
    assert attrs["service.instance.id"] == attrs["k8s.node.name"] == attrs["host.name"] == "n1"
    assert "k8s.node.name" not in dict(node_resource("joulie-simulator", "").attributes)
