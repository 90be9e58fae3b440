"""Shell: measured node power from Prometheus (instant queries over HTTP).

One query per tick for all nodes (not one per node): the energy counter's rate, and the power
gauge for nodes that have no counter. Prometheus down, slow or answering garbage means no data for
this tick (every node neutral, source prometheus-no-data), logged, never an exception.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from joulie_controller.facility import facility_queries, read_facility
from joulie_controller.promql import MetricNaming, PowerQueries, Rejected, parse_vector, power_queries
from joulie_controller.reconcile import SOURCE_PROMETHEUS, Facility, Measurement
from joulie_controller.settings import Settings

log = logging.getLogger(__name__)


class PrometheusError(RuntimeError):
    pass


@dataclass
class PowerReading:
    measurements: dict[str, Measurement] = field(default_factory=dict)
    rejected: list[Rejected] = field(default_factory=list)
    error: str | None = None


def instant_query(client: httpx.Client, address: str, promql: str) -> list[Mapping[str, Any]]:
    try:
        resp = client.get(f"{address.rstrip('/')}/api/v1/query", params={"query": promql})
    except httpx.HTTPError as err:
        raise PrometheusError(f"query to {address} failed: {err.__class__.__name__}: {err}") from None
    if resp.status_code != 200:
        raise PrometheusError(f"query to {address} answered HTTP {resp.status_code}: {resp.text[:200]}")
    try:
        body = resp.json()
    except ValueError:
        raise PrometheusError(f"query to {address} answered non-JSON: {resp.text[:200]!r}") from None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(body, dict) or body.get("status") != "success" or not isinstance(data, dict):
        raise PrometheusError(f"query to {address} failed: {str(body)[:200]}")
    if data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise PrometheusError(f"query to {address} returned {data.get('resultType')!r}, expected an instant vector")
    return [r for r in data["result"] if isinstance(r, Mapping)]


class PowerReader:
    """Reads node power with the settings' metric naming and label promotion."""

    def __init__(self, settings: Settings, client: httpx.Client | None = None):
        self.settings = settings
        self.client = client or httpx.Client(timeout=settings.prometheus_timeout_s)
        self.queries: PowerQueries = power_queries(
            MetricNaming.from_setting(settings.metric_naming), settings.node_attribute,
            settings.node_attributes_promoted, settings.power_rate_window)

    def close(self) -> None:
        self.client.close()

    def read(self) -> PowerReading:
        s = self.settings
        reading = PowerReading()
        if s.node_power_source != "prometheus" or not s.prometheus_address:
            return reading
        q = self.queries
        host = [("energyRate", q.energy_rate), ("powerGauge", q.power_gauge)]
        components = [("componentEnergyRate", q.component_energy_rate),
                      ("componentPowerGauge", q.component_power_gauge)]
        if s.node_power_query:
            queries = [("powerRate", s.node_power_query)]
        else:
            queries = {"host": host, "components": components}.get(s.node_power_scope, host + components)
        for field_name, promql in queries:
            try:
                result = instant_query(self.client, s.prometheus_address, promql)
            except PrometheusError as err:
                reading.error = str(err)
                log.warning("measured power unavailable this tick (every node neutral): %s", err)
                return PowerReading(error=str(err))
            samples, rejected = parse_vector(result, self.queries.node_label, field_name)
            reading.rejected.extend(rejected)
            for sample in samples:
                # Earlier queries win: host before components, energy counter before power gauge.
                reading.measurements.setdefault(sample.node, Measurement(sample.value_w, SOURCE_PROMETHEUS))
        for r in reading.rejected:
            log.warning("node %s: %s sample %s rejected: %s", r.node, r.field, r.raw, r.reason)
        return reading


class FacilityReader:
    """Facility metrics (ENABLE_FACILITY_METRICS): one set of instant queries per poll."""

    def __init__(self, settings: Settings, client: httpx.Client | None = None):
        self.address = settings.facility_prometheus_address or settings.prometheus_address
        self.client = client or httpx.Client(timeout=settings.prometheus_timeout_s)
        self.queries = facility_queries(settings)

    def close(self) -> None:
        self.client.close()

    def read(self) -> Facility:
        if not self.address:
            log.warning("facility metrics enabled but no Prometheus address (FACILITY_PROMETHEUS_ADDRESS)")
            return Facility()
        facility, problems = read_facility(self.queries, lambda q: instant_query(self.client, self.address, q))
        for problem in problems:
            log.warning("%s", problem)
        return facility
