"""The real custom otelcol between producers and the real Prometheus 3, in both Collector modes.

otel-collector: an OTLP/HTTP push into the Collector is answered by a PromQL query on Prometheus,
with the promoted k8s_node_name label. otel-bridge: the Collector scrapes a Prometheus text
endpoint served by the test and the series arrive in Prometheus through its OTLP receiver.
Skipped (with the reason) only when otelcol is not bootstrapped; Prometheus missing is a failure,
as in the other tool tests.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from joulie_localcluster.otelcol import Otelcol, OtelcolSettings, otelcol_config, start_otelcol
from joulie_localcluster.procs import ProcessGroup, free_port
from joulie_localcluster.prometheus import Prometheus
from joulie_localcluster.tools import ToolMissingError, Tools, load_tools

pytest_plugins = ["joulie_testinfra.fixtures"]


@pytest.fixture(scope="module")
def otelcol_tools() -> Tools:
    """The tool manifest, once it lists a built otelcol; otherwise the test is skipped, saying why."""
    try:
        tools = load_tools()
        tools.path("otelcol")
    except ToolMissingError as err:
        pytest.skip(f"otelcol is not bootstrapped: {err}")
    return tools


@pytest.fixture()
def group() -> Iterator[ProcessGroup]:
    """The test's own processes (the Collector), stopped by PID at teardown."""
    g = ProcessGroup()
    try:
        yield g
    finally:
        g.stop_all()


def _query_until(prom: Prometheus, promql: str, timeout_s: float = 30) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = prom.query(promql)
        if result:
            return result
        time.sleep(0.5)
    return result


def _fail_with_log(col: Otelcol, what: str) -> None:
    pytest.fail(f"{what}; last otelcol log lines ({col.proc.log_path}):\n{col.proc.log_tail(40)}", pytrace=False)


def test_otel_collector_mode_pushes_otlp_into_prometheus(
    otelcol_tools: Tools, prometheus: Prometheus, group: ProcessGroup, tmp_path: Path
) -> None:
    col = start_otelcol(otelcol_tools, tmp_path / "otelcol", group, "otel-collector", prometheus.url)
    assert col.proc.alive()

    power_w = 187.25
    energy_j = {"value": 10_000.0}

    def observe_power(_: CallbackOptions) -> list[Observation]:
        return [Observation(power_w)]

    def observe_energy(_: CallbackOptions) -> list[Observation]:
        energy_j["value"] += 500.0
        return [Observation(energy_j["value"])]

    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=col.otlp_metrics_url, timeout=5), export_interval_millis=60_000
    )
    provider = MeterProvider(
        resource=Resource.create(
            {"service.name": "joulie-collector-test", "k8s.node.name": "node-c", "host.name": "node-c"}
        ),
        metric_readers=[reader],
    )
    meter = provider.get_meter("joulie-collector-test")
    meter.create_observable_gauge("joulie.test.collector.power", callbacks=[observe_power], unit="W")
    meter.create_observable_counter("joulie.test.collector.energy", callbacks=[observe_energy], unit="J")
    try:
        for _ in range(3):
            assert reader.force_flush(timeout_millis=5000)
            time.sleep(1.0)
    finally:
        provider.shutdown()

    result = _query_until(prometheus, 'joulie_test_collector_power_watts{k8s_node_name="node-c"}')
    if not result:
        _fail_with_log(col, "the gauge pushed through the Collector never appeared in Prometheus with k8s_node_name")
    metric, value = result[0]["metric"], result[0]["value"]
    assert metric["host_name"] == "node-c"
    assert metric["job"] == "joulie-collector-test"
    assert float(value[1]) == pytest.approx(power_w, rel=0.03)

    energy = _query_until(prometheus, 'joulie_test_collector_energy_joules_total{k8s_node_name="node-c"}')
    assert energy, "the counter pushed through the Collector never appeared as ..._joules_total"
    assert float(energy[0]["value"][1]) >= 11_000.0


def test_otel_bridge_mode_scrapes_metrics_into_prometheus(
    otelcol_tools: Tools, prometheus: Prometheus, group: ProcessGroup, tmp_path: Path
) -> None:
    # A tiny /metrics endpoint with the names the simulator serves (OTLP names, Prometheus text).
    registry = CollectorRegistry()
    power = Gauge("hw_host_power_watts", "Host power", ["k8s_node_name", "host_name"], registry=registry)
    energy = Counter("hw_host_energy_joules", "Host energy", ["k8s_node_name", "host_name"], registry=registry)
    power.labels("node-b", "node-b").set(250.5)
    energy.labels("node-b", "node-b").inc(4321.0)
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        col = start_otelcol(
            otelcol_tools, tmp_path / "otelcol", group, "otel-bridge", prometheus.url,
            scrape_targets=(f"127.0.0.1:{port}",),
        )
        result = _query_until(prometheus, 'hw_host_power_watts{k8s_node_name="node-b"}', timeout_s=40)
        if not result:
            _fail_with_log(col, "the scraped gauge never arrived in Prometheus through the Collector")
        metric, value = result[0]["metric"], result[0]["value"]
        assert metric["job"] == "joulie-simulator"
        assert metric["host_name"] == "node-b"
        assert float(value[1]) == pytest.approx(250.5, rel=0.03)

        counter = _query_until(prometheus, 'hw_host_energy_joules_total{k8s_node_name="node-b"}', timeout_s=20)
        if not counter:
            names = prometheus.query('{__name__=~"hw_host_energy.*"}')
            _fail_with_log(col, f"the scraped counter did not arrive as hw_host_energy_joules_total (found: {names})")
        assert float(counter[0]["value"][1]) == pytest.approx(4321.0, rel=0.03)
    finally:
        server.shutdown()
        thread.join(timeout=5)


def test_config_modes_are_pure_and_point_at_prometheus_otlp() -> None:
    collector = otelcol_config(OtelcolSettings(
        mode="otel-collector", prometheus_url="http://127.0.0.1:9090/", health_endpoint="127.0.0.1:13133",
        otlp_http_endpoint="127.0.0.1:4318",
    ))
    assert collector["receivers"] == {"otlp": {"protocols": {"http": {"endpoint": "127.0.0.1:4318"}}}}
    assert collector["exporters"]["otlphttp/prometheus"]["endpoint"] == "http://127.0.0.1:9090/api/v1/otlp"
    assert collector["service"]["pipelines"]["metrics"] == {
        "receivers": ["otlp"], "processors": ["batch"], "exporters": ["otlphttp/prometheus"]}

    bridge = otelcol_config(OtelcolSettings(
        mode="otel-bridge", prometheus_url="http://127.0.0.1:9090", health_endpoint="127.0.0.1:13133",
        scrape_targets=("127.0.0.1:8080",), debug_verbosity="basic",
    ))
    job = bridge["receivers"]["prometheus"]["config"]["scrape_configs"][0]
    assert job["static_configs"] == [{"targets": ["127.0.0.1:8080"]}] and job["metrics_path"] == "/metrics"
    assert bridge["service"]["pipelines"]["metrics"]["exporters"] == ["otlphttp/prometheus", "debug"]

    with pytest.raises(ValueError, match="otlp_http_endpoint"):
        otelcol_config(OtelcolSettings(mode="otel-collector", prometheus_url="x", health_endpoint="y"))
    with pytest.raises(ValueError, match="scrape_targets"):
        otelcol_config(OtelcolSettings(mode="otel-bridge", prometheus_url="x", health_endpoint="y"))


def test_to_a_prometheus_requiring_client_certificates_the_exporter_presents_its_own() -> None:
    base = {"mode": "otel-collector", "health_endpoint": "127.0.0.1:13133", "otlp_http_endpoint": "127.0.0.1:4318"}
    plain = otelcol_config(OtelcolSettings(prometheus_url="http://127.0.0.1:9090", **base))  # type: ignore[arg-type]
    assert plain["exporters"]["otlphttp/prometheus"]["tls"] == {"insecure": True}
    tls = otelcol_config(OtelcolSettings(prometheus_url="https://127.0.0.1:9090", **base,  # type: ignore[arg-type]
                                         prometheus_tls=("/t/ca.crt", "/t/collector.crt", "/t/collector.key")))
    assert tls["exporters"]["otlphttp/prometheus"]["tls"] == {
        "ca_file": "/t/ca.crt", "cert_file": "/t/collector.crt", "key_file": "/t/collector.key"}
