"""The simulated cluster's telemetry certificates: who gets which, and that the PKI ``up`` makes works
for a TLS server requiring client certificates, as Prometheus' web config does."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

import pytest

from joulie_simcluster import telemetrytls


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    pki = telemetrytls.make(tmp_path_factory.mktemp("state"))
    return {"PROMETHEUS_URL": "https://127.0.0.1:1", telemetrytls.TLS_DIR_KEY: str(pki.directory)}


def test_plain_http_cluster_gets_no_certificate() -> None:
    plain = {"PROMETHEUS_URL": "http://127.0.0.1:1"}
    assert telemetrytls.controller_env(plain) == {} and telemetrytls.push_env(plain, "agent") == {}
    assert telemetrytls.query_context(plain) is None and telemetrytls.collector_files(plain) is None


def test_each_side_gets_its_own_certificate_under_the_settings_a_real_install_uses(cluster: dict[str, str]) -> None:
    d = Path(cluster[telemetrytls.TLS_DIR_KEY])
    assert telemetrytls.controller_env(cluster) == {
        "NODE_POWER_PROMETHEUS_CA_FILE": str(d / "ca.crt"),
        "NODE_POWER_PROMETHEUS_CLIENT_CERT_FILE": str(d / "controller.crt"),
        "NODE_POWER_PROMETHEUS_CLIENT_KEY_FILE": str(d / "controller.key"),
    }
    agent, sim = telemetrytls.push_env(cluster, "agent"), telemetrytls.push_env(cluster, "simulator")
    assert agent["OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE"] == str(d / "agent.crt")
    assert sim["OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY"] == str(d / "simulator.key")
    assert agent["OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE"] == str(d / "ca.crt")
    assert (d / "controller.key").stat().st_mode & 0o077 == 0  # keys readable by their owner only
    with pytest.raises(ValueError, match="no telemetry client certificate 'prometheus'"):
        telemetrytls.push_env(cluster, "prometheus")


def test_incomplete_certificates_are_an_error_not_plain_http(tmp_path: Path) -> None:
    pki = telemetrytls.make(tmp_path)
    (pki.directory / "agent.key").unlink()
    with pytest.raises(FileNotFoundError, match="telemetry certificates are incomplete"):
        telemetrytls.push_env({telemetrytls.TLS_DIR_KEY: str(pki.directory)}, "agent")


def _handshake(cluster: dict[str, str], client: ssl.SSLContext) -> str:
    """A TLS server with Prometheus' serving certificate requiring a client certificate of the CA, as its
    web config does; "ok" or the error the client saw."""
    pki = telemetrytls.pki_of(cluster)
    assert pki is not None
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(pki.server_crt, pki.server_key)
    server_ctx.load_verify_locations(pki.ca_crt)
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            with server_ctx.wrap_socket(conn, server_side=True) as tls:
                tls.sendall(b"ok")
        except (ssl.SSLError, OSError):
            pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
                client.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return tls.recv(2).decode() or "closed"
    except (ssl.SSLError, OSError) as err:
        return type(err).__name__
    finally:
        t.join(5)
        listener.close()


def test_the_harness_certificate_is_accepted_and_no_certificate_is_refused(cluster: dict[str, str]) -> None:
    ctx = telemetrytls.query_context(cluster)
    assert ctx is not None and _handshake(cluster, ctx) == "ok"
    pki = telemetrytls.pki_of(cluster)
    assert pki is not None
    anonymous = ssl.create_default_context(cafile=str(pki.ca_crt))
    assert _handshake(cluster, anonymous) != "ok"
