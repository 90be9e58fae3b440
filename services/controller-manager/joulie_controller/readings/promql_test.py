"""PromQL generation for each metric naming and promotion setting, and sample validation."""

from __future__ import annotations

import pytest

from joulie_controller.readings.promql import MetricNaming, Rejected, Sample, parse_vector, power_queries


@pytest.mark.parametrize(("naming", "energy", "power"), [
    ("underscore-suffixes",
     'sum by (k8s_node_name) (rate(hw_host_energy_joules_total[2m]))', "sum by (k8s_node_name) (hw_host_power_watts)"),
    ("underscore", "sum by (k8s_node_name) (rate(hw_host_energy[2m]))", "sum by (k8s_node_name) (hw_host_power)"),
    ("utf8-suffixes", 'sum by ("k8s.node.name") (rate({"hw.host.energy_joules_total"}[2m]))',
     'sum by ("k8s.node.name") ({"hw.host.power_watts"})'),
    ("utf8", 'sum by ("k8s.node.name") (rate({"hw.host.energy"}[2m]))', 'sum by ("k8s.node.name") ({"hw.host.power"})'),
])
def test_queries_follow_the_translation_strategy(naming: str, energy: str, power: str) -> None:
    q = power_queries(MetricNaming.from_setting(naming), "k8s.node.name", promoted=True, rate_window="2m")
    assert (q.energy_rate, q.power_gauge) == (energy, power)


def test_unpromoted_attributes_are_joined_from_target_info() -> None:
    q = power_queries(MetricNaming.from_setting("underscore-suffixes"), "k8s.node.name", promoted=False,
                      rate_window="5m")
    assert q.energy_rate == ("sum by (k8s_node_name) ((rate(hw_host_energy_joules_total[5m]) "
                             "* on (job, instance) group_left (k8s_node_name) target_info))")
    assert q.node_label == "k8s_node_name"


def test_samples_are_validated_per_node() -> None:
    result = [
        {"metric": {"k8s_node_name": "a"}, "value": [1, "512.5"]},
        {"metric": {"k8s_node_name": "b"}, "value": [1, "NaN"]},
        {"metric": {"k8s_node_name": "c"}, "value": [1, "-3"]},
        {"metric": {"k8s_node_name": "d"}, "value": [1, "+Inf"]},
        {"metric": {}, "value": [1, "7"]},
        {"metric": {"k8s_node_name": "e"}, "value": [1, "watts"]},
    ]
    samples, rejected = parse_vector(result, "k8s_node_name", "energyRate")
    assert samples == [Sample("a", 512.5)]
    assert [(r.node, r.reason) for r in rejected] == [
        ("b", "not a finite number"), ("c", "negative power"), ("d", "not a finite number"),
        ("(no node label)", "series has no 'k8s_node_name' label"), ("e", "not a number")]
    assert all(isinstance(r, Rejected) and r.field == "energyRate" for r in rejected)


def test_component_scope_sums_hw_power_per_node() -> None:
    q = power_queries(MetricNaming.from_setting("underscore-suffixes"), "k8s.node.name", promoted=True,
                      rate_window="2m")
    assert q.component_energy_rate == "sum by (k8s_node_name) (rate(hw_energy_joules_total[2m]))"
    assert q.component_power_gauge == "sum by (k8s_node_name) (hw_power_watts)"


def test_the_agents_reported_reconcile_times_are_read_over_the_window_per_node() -> None:
    from joulie_controller.readings.promql import agent_reconcile_query

    naming = MetricNaming.from_setting("underscore-suffixes")
    assert agent_reconcile_query(naming, "k8s.node.name", True, 900.0) == (
        "max by (k8s_node_name) (max_over_time(joulie_agent_reconcile_time_seconds[900s]))")
    assert agent_reconcile_query(MetricNaming.from_setting("utf8"), "k8s.node.name", True, 60.0) == (
        'max by ("k8s.node.name") (max_over_time({"joulie.agent.reconcile.time"}[60s]))')
    # Unpromoted: the node's name comes from target_info, read over the same window (a bare selector
    # drops out 5 min after the last push, and the node's reported time with it).
    assert agent_reconcile_query(naming, "k8s.node.name", False, 900.0) == (
        "max by (k8s_node_name) ((max_over_time(joulie_agent_reconcile_time_seconds[900s]) "
        "* on (job, instance) group_left (k8s_node_name) last_over_time(target_info[900s])))")


def test_reported_times_that_are_not_times_are_rejected() -> None:
    from datetime import UTC, datetime

    from joulie_controller.readings.promql import parse_reported_times

    def item(node: str, v: str) -> dict[str, object]:
        return {"metric": {"k8s_node_name": node} if node else {}, "value": [0, v]}

    times, rejected = parse_reported_times([item("a", "1796299200.5"), item("b", "NaN"), item("c", "-1"),
                                            item("d", "x"), item("", "1")], "k8s_node_name")
    assert times == {"a": datetime(2026, 12, 3, 12, 0, 0, 500000, tzinfo=UTC)}
    assert sorted(r.node for r in rejected) == ["(no node label)", "b", "c", "d"]
