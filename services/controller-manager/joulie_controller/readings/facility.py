"""Facility metrics: the PromQL to read them and the validation of what comes back. Pure.

Read (all OTel gauges, names configurable, spelled per OTEL_METRIC_NAMING): outdoor ambient °C, total
IT power W, cooling power W, per cooling zone ambient °C (attribute `joulie.cooling_zone`), per rack
power W (attribute `joulie.rack`) and per node inlet °C (`hw.host.ambient_temperature`, by the node
attribute, joined from target_info when not promoted).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from joulie_controller.readings.promql import MetricNaming, quote_name
from joulie_controller.readings.values import Facility
from joulie_controller.settings import Settings
from joulie_telemetry.vocabulary import RACK_ATTRIBUTE, ZONE_ATTRIBUTE


def _sel(name: str) -> str:
    q = quote_name(name)
    return q if q == name else "{" + q + "}"


@dataclass(frozen=True)
class FacilityQueries:
    ambient: str
    it_power: str
    cooling_power: str
    zone_ambient: str
    zone_label: str
    rack_power: str
    rack_label: str
    node_inlet: str
    node_label: str


def facility_queries(s: Settings) -> FacilityQueries:
    n = MetricNaming.from_setting(s.prometheus.metric_naming)
    zone, rack, node = n.label(ZONE_ATTRIBUTE), n.label(RACK_ATTRIBUTE), n.label(s.prometheus.node_attribute)
    inlet = _sel(n.metric(s.facility.inlet_metric, "celsius"))
    if not s.prometheus.node_attribute_promoted:
        inlet = f"({inlet} * on (job, instance) group_left ({quote_name(node)}) {_sel('target_info')})"
    return FacilityQueries(
        ambient=f"max({_sel(n.metric(s.facility.ambient_metric, 'celsius'))})",
        it_power=f"sum({_sel(n.metric(s.facility.it_power_metric, 'watts'))})",
        cooling_power=f"sum({_sel(n.metric(s.facility.cooling_power_metric, 'watts'))})",
        zone_ambient=f"max by ({quote_name(zone)}) ({_sel(n.metric(s.facility.zone_ambient_metric, 'celsius'))})",
        zone_label=zone,
        rack_power=f"sum by ({quote_name(rack)}) ({_sel(n.metric(s.facility.rack_power_metric, 'watts'))})",
        rack_label=rack,
        node_inlet=f"max by ({quote_name(node)}) ({inlet})",
        node_label=node,
    )


def _value(item: Mapping[str, Any]) -> float | None:
    value = item.get("value")
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        return None
    try:
        v = float(value[1])
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def scalar(result: Iterable[Mapping[str, Any]], name: str, problems: list[str], *, non_negative: bool) -> float | None:
    for item in result:
        v = _value(item)
        if v is None or (non_negative and v < 0):
            problems.append(f"facility {name}: sample {item.get('value')!r} rejected (not a valid number)")
            return None
        return v
    return None


def by_label(result: Iterable[Mapping[str, Any]], label: str, name: str, problems: list[str], *,
             non_negative: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in result:
        metric = item.get("metric") or {}
        key = str(metric.get(label, "")) if isinstance(metric, Mapping) else ""
        v = _value(item)
        if not key:
            continue
        if v is None or (non_negative and v < 0):
            problems.append(f"facility {name}[{key}]: sample {item.get('value')!r} rejected (not a valid number)")
            continue
        out[key] = v
    return out


def read_facility(q: FacilityQueries, query: Callable[[str], list[Mapping[str, Any]]]) -> tuple[Facility, list[str]]:
    """Run the queries with `query` (an instant-query function; it may raise) and build a Facility.

    A query that fails leaves that reading unknown; the others still count.
    """
    problems: list[str] = []

    def run(promql: str, name: str) -> list[Mapping[str, Any]]:
        try:
            return query(promql)
        except Exception as err:
            problems.append(f"facility {name}: query failed: {err}")
            return []

    ambient = scalar(run(q.ambient, "ambient"), "ambient", problems, non_negative=False)
    it_power = scalar(run(q.it_power, "itPower"), "itPower", problems, non_negative=True)
    cooling = scalar(run(q.cooling_power, "coolingPower"), "coolingPower", problems, non_negative=True)
    facility = Facility(
        outdoor_ambient_c=ambient,
        it_power_w=it_power or 0.0,
        cooling_power_w=cooling,
        zone_ambient_c=by_label(run(q.zone_ambient, "zoneAmbient"), q.zone_label, "zoneAmbient", problems,
                                non_negative=False),
        rack_power_w=by_label(run(q.rack_power, "rackPower"), q.rack_label, "rackPower", problems,
                              non_negative=True),
        node_inlet_c=by_label(run(q.node_inlet, "nodeInlet"), q.node_label, "nodeInlet", problems,
                              non_negative=False),
    )
    return facility, problems


def pue(facility: Facility) -> float | None:
    """(IT + cooling) / IT, when both are known."""
    if facility.it_power_w <= 0 or facility.cooling_power_w is None:
        return None
    return (facility.it_power_w + facility.cooling_power_w) / facility.it_power_w
