"""Shell: measured node power from Prometheus (instant queries over HTTP).

One query per tick for all nodes (not one per node): the energy counter's rate, and the power
gauge for nodes that have no counter. Prometheus down, slow or answering garbage means no data for
this tick (every node neutral, source prometheus-no-data), logged once when it starts and once
when it answers again, never an exception. After it was down or restarted, no data too until its
rate window is covered again (``ratewarmup``): a partly covered window reads far too low.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from joulie_api.outage import Outage
from joulie_controller.model.jobestimate import GpuSample
from joulie_controller.model.receipt import NodeEnergy
from joulie_controller.readings.counterwindow import Mark, SeriesKey, increases, lookback_s, max_gap_s
from joulie_controller.readings.facility import facility_queries, read_facility
from joulie_controller.readings.gpuplausibility import NodeGpus, Refuted, refute, without_refuted
from joulie_controller.readings.gpusignals import (
    ALLOCATION,
    Board,
    Point,
    boards_by_pod,
    gpu_queries,
    parse_allocation,
    parse_signal,
    samples_by_pod,
)
from joulie_controller.readings.promql import (
    MetricNaming,
    PowerQueries,
    Rejected,
    agent_reconcile_query,
    parse_reported_times,
    parse_vector,
    power_queries,
)
from joulie_controller.readings.ratewarmup import RateWarmup
from joulie_controller.readings.receiptinputs import (
    Allocation,
    NodeFacts,
    node_energies,
    pod_allocations,
    pod_cpu_seconds,
    receipt_queries,
    window_range,
)
from joulie_controller.readings.values import SOURCE_PROMETHEUS, Facility, Measurement
from joulie_controller.settings import PrometheusSettings, Settings, parse_duration_s

log = logging.getLogger(__name__)


class PrometheusError(RuntimeError):
    pass


def http_client(p: PrometheusSettings) -> httpx.Client:
    """The client every Prometheus query goes through: its timeout and, for the authenticated
    telemetry path, the CA of Prometheus's serving certificate and the controller's client
    certificate (a Prometheus web config requiring one refuses the handshake without it)."""
    if not (p.ca_file or p.client_cert_file):
        return httpx.Client(timeout=p.timeout_s)
    ctx = ssl.create_default_context(cafile=p.ca_file or None)
    if p.client_cert_file:
        ctx.load_cert_chain(p.client_cert_file, p.client_key_file)
    return httpx.Client(timeout=p.timeout_s, verify=ctx)


@dataclass
class PowerReading:
    measurements: dict[str, Measurement] = field(default_factory=dict)
    rejected: list[Rejected] = field(default_factory=list)
    error: str | None = None


def instant_query(client: httpx.Client, address: str, promql: str, expect: str = "vector",
                  at_s: float | None = None) -> list[Mapping[str, Any]]:
    """The result of one instant query: an instant vector, or a ``matrix`` for a range selector (the raw
    samples with their timestamps), evaluated at ``at_s`` (Unix seconds; None: Prometheus' now)."""
    params = {"query": promql} if at_s is None else {"query": promql, "time": f"{at_s:.3f}"}
    try:
        resp = client.get(f"{address.rstrip('/')}/api/v1/query", params=params)
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
    if data.get("resultType") != expect or not isinstance(data.get("result"), list):
        raise PrometheusError(f"query to {address} returned {data.get('resultType')!r}, expected {expect!r}")
    return [r for r in data["result"] if isinstance(r, Mapping)]


def start_time(client: httpx.Client, address: str) -> str | None:
    """When Prometheus started (``/api/v1/status/runtimeinfo`` startTime), or None when it does not
    say (unreachable, or a Prometheus-compatible store without the endpoint)."""
    try:
        resp = client.get(f"{address.rstrip('/')}/api/v1/status/runtimeinfo")
        data = resp.json().get("data") if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    started = data.get("startTime") if isinstance(data, dict) else None
    return started if isinstance(started, str) and started else None


class PowerReader:
    """Reads node power with the settings' metric naming and label promotion."""

    def __init__(self, settings: Settings, client: httpx.Client | None = None,
                 monotonic: Callable[[], float] = time.monotonic):
        self.settings = settings
        self.client = client or http_client(settings.prometheus)
        self.queries: PowerQueries = power_queries(
            MetricNaming.from_setting(settings.prometheus.metric_naming), settings.prometheus.node_attribute,
            settings.prometheus.node_attribute_promoted, settings.prometheus.rate_window)
        self.monotonic = monotonic
        self.health = Outage("Prometheus (measured power; every node neutral meanwhile)", log, monotonic)
        self.warmup = RateWarmup(parse_duration_s("NODE_POWER_RATE_WINDOW", settings.prometheus.rate_window))
        self.warming = False
        self.agent_query = agent_reconcile_query(
            MetricNaming.from_setting(settings.prometheus.metric_naming), settings.prometheus.node_attribute,
            settings.prometheus.node_attribute_promoted, settings.agent_liveness_window_s)
        self.agent_times_health = Outage("Prometheus (agents' reported reconcile times; their Leases alone "
                                         "meanwhile)", log, monotonic)

    def close(self) -> None:
        self.client.close()

    def read(self) -> PowerReading:
        s = self.settings
        reading = PowerReading()
        if s.prometheus.power_source != "prometheus" or not s.prometheus.url:
            return reading
        q = self.queries
        host = [("energyRate", q.energy_rate), ("powerGauge", q.power_gauge)]
        components = [("componentEnergyRate", q.component_energy_rate),
                      ("componentPowerGauge", q.component_power_gauge)]
        if s.prometheus.power_query:
            queries = [("powerRate", s.prometheus.power_query)]
        else:
            queries = {"host": host, "components": components}.get(s.prometheus.power_scope, host + components)
        now = self.monotonic()
        if not self.health.due():  # backing off from a Prometheus that did not answer
            self.warmup.failed(now)
            return PowerReading(error=f"Prometheus unreachable: {self.health.last_error}")
        started = start_time(self.client, s.prometheus.url)
        if started is not None:
            self.warmup.started(started, now)
        component_fields = {name for name, _ in components}
        host_w: dict[str, float] = {}
        components_w: dict[str, float] = {}
        for field_name, promql in queries:
            try:
                result = instant_query(self.client, s.prometheus.url, promql)
            except PrometheusError as err:
                self.health.failed(err)
                self.warmup.failed(self.monotonic())
                return PowerReading(error=str(err))
            samples, rejected = parse_vector(result, self.queries.node_label, field_name)
            reading.rejected.extend(rejected)
            into = components_w if field_name in component_fields else host_w
            for sample in samples:
                # Earlier queries win: energy counter before power gauge.
                into.setdefault(sample.node, sample.value_w)
        for node, watts in host_w.items():
            reading.measurements[node] = Measurement(watts, SOURCE_PROMETHEUS, components_w.get(node))
        for node, watts in components_w.items():  # no host series: the components are the reading
            reading.measurements.setdefault(node, Measurement(watts, SOURCE_PROMETHEUS))
        if self.health.down:  # answering again: its window holds the outage's gap from now on
            self.warmup.failed(now)
        self.health.ok()
        if self._warming_up(now):  # queried all the same: a failure meanwhile restarts the wait
            return PowerReading(error=f"Prometheus restarted or was unreachable less than "
                                      f"{s.prometheus.rate_window} (NODE_POWER_RATE_WINDOW) ago: rate window not yet "
                                      f"covered")
        for r in reading.rejected:
            log.warning("node %s: %s sample %s rejected: %s", r.node, r.field, r.raw, r.reason)
        return reading

    def agent_times(self) -> dict[str, datetime] | None:
        """Each node's last reconcile time its agent reported (``joulie.agent.reconcile.time``), or None
        when there is no Prometheus or it did not answer: the agents' Leases then decide alone, each
        allowed its own duration (``kube.heartbeats.evidence``)."""
        url = self.settings.prometheus.url
        if not url or not self.agent_times_health.due():
            return None
        try:
            result = instant_query(self.client, url, self.agent_query)
        except PrometheusError as err:
            self.agent_times_health.failed(err)
            return None
        self.agent_times_health.ok()
        times, rejected = parse_reported_times(result, self.queries.node_label)
        for r in rejected:
            log.warning("node %s: reported agent reconcile time %s rejected: %s", r.node, r.raw, r.reason)
        return times

    def _warming_up(self, now_s: float) -> bool:
        """Whether the rate window is still partly covered since the last failure or restart;
        logs once when that starts and once when it ends."""
        left = self.warmup.remaining_s(now_s)
        if left > 0 and not self.warming:
            log.warning("Prometheus restarted or was unreachable: every node neutral for %.0f s more, until its "
                        "rate window (NODE_POWER_RATE_WINDOW %s) is covered again", left,
                        self.settings.prometheus.rate_window)
        elif left <= 0 and self.warming:
            log.warning("Prometheus rate window covered again: measured power in use")
        self.warming = left > 0
        return self.warming


class GpuSignalReader:
    """Each running GPU Pod's per-board samples (``readings.gpusignals``): one query per signal per tick
    for the whole cluster, on the node-power reader's address and timeout. Prometheus down or answering
    garbage means no samples this tick (every estimate stays where it was), logged once when it starts
    and once when it answers again."""

    def __init__(self, settings: Settings, client: httpx.Client | None = None,
                 wall: Callable[[], float] = time.time):
        p = settings.prometheus
        self.address = p.url
        self.client = client or http_client(p)  # the authenticated path's CA and client certificate too
        self.queries = gpu_queries(MetricNaming.from_setting(p.metric_naming), p.node_attribute,
                                   p.node_attribute_promoted)
        self.wall = wall
        self.health = Outage("Prometheus (per-GPU signals; every job estimate held meanwhile)", log)
        self.problems: list[str] = []
        self.refuted: dict[Board, Refuted] = {}
        """The boards whose series the hardware refuted on the last read (``readings.gpuplausibility``)."""
        self.boards: dict[tuple[str, str], tuple[int, ...]] = {}
        """The boards each Pod held on the last read, by (node, Pod) (``Snapshot.gpu_boards``); empty
        when it failed."""

    def close(self) -> None:
        self.client.close()

    def read(self, gpus_by_node: Mapping[str, NodeGpus] | None = None) -> dict[str, list[GpuSample]]:
        """``gpus_by_node``: what each node's NodeHardware says of its boards (by node name), for the
        plausibility check; a Pod holding a board whose series it refutes gets no sample this tick."""
        self.boards = {}
        if not self.address or not self.health.due():
            return {}
        now = self.wall()
        signals: dict[str, dict[Board, Point]] = {}
        problems: list[str] = []
        try:
            allocation = parse_allocation(
                instant_query(self.client, self.address, self.queries.by_field[ALLOCATION], "matrix", now),
                self.queries)
            if allocation:  # nobody holds a GPU (or the node side does not say who): the signals would go unused
                for name, promql in self.queries.by_field.items():
                    if name != ALLOCATION:
                        got, bad = parse_signal(instant_query(self.client, self.address, promql, "matrix", now),
                                                self.queries)
                        signals[name] = got
                        problems.extend(f"{name}: {b}" for b in bad)
        except PrometheusError as err:
            self.health.failed(err)
            return {}
        self.health.ok()
        if problems and problems != self.problems:
            log.warning("per-GPU signals: %s (logged again only when this changes)", "; ".join(problems)[:2000])
        self.problems = problems
        refuted = refute(signals, allocation, gpus_by_node or {}, bool(self.queries.node_label))
        kept, held = without_refuted(allocation, refuted)
        self._log_refuted(refuted, held)
        self.boards = boards_by_pod(kept, now)
        return samples_by_pod(signals, kept, now)

    def _log_refuted(self, refuted: Mapping[Board, Refuted], held: Mapping[str, Refuted]) -> None:
        """One line when a board's series start being refuted (and which Pods' estimates that holds),
        one when they are believed again; nothing while it goes on."""
        started = [f"{r.reason} ({r.kind})" for b, r in sorted(refuted.items()) if self.refuted.get(b) != r]
        ended = [f"{b[0]} {b[1]}" for b in sorted(self.refuted) if b not in refuted]
        if started:
            pods = sorted(p for p, r in held.items() if f"{r.reason} ({r.kind})" in started)
            log.warning("per-GPU series dropped as implausible, the estimate of the Pod(s) holding the board held "
                        "until plausible again: %s%s", "; ".join(started)[:2000],
                        f"; held: {', '.join(pods)[:500]}" if pods else "")
        if ended:
            log.warning("per-GPU series plausible again (or gone): %s", ", ".join(ended)[:2000])
        self.refuted = dict(refuted)


@dataclass
class ReceiptInputs:
    energies: dict[str, NodeEnergy] = field(default_factory=dict)
    allocations: list[Allocation] = field(default_factory=list)
    """What ``hw.gpu.allocation`` says, not yet believed (``reconcile.receiptboards``)."""
    cpu_used: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


class ReceiptReader:
    """The energy receipts' inputs over one window (``readings.receiptinputs``): four queries per window
    for the whole cluster, evaluated at the window's end, on the node-power reader's address and timeout.
    It keeps each energy counter's mark (``readings.counterwindow``): the sample the last window ended on,
    where the next one starts (in memory: a restarted controller starts from the samples at its first
    window's start)."""

    def __init__(self, settings: Settings, client: httpx.Client | None = None):
        p = settings.prometheus
        self.address = p.url
        self.naming = MetricNaming.from_setting(p.metric_naming)
        self.node_attribute = p.node_attribute
        self.client = client or http_client(p)
        self.marks: dict[SeriesKey, Mark] = {}

    def close(self) -> None:
        self.client.close()

    def read(self, start_s: float, end_s: float, facts: Mapping[str, NodeFacts]) -> ReceiptInputs:
        """Raises PrometheusError when a query fails (the window is then closed on the next try, longer; the
        marks stay where they were)."""
        window = end_s - start_s
        gap = max_gap_s(window)
        lookback = window_range(lookback_s(self.marks, start_s, end_s, gap))
        q = receipt_queries(self.naming, self.node_attribute, window_range(window), lookback)

        def ask(promql: str, expect: str = "vector") -> list[Mapping[str, Any]]:
            return instant_query(self.client, self.address, promql, expect, at_s=end_s)

        host = increases(ask(q.host_energy_j, "matrix"), self.marks, start_s, end_s, gap)
        devices = increases(ask(q.device_energy_j, "matrix"), self.marks, start_s, end_s, gap)
        allocations = pod_allocations(ask(q.allocation), q)
        cpu = pod_cpu_seconds(ask(q.pod_cpu_s))
        self.marks = {**host.marks, **devices.marks}
        energies, problems = node_energies(host.values, devices.values, q, window, facts, host.spans)
        return ReceiptInputs(energies, allocations, cpu, problems)


class FacilityReader:
    """Facility metrics (ENABLE_FACILITY_METRICS): one set of instant queries per poll."""

    def __init__(self, settings: Settings, client: httpx.Client | None = None):
        self.address = settings.facility.prometheus_url or settings.prometheus.url
        self.client = client or http_client(settings.prometheus)
        self.queries = facility_queries(settings)
        # The problems of the last poll: logged when they change, not every poll (issue 23,
        # prometheus-kill: a line per facility query per poll while Prometheus was down).
        self.problems: list[str] = []

    def close(self) -> None:
        self.client.close()

    def read(self) -> Facility:
        if not self.address:
            log.warning("facility metrics enabled but no Prometheus address (FACILITY_PROMETHEUS_ADDRESS)")
            return Facility()
        facility, problems = read_facility(self.queries, lambda q: instant_query(self.client, self.address, q))
        if problems and problems != self.problems:
            log.warning("facility metrics: %s (logged again only when this changes)", "; ".join(problems)[:2000])
        elif not problems and self.problems:
            log.warning("facility metrics: every query answers again")
        self.problems = problems
        return facility
