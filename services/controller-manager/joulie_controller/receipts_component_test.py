"""The receipts' energy reads against a real Prometheus 3 fed over OTLP: samples with known values and
times (a 2 s export with jitter, an agent restart, a sample reaching Prometheus after a window closed),
read window after window through ``ReceiptReader``. The windows add up to the meter's own difference
exactly, where ``increase()`` over the same windows (the receipts' read before) does not."""

from __future__ import annotations

import itertools
import random
import time
import uuid

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics.export import MetricExportResult, MetricsData, ResourceMetrics, ScopeMetrics
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from joulie_controller.readings.receiptinputs import NodeFacts
from joulie_controller.settings import PrometheusSettings, Settings
from joulie_controller.telemetry.prometheus import ReceiptReader, instant_query
from joulie_localcluster.prometheus import Prometheus
from joulie_telemetry.otlp import metric, node_resource, point
from joulie_telemetry.vocabulary import COMPONENT_ENERGY, HOST_ENERGY, HW_CPU, HW_ID, HW_TYPE

pytest_plugins = ["joulie_testinfra.fixtures"]

HOST_W, CPU_W = 400.0, 150.0
WINDOW_S = 12.0


def _push(prometheus: Prometheus, node: str, samples: list[tuple[float, float, float]]) -> None:
    """``samples``: (Unix seconds, host J, package J), one OTLP export each, in time order."""
    exporter = OTLPMetricExporter(endpoint=prometheus.otlp_metrics_url, timeout=5)
    scope = InstrumentationScope("joulie-test")
    try:
        for at, host_j, cpu_j in samples:
            ns = int(at * 1e9)
            start = ns - 3_600_000_000_000
            metrics = [
                metric(HOST_ENERGY, [point(host_j, start, ns)]),
                metric(COMPONENT_ENERGY, [point(cpu_j, start, ns, {HW_TYPE: HW_CPU, HW_ID: "package-0"})]),
            ]
            data = MetricsData(
                [ResourceMetrics(node_resource("joulie-sim", node), [ScopeMetrics(scope, metrics, "")], "")]
            )
            assert exporter.export(data) == MetricExportResult.SUCCESS
    finally:
        exporter.shutdown()


def _meter(times: list[float], restart_s: float) -> list[tuple[float, float, float]]:
    def j(watts: float, t: float) -> float:
        return watts * (t - restart_s if t >= restart_s else t - times[0] + 1.0)

    return [(t, j(HOST_W, t), j(CPU_W, t)) for t in times]


def _wait_for(prometheus: Prometheus, node: str, at_s: float, samples: int) -> None:
    """Until Prometheus holds ``samples`` host-meter samples of ``node`` up to ``at_s`` (OTLP ingestion is
    asynchronous)."""
    promql = f'count_over_time(hw_host_energy_joules_total{{k8s_node_name="{node}"}}[300s])'
    deadline = time.monotonic() + 15
    with httpx.Client(timeout=5) as client:
        while True:
            got = instant_query(client, prometheus.url, promql, at_s=at_s)
            if got and float(got[0]["value"][1]) >= samples:
                return
            assert time.monotonic() < deadline, f"{samples} samples of {node} never queryable: {got}"
            time.sleep(0.2)


def test_windows_read_from_prometheus_add_up_to_the_meters_difference(prometheus: Prometheus) -> None:
    node = f"rcpt-{uuid.uuid4().hex[:8]}"
    rng = random.Random(3)
    t0 = float(int(time.time()) - 150)  # in the past: each window's samples are in before it is read
    times = [t0 + k * 2.0 + rng.uniform(0.0, 1.5) for k in range(60)]
    restart = t0 + 49.0  # the agent restarted: its counters start again from 0
    samples = _meter(times, restart)
    edges = [t0 + 6.0 + WINDOW_S * k for k in range(9)]
    # The first window's last sample reaches Prometheus only after that window closed (a late export).
    late = max(i for i, s in enumerate(samples) if s[0] <= edges[1])
    _push(prometheus, node, samples[:late])
    _wait_for(prometheus, node, edges[1], late)
    reader = ReceiptReader(Settings(prometheus=PrometheusSettings(url=prometheus.url)))
    facts = {node: NodeFacts(32.0, 50.0, 0.0)}
    host: list[float] = []
    cpu: list[float] = []
    for k, (start, end) in enumerate(itertools.pairwise(edges)):
        if k == 1:
            _push(prometheus, node, samples[late:])
            _wait_for(prometheus, node, edges[-1], len([s for s in samples if s[0] <= edges[-1]]))
        energy = reader.read(start, end, facts).energies.get(node)
        assert energy is not None, f"window {k}: no reading for {node}"
        host.append(energy.node_j)
        cpu.append(energy.cpu_j)
    seen = [t for t in times if t <= edges[-1]]
    first, last = max(t for t in seen if t <= edges[0]), max(seen)
    lost = max(t for t in seen if t < restart)  # no counter holds what it drew from then to the restart
    measured_s = last - first - (restart - lost)
    assert sum(host) == pytest.approx(HOST_W * measured_s, rel=1e-9)
    assert sum(cpu) == pytest.approx(CPU_W * measured_s, rel=1e-9)
    assert all(h > 0 for h in host)
    # The receipts' read before: increase() per window, extrapolated at each window's edges.
    with httpx.Client(timeout=5) as client:
        old = [
            float(
                instant_query(
                    client,
                    prometheus.url,
                    f'sum(increase(hw_host_energy_joules_total{{k8s_node_name="{node}"}}[12s]))',
                    at_s=end,
                )[0]["value"][1]
            )
            for end in edges[1:]
        ]
    errors = [100 * (o / h - 1) for o, h in zip(old, host, strict=True)]
    print(
        f"\n{len(host)} windows of {WINDOW_S:.0f} s: read {sum(host):.1f} J, the meter's own difference "
        f"{HOST_W * measured_s:.1f} J; increase() per window {sum(old):.1f} J "
        f"({100 * (sum(old) / (HOST_W * measured_s) - 1):+.2f} %), single windows against the read "
        f"{min(errors):+.1f} % .. {max(errors):+.1f} %"
    )
