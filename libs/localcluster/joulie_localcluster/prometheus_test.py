"""An OTLP/HTTP push into the real Prometheus 3 is answered by a PromQL query, with promoted labels."""

from __future__ import annotations

import time

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from joulie_localcluster.prometheus import Prometheus

pytest_plugins = ["joulie_testinfra.fixtures"]


def test_otlp_energy_counter_is_queryable_with_node_label(prometheus: Prometheus) -> None:
    energy_j = {"value": 1000.0}

    def observe(_: CallbackOptions) -> list[Observation]:
        energy_j["value"] += 500.0
        return [Observation(energy_j["value"])]

    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=prometheus.otlp_metrics_url, timeout=5), export_interval_millis=60_000
    )
    provider = MeterProvider(
        resource=Resource.create({"service.name": "joulie-test", "k8s.node.name": "node-a", "host.name": "node-a"}),
        metric_readers=[reader],
    )
    meter = provider.get_meter("joulie-test")
    meter.create_observable_counter("hw.host.energy", callbacks=[observe], unit="J")
    try:
        for _ in range(3):
            assert reader.force_flush(timeout_millis=5000)
            time.sleep(1.0)
    finally:
        provider.shutdown()

    result: list[dict[str, object]] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not result:
        result = prometheus.query('hw_host_energy_joules_total{k8s_node_name="node-a"}')
        time.sleep(0.5)
    assert result, "the pushed counter never appeared under its translated name with the promoted node label"
    metric, value = result[0]["metric"], result[0]["value"]
    assert isinstance(metric, dict) and metric["host_name"] == "node-a"
    assert isinstance(value, list) and float(value[1]) >= 1500.0
