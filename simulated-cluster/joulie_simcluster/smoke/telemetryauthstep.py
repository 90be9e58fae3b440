"""S17's step: a push without a client certificate stores nothing on the live cluster's Prometheus. Shell.

Three OTLP pushes of one probe gauge (``joulie.smoke.probe``, a name nothing of Joulie reads, with a
data-point attribute ``probe`` naming the push: a data-point attribute is a label in every telemetry
mode's translation, promoted or not) through the OpenTelemetry SDK exporter the agents use: over TLS
trusting the cluster's telemetry CA but presenting no certificate; over plain HTTP to the same port;
and, the control, with the harness's certificate of that CA. Then the harness's query, for a few export
intervals, for each probe. The evaluation is the pure ``telemetryauth.telemetry_authenticated``.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path

import requests
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
from opentelemetry.sdk.resources import Resource

from joulie_simcluster import telemetrytls
from joulie_simcluster.smoke.checks import Assertion
from joulie_simcluster.smoke.telemetryauth import telemetry_authenticated

PROBE_METRIC = "joulie.smoke.probe"
PUSH_TIMEOUT_S = 5.0


def exporter_session() -> requests.Session:
    """A session that takes only the CA it is given: with ``trust_env`` (requests' default) a
    REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE in the harness's environment replaces the exporter's
    certificate_file (docs/security.md), and a proxy setting would route loopback through a proxy."""
    session = requests.Session()
    session.trust_env = False
    return session


def _push(endpoint: str, probe: str, ca: Path | None, cert: Path | None = None, key: Path | None = None) -> str:
    """One export of the probe gauge; "" when the receiver accepted it, else how it ended."""
    reader = InMemoryMetricReader()
    provider = MeterProvider(resource=Resource.create({"service.name": "joulie-smoke-probe"}), metric_readers=[reader])

    def observe(_: CallbackOptions) -> list[Observation]:
        return [Observation(1.0, {"probe": probe})]

    provider.get_meter("joulie-smoke").create_observable_gauge(PROBE_METRIC, callbacks=[observe])
    try:
        data = reader.get_metrics_data()
    finally:
        provider.shutdown()
    if data is None:
        return "no data point to push (the SDK collected nothing)"
    exporter = OTLPMetricExporter(
        endpoint=endpoint, timeout=PUSH_TIMEOUT_S, certificate_file=str(ca) if ca else None,
        client_certificate_file=str(cert) if cert else None, client_key_file=str(key) if key else None,
        session=exporter_session(),
    )
    try:
        result = exporter.export(data, timeout_millis=PUSH_TIMEOUT_S * 1000)
    except OSError as err:  # refused at the handshake: what an attacker's client sees
        return f"{type(err).__name__}"
    finally:
        exporter.shutdown()
    return "" if result == MetricExportResult.SUCCESS else "export failed (refused by the receiver)"


def _stored(prometheus_url: str, cluster: Mapping[str, str], probe: str) -> bool:
    promql = f'{{__name__=~"joulie[._]smoke[._]probe.*", probe="{probe}"}}'
    url = f"{prometheus_url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    with urllib.request.urlopen(url, timeout=10, context=telemetrytls.query_context(cluster)) as resp:
        return bool(json.loads(resp.read())["data"]["result"])


def telemetry_authenticated_step(cluster: Mapping[str, str], wait_s: float) -> Assertion:
    """S17 against the cluster cluster.env records; ``wait_s``: how long the control may take to show."""
    pki = telemetrytls.pki_of(cluster)
    url = cluster["PROMETHEUS_URL"]
    if pki is None:
        return telemetry_authenticated(False, False, {}, [])
    token = secrets.token_hex(4)
    endpoint = f"{url}/api/v1/otlp/v1/metrics"
    probes = {"tls": f"s17-{token}-no-certificate-tls", "http": f"s17-{token}-no-certificate-http"}
    refused = {
        "tls": _push(endpoint, probes["tls"], pki.ca_crt),
        "http": _push(endpoint.replace("https://", "http://", 1), probes["http"], None),
    }
    crt, key = pki.client("harness")
    control = f"s17-{token}-control"
    control_push = _push(endpoint, control, pki.ca_crt, crt, key)
    deadline = time.monotonic() + wait_s
    control_stored = False
    while not control_push and not control_stored and time.monotonic() < deadline:
        control_stored = _stored(url, cluster, control)
        if not control_stored:
            time.sleep(1.0)
    # Read after the control shows: a push accepted before it would show by now too.
    stored_without = [how for how, probe in probes.items() if _stored(url, cluster, probe)]
    return telemetry_authenticated(True, control_stored, refused, stored_without)
