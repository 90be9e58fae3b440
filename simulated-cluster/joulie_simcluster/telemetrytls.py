"""The simulated cluster's authenticated telemetry path (SIMCLUSTER_TELEMETRY_TLS, docs/security.md): which
certificate each side of Prometheus gets, from the throwaway PKI ``up`` makes under ``<state>/telemetry-tls``.

``up`` records the PKI's directory in cluster.env (``PROMETHEUS_TLS_DIR``); everything after reads it from
there, so a ``deploy`` or a check against a cluster started without TLS (or by an older simcluster) gets
plain HTTP and no certificate. The settings are the ones a real install uses: the controller manager's
``NODE_POWER_PROMETHEUS_CA_FILE`` / ``_CLIENT_CERT_FILE`` / ``_CLIENT_KEY_FILE``, and the OpenTelemetry
SDK's ``OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE`` / ``_CLIENT_CERTIFICATE`` / ``_CLIENT_KEY`` for pushers.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from pathlib import Path

from joulie_localcluster.certs import TelemetryPki, make_telemetry_pki
from joulie_localcluster.prometheus import PrometheusTls, client_context

TLS_DIR_KEY = "PROMETHEUS_TLS_DIR"
"""The cluster.env key naming the PKI's directory; absent: Prometheus serves plain HTTP."""
DIR_NAME = "telemetry-tls"


def make(state_root: Path) -> TelemetryPki:
    """A fresh PKI for this ``up`` (the old one's server certificate would not match the new CA)."""
    return make_telemetry_pki(state_root / DIR_NAME)


def prometheus_tls(pki: TelemetryPki) -> PrometheusTls:
    """Prometheus' web config: its serving certificate, the CA it requires clients to present, and the
    harness's own certificate (readiness probe and queries)."""
    crt, key = pki.client("harness")
    return PrometheusTls(pki.server_crt, pki.server_key, pki.ca_crt, crt, key)


def pki_of(cluster: Mapping[str, str]) -> TelemetryPki | None:
    """The PKI a cluster was started with; None for plain HTTP. A recorded directory with files missing is
    an error, not a silent fall back to no certificate (every push and query would then fail)."""
    where = cluster.get(TLS_DIR_KEY, "")
    if not where:
        return None
    pki = TelemetryPki(Path(where))
    if not pki.complete():
        raise FileNotFoundError(f"{TLS_DIR_KEY}={where}: the telemetry certificates are incomplete "
                                f"(run simcluster down, then up)")
    return pki


def controller_env(cluster: Mapping[str, str]) -> dict[str, str]:
    """The controller manager's reading certificate, as the chart's ``telemetryTls`` sets it."""
    pki = pki_of(cluster)
    if pki is None:
        return {}
    crt, key = pki.client("controller")
    return {"NODE_POWER_PROMETHEUS_CA_FILE": str(pki.ca_crt), "NODE_POWER_PROMETHEUS_CLIENT_CERT_FILE": str(crt),
            "NODE_POWER_PROMETHEUS_CLIENT_KEY_FILE": str(key)}


def push_env(cluster: Mapping[str, str], who: str) -> dict[str, str]:
    """A pusher's (``agent``, ``simulator``) OTLP exporter certificate, through the SDK's own settings."""
    pki = pki_of(cluster)
    if pki is None:
        return {}
    crt, key = pki.client(who)
    return {"OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE": str(pki.ca_crt),
            "OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE": str(crt), "OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY": str(key)}


def collector_files(cluster: Mapping[str, str]) -> tuple[str, str, str] | None:
    """(CA, certificate, key) of the Collector's exporter to Prometheus; None for plain HTTP."""
    pki = pki_of(cluster)
    if pki is None:
        return None
    crt, key = pki.client("collector")
    return str(pki.ca_crt), str(crt), str(key)


def query_context(cluster: Mapping[str, str]) -> ssl.SSLContext | None:
    """The harness's HTTPS context for its own queries (checks, scenario observations); None: plain HTTP."""
    pki = pki_of(cluster)
    if pki is None:
        return None
    crt, key = pki.client("harness")
    return client_context(pki.ca_crt, crt, key)
