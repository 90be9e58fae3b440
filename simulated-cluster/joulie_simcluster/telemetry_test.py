import pytest
import yaml

from joulie_simcluster import telemetry
from joulie_simcluster.timing import timing


def test_each_mode_configures_prometheus_and_the_controller_manager_together() -> None:
    ci = timing("ci")
    prom = yaml.safe_load(telemetry.part("otel-unpromoted", "prom-config", ci))
    assert prom["otlp"]["promote_resource_attributes"] == []
    values = yaml.safe_load(telemetry.part("otel-unpromoted", "joulie-values", ci))
    assert values["controllerManager"]["env"]["OTEL_NODE_ATTRIBUTE_PROMOTED"] == "false"
    utf8 = yaml.safe_load(telemetry.part("otel-utf8", "prom-config", ci))
    assert utf8["otlp"]["translation_strategy"] == "NoUTF8EscapingWithSuffixes"
    assert yaml.safe_load(telemetry.part("otel-utf8", "joulie-values", ci))["controllerManager"]["env"]["OTEL_METRIC_NAMING"] == "utf8-suffixes"
    both = yaml.safe_load(telemetry.part("otel-labels-unpromoted", "prom-config", ci))["otlp"]
    assert (both["promote_resource_attributes"], both["translation_strategy"]) == ([], "NoUTF8EscapingWithSuffixes")
    env = yaml.safe_load(telemetry.part("otel-labels-unpromoted", "joulie-values", ci))["controllerManager"]["env"]
    assert (env["OTEL_NODE_ATTRIBUTE_PROMOTED"], env["OTEL_METRIC_NAMING"]) == ("false", "utf8-suffixes")
    default = yaml.safe_load(telemetry.part("otlp", "prom-config", ci))
    assert "k8s.node.name" in default["otlp"]["promote_resource_attributes"]


def test_host_scope_sets_the_controllers_scope() -> None:
    env = yaml.safe_load(telemetry.part("otlp", "joulie-values", timing("ci"), scope="host"))["controllerManager"]["env"]
    assert env["NODE_POWER_SCOPE"] == "host"


def test_unknown_modes_are_refused_with_the_known_ones() -> None:
    with pytest.raises(telemetry.TelemetryError, match="unknown mode; known: otlp, otel-unpromoted"):
        telemetry.mode("snmp")


def test_scrape_mode_scrapes_the_simulator_and_pushes_nothing() -> None:
    prom = yaml.safe_load(telemetry.part("scrape", "prom-config", timing("ci")))
    cadvisor = {"job_name": "kubelet-cadvisor", "metrics_path": "/metrics/cadvisor", "honor_labels": True,
                "scrape_interval": "2s", "static_configs": [{"targets": ["<simulator>"]}]}
    assert prom["scrape_configs"] == [{"job_name": "joulie-simulator", "scrape_interval": "2s",
                                       "static_configs": [{"targets": ["<simulator>"]}]}, cadvisor]
    assert yaml.safe_load(telemetry.part("scrape", "sim-values", timing("ci")))["emulate"]["otlpEndpoint"] == ""
    # Every mode scrapes the emulated kubelets' cAdvisor (the receipts' per-Pod CPU time), and only that.
    assert yaml.safe_load(telemetry.part("otlp", "prom-config", timing("ci")))["scrape_configs"] == [cadvisor]


def test_collector_modes_print_their_collector_config() -> None:
    col = yaml.safe_load(telemetry.part("otel-collector", "otelcol-config", timing("ci")))
    assert col["receivers"]["otlp"]["protocols"]["http"]["endpoint"] == "127.0.0.1:<otlp-port>"
    bridge = yaml.safe_load(telemetry.part("otel-bridge", "otelcol-config", timing("ci")))
    assert "prometheus" in bridge["receivers"]
    assert telemetry.part("otlp", "otelcol-config", timing("ci")).startswith("# mode otlp uses no Collector")


def test_collector_mode_points_the_simulator_at_the_collector() -> None:
    sim = yaml.safe_load(telemetry.part("otel-collector", "sim-values", timing("ci")))
    assert sim["emulate"]["otlpEndpoint"] == "<collector>/v1/metrics"
    m = telemetry.mode("otel-collector")
    s = m.collector_settings("http://127.0.0.1:9090", "127.0.0.1:1", "127.0.0.1:4318", "127.0.0.1:8080", "2s")
    assert (s.mode, s.otlp_http_endpoint, s.scrape_targets) == ("otel-collector", "127.0.0.1:4318", ())
    assert m.truth_scope() == "host" and m.simulator_pushes
    with pytest.raises(telemetry.TelemetryError, match="otlp uses no Collector"):
        telemetry.mode("otlp").collector_settings("p", "h", "o", "s")


def test_bridge_scrapes_component_power_only_and_reads_components() -> None:
    ci = timing("ci")
    bridge = yaml.safe_load(telemetry.part("otel-bridge", "otelcol-config", ci))
    job = bridge["receivers"]["prometheus"]["config"]["scrape_configs"][0]
    assert (job["metrics_path"], job["static_configs"], job["scrape_interval"]) == (
        "/metrics/components", [{"targets": ["<simulator>"]}], "2s")
    assert yaml.safe_load(telemetry.part("otel-bridge", "sim-values", ci))["emulate"]["otlpEndpoint"] == ""
    # No whole-host power to read: a host scope request does not apply, the controller sums components.
    env = yaml.safe_load(telemetry.part("otel-bridge", "joulie-values", ci, scope="host"))["controllerManager"]["env"]
    assert env["NODE_POWER_SCOPE"] == "components"
    assert "component" in yaml.safe_load(telemetry.part("otel-bridge", "checks", ci))["S06"]
    assert telemetry.mode("otel-bridge").truth_scope() == "components"


def test_agent_mode_has_the_agents_push_and_the_simulator_stay_quiet() -> None:
    ci = timing("ci")
    m = telemetry.mode("agent")
    assert not m.simulator_pushes and m.truth_scope() == "components" and not m.needs_collector
    assert yaml.safe_load(telemetry.part("agent", "sim-values", ci))["emulate"]["otlpEndpoint"] == ""
    values = yaml.safe_load(telemetry.part("agent", "joulie-values", ci))
    assert values["agent"]["env"] == {"POWER_EXPORT_ENDPOINT": "<prometheus>/api/v1/otlp/v1/metrics",
                                      "POWER_EXPORT_INTERVAL": "2s"}
    assert "NODE_POWER_SCOPE" not in values["controllerManager"]["env"]
    assert m.agent_env("http://127.0.0.1:9090", 5.0)["POWER_EXPORT_ENDPOINT"] == "http://127.0.0.1:9090/api/v1/otlp/v1/metrics"
    # Where the simulator meters the power, the agents push the per-GPU signals only.
    assert telemetry.mode("otlp").agent_env("http://p", 5.0)["POWER_EXPORT_METRICS"] == "gpu"
    assert "POWER_EXPORT_METRICS" not in m.agent_env("http://p", 5.0)
