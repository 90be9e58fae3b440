"""Facility queries and readings: names per translation strategy, bad samples dropped with the field named."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from joulie_controller.readings.facility import facility_queries, pue, read_facility
from joulie_controller.readings.values import Facility
from joulie_controller.settings import PrometheusSettings, Settings


def test_default_queries() -> None:
    q = facility_queries(Settings())
    assert q.ambient == "max(joulie_facility_ambient_temperature_celsius)"
    assert q.it_power == "sum(joulie_facility_it_power_watts)"
    assert q.zone_ambient == "max by (joulie_cooling_zone) (joulie_cooling_zone_ambient_temperature_celsius)"
    assert q.rack_power == "sum by (joulie_rack) (joulie_rack_power_watts)"
    assert q.node_inlet == "max by (k8s_node_name) (hw_host_ambient_temperature_celsius)"


def test_utf8_and_unpromoted_queries() -> None:
    q = facility_queries(Settings(prometheus=PrometheusSettings(metric_naming="utf8", node_attribute_promoted=False)))
    assert q.rack_power == 'sum by ("joulie.rack") ({"joulie.rack.power"})'
    assert q.node_inlet == ('max by ("k8s.node.name") (({"hw.host.ambient_temperature"} * on (job, instance) '
                            'group_left ("k8s.node.name") target_info))')


def test_readings_and_rejections() -> None:
    q = facility_queries(Settings())
    answers: dict[str, list[Mapping[str, Any]]] = {
        q.ambient: [{"metric": {}, "value": [1, "-4.5"]}],  # a cold night is a reading, not "unknown"
        q.it_power: [{"metric": {}, "value": [1, "200000"]}],
        q.cooling_power: [{"metric": {}, "value": [1, "NaN"]}],
        q.zone_ambient: [{"metric": {"joulie_cooling_zone": "z1"}, "value": [1, "31"]}],
        q.rack_power: [{"metric": {"joulie_rack": "r1"}, "value": [1, "12000"]},
                       {"metric": {"joulie_rack": "r2"}, "value": [1, "-1"]}],
    }

    def query(promql: str) -> list[Mapping[str, Any]]:
        if promql == q.node_inlet:
            raise TimeoutError("slow")
        return answers[promql]

    facility, problems = read_facility(q, query)
    assert facility == Facility(outdoor_ambient_c=-4.5, it_power_w=200000, cooling_power_w=None,
                                zone_ambient_c={"z1": 31}, rack_power_w={"r1": 12000}, node_inlet_c={})
    assert any("coolingPower" in p for p in problems)
    assert any("rackPower[r2]" in p for p in problems)
    assert any("nodeInlet: query failed" in p for p in problems)


def test_pue() -> None:
    assert pue(Facility(it_power_w=100_000, cooling_power_w=25_000)) == 1.25
    assert pue(Facility(it_power_w=0, cooling_power_w=25_000)) is None
