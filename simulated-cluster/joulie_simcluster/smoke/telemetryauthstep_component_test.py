"""S17's step against the real Prometheus 3 the simulated cluster runs, with the PKI ``up`` makes: over the
authenticated path the uncertified pushes are refused and the control is stored (pass); against a
Prometheus that takes plain-HTTP pushes the same probe stores the uncertified push (the check fails
there, so a pass is not a check that could not have failed)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from joulie_localcluster.procs import ProcessGroup
from joulie_localcluster.prometheus import Prometheus, start_prometheus
from joulie_localcluster.tools import Tools
from joulie_simcluster import telemetrytls
from joulie_simcluster.smoke import telemetryauth, telemetryauthstep

pytest_plugins = ["joulie_testinfra.fixtures"]


@pytest.fixture
def secured(test_tools: Tools, tmp_path: Path) -> Iterator[tuple[Prometheus, dict[str, str]]]:
    pki = telemetrytls.make(tmp_path)
    group = ProcessGroup()
    try:
        prom = start_prometheus(test_tools, tmp_path / "prom", group, tls=telemetrytls.prometheus_tls(pki))
        yield prom, {"PROMETHEUS_URL": prom.url, telemetrytls.TLS_DIR_KEY: str(pki.directory)}
    finally:
        group.stop_all()


def test_over_the_authenticated_path_only_the_certified_push_is_stored(
    secured: tuple[Prometheus, dict[str, str]],
) -> None:
    _, cluster = secured
    a = telemetryauthstep.telemetry_authenticated_step(cluster, 15)
    assert a.status == "pass", a.observed


def test_a_prometheus_taking_plain_pushes_fails_the_check(prometheus: Prometheus, tmp_path: Path) -> None:
    # The probe's logic against an open receiver: the http push is stored, so S17 fails.
    refused = {"http": telemetryauthstep._push(prometheus.otlp_metrics_url, "open-probe", None)}
    deadline = time.monotonic() + 10
    while not telemetryauthstep._stored(prometheus.url, {}, "open-probe") and time.monotonic() < deadline:
        time.sleep(0.5)
    stored = [how for how in refused if telemetryauthstep._stored(prometheus.url, {}, "open-probe")]
    a = telemetryauth.telemetry_authenticated(True, True, refused, stored)
    assert refused == {"http": ""} and a.status == "fail", a.observed
