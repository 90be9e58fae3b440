"""The authenticated telemetry path against a real Prometheus 3 (issue 36): with a web config that
requires a client certificate from the operator's CA, a push without one, or with one from another
CA, stores nothing, whatever node it names; the agents' and simulator's exporter, given the
certificate through the standard OTEL_EXPORTER_OTLP_* settings, is stored; the controller reads
with its own certificate and gets no data without one (every node neutral, as Prometheus down)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from joulie_controller.settings import PrometheusSettings, Settings
from joulie_controller.telemetry.prometheus import GpuSignalReader, PowerReader, PrometheusError, ReceiptReader
from joulie_localcluster.certs import Pki, make_pki
from joulie_localcluster.procs import ProcessGroup
from joulie_localcluster.prometheus import Prometheus, PrometheusTls, start_prometheus
from joulie_localcluster.tools import Tools

pytest_plugins = ["joulie_testinfra.fixtures"]


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


@pytest.fixture
def secured(test_tools: Tools, tmp_path: Path, pki: Pki) -> Iterator[Prometheus]:
    group = ProcessGroup()
    tls = PrometheusTls(pki.server_crt, pki.server_key, pki.ca_crt, pki.admin_crt, pki.admin_key)
    try:
        yield start_prometheus(test_tools, tmp_path / "prom", group, tls=tls)
    finally:
        group.stop_all()


def push(prom: Prometheus, node: str, watts: float, ca: str, cert: str | None = None, key: str | None = None) -> None:
    """One hw.host.power export for ``node`` through the SDK exporter the agent uses, with the files
    OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE, _CLIENT_CERTIFICATE and _CLIENT_KEY set in a Pod."""
    exporter = OTLPMetricExporter(
        endpoint=f"{prom.url}/api/v1/otlp/v1/metrics",
        timeout=5,
        certificate_file=ca,
        client_certificate_file=cert,
        client_key_file=key,
    )
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=60_000)
    provider = MeterProvider(
        resource=Resource.create({"service.name": "joulie-agent", "k8s.node.name": node}), metric_readers=[reader]
    )

    def observe(_: CallbackOptions) -> list[Observation]:
        return [Observation(watts)]

    provider.get_meter("joulie-test").create_observable_gauge("hw.host.power", callbacks=[observe], unit="W")
    try:
        reader.force_flush(timeout_millis=5000)
    finally:
        provider.shutdown()


def stored(prom: Prometheus, node: str, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while True:
        if prom.query(f'hw_host_power_watts{{k8s_node_name="{node}"}}'):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def test_only_a_client_certificate_of_the_operators_ca_can_push_or_read(
    secured: Prometheus, pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # requests (under the OTLP exporter) lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE override the CA the
    # exporter was given (a session's verify loses to the environment): unset here, as in an agent Pod.
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    ca = str(pki.ca_crt)
    rogue = make_pki(tmp_path / "rogue")  # a certificate the attacker made: valid, wrong CA
    push(secured, "honest", 300.0, ca, str(pki.admin_crt), str(pki.admin_key))
    assert stored(secured, "honest", wait_s=20)
    push(secured, "forged-anon", 50_000.0, ca)
    push(secured, "forged-rogue", 50_000.0, ca, str(rogue.admin_crt), str(rogue.admin_key))
    assert not stored(secured, "forged-anon", wait_s=3)
    assert not stored(secured, "forged-rogue", wait_s=0)

    def reading(cert: str = "", key: str = "") -> PowerReader:
        p = PrometheusSettings(
            url=secured.url, rate_window="1m", ca_file=ca, client_cert_file=cert, client_key_file=key
        )
        return PowerReader(Settings(prometheus=p))

    with_cert = reading(str(pki.admin_crt), str(pki.admin_key)).read()
    assert with_cert.error is None and with_cert.measurements["honest"].power_w == 300.0
    without = reading().read()
    assert without.measurements == {} and without.error is not None  # refused: every node neutral

    # The per-GPU and receipt readers go through the same authenticated client (a plain one would fail the
    # handshake: estimates at their priors and no receipt, forever).
    def settings(cert: str = "", key: str = "") -> Settings:
        return Settings(prometheus=PrometheusSettings(
            url=secured.url, rate_window="1m", ca_file=ca, client_cert_file=cert, client_key_file=key))

    certified = settings(str(pki.admin_crt), str(pki.admin_key))
    gpus = GpuSignalReader(certified)
    assert gpus.read() == {} and not gpus.health.down  # answered (nobody holds a board): no outage
    ReceiptReader(certified).read(time.time() - 60, time.time(), {})  # raises PrometheusError if refused
    with pytest.raises(PrometheusError):
        ReceiptReader(settings()).read(time.time() - 60, time.time(), {})
