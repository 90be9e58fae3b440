"""The authenticated telemetry path as the chart wires it (``telemetryTls``, docs/security.md): off by
default; on, the controller manager reads Prometheus with its own certificate and the agents push with
theirs, each from a Secret of its own; a setting that could not work is refused at render."""

from __future__ import annotations

from typing import Any

import pytest

from joulie_simcluster import chart
from joulie_simcluster.chart_cases import JOULIE, POOL_VALUES, container, env_of, helm, one

pytest_plugins = ["joulie_testinfra.fixtures"]

__all__ = ["helm"]

ON = {
    "telemetryTls.enabled": "true",
    "telemetryTls.controllerSecret": "joulie-telemetry-controller",
    "telemetryTls.agentSecret": "joulie-telemetry-agent",
    "agent.powerExport.endpoint": "https://prometheus.monitoring:9090/api/v1/otlp/v1/metrics",
    "controllerManager.env.NODE_POWER_PROMETHEUS_ADDRESS": "https://prometheus.monitoring:9090",
}
CONTROLLER = "joulie-controller-manager"


def _secret_mounts(workload: dict[str, Any]) -> dict[str, str]:
    """mountPath -> Secret name, for the Secret volumes the single container mounts."""
    volumes = {v["name"]: v["secret"]["secretName"] for v in workload["spec"]["template"]["spec"].get("volumes") or []
               if "secret" in v}
    return {m["mountPath"]: volumes[m["name"]] for m in container(workload).get("volumeMounts") or []
            if m["name"] in volumes and m.get("readOnly")}


def test_off_by_default_no_certificate_env_or_mount() -> None:
    docs = chart.render_chart(JOULIE, set_values={"agent.powerExport.endpoint": "http://prom:9090/api/v1/otlp/v1/metrics"})
    for w in (one(docs, "Deployment", CONTROLLER), one(docs, "DaemonSet", "joulie-agent")):
        assert not [k for k in env_of(w) if k.startswith(("OTEL_EXPORTER_OTLP", "NODE_POWER_PROMETHEUS_C"))]
        assert _secret_mounts(w) == {}


@pytest.mark.parametrize("mode", ["daemonset", "pool"])
def test_on_each_side_gets_its_own_certificate_from_its_own_secret(mode: str) -> None:
    docs = chart.render_chart(JOULIE, [POOL_VALUES] if mode == "pool" else [], ON)
    ctl = one(docs, "Deployment", CONTROLLER)
    env = env_of(ctl)
    assert (env["NODE_POWER_PROMETHEUS_CA_FILE"], env["NODE_POWER_PROMETHEUS_CLIENT_CERT_FILE"],
            env["NODE_POWER_PROMETHEUS_CLIENT_KEY_FILE"]) == (
        "/etc/joulie/telemetry-tls/ca.crt", "/etc/joulie/telemetry-tls/tls.crt", "/etc/joulie/telemetry-tls/tls.key")
    assert _secret_mounts(ctl) == {"/etc/joulie/telemetry-tls": "joulie-telemetry-controller"}
    agent = (one(docs, "DaemonSet", "joulie-agent") if mode == "daemonset"
             else one(docs, "StatefulSet", "joulie-agent-pool"))
    env = env_of(agent)
    assert (env["OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE"], env["OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE"],
            env["OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY"]) == (
        "/etc/joulie/otlp-tls/ca.crt", "/etc/joulie/otlp-tls/tls.crt", "/etc/joulie/otlp-tls/tls.key")
    assert _secret_mounts(agent).get("/etc/joulie/otlp-tls") == "joulie-telemetry-agent"
    # The controller's key is never on a node, and the agents' certificate never in the controller.
    assert "joulie-telemetry-controller" not in _secret_mounts(agent).values()
    assert "joulie-telemetry-agent" not in _secret_mounts(ctl).values()


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"telemetryTls.agentSecret": ""}, "telemetryTls.enabled needs telemetryTls.controllerSecret and"),
        ({"telemetryTls.agentSecret": "joulie-telemetry-controller"}, "needs a Secret of its own"),
        ({"controllerManager.env.NODE_POWER_PROMETHEUS_ADDRESS": "http://prometheus.monitoring:9090"},
         "NODE_POWER_PROMETHEUS_ADDRESS=http://prometheus.monitoring:9090 must be https://"),
        ({"agent.powerExport.endpoint": "http://prometheus.monitoring:9090/api/v1/otlp/v1/metrics"},
         "agent.powerExport.endpoint=http://prometheus.monitoring:9090/api/v1/otlp/v1/metrics must be https://"),
    ],
)
def test_a_setting_that_could_not_work_is_refused_saying_which(override: dict[str, str], message: str) -> None:
    with pytest.raises(chart.ChartError, match=message.replace(".", r"\.").replace("+", r"\+")):
        chart.render_chart(JOULIE, set_values={**ON, **override})
