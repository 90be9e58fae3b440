import pytest
import yaml

from simcluster import telemetry
from simcluster.timing import timing


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


def test_collector_modes_are_refused_with_the_reason() -> None:
    with pytest.raises(telemetry.TelemetryError, match="otel-collector: needs an OpenTelemetry Collector, and the simulated cluster does not start one yet"):
        telemetry.runnable("otel-collector")
    with pytest.raises(telemetry.TelemetryError, match="unknown mode; known: otlp, otel-unpromoted"):
        telemetry.mode("snmp")


def test_scrape_mode_scrapes_the_simulator_and_pushes_nothing() -> None:
    prom = yaml.safe_load(telemetry.part("scrape", "prom-config", timing("ci")))
    assert prom["scrape_configs"] == [{"job_name": "joulie-simulator", "scrape_interval": "2s",
                                       "static_configs": [{"targets": ["<simulator>"]}]}]
    assert yaml.safe_load(telemetry.part("scrape", "sim-values", timing("ci")))["emulate"]["otlpEndpoint"] == ""
    assert yaml.safe_load(telemetry.part("otlp", "prom-config", timing("ci")))["scrape_configs"] == []


def test_collector_modes_print_their_collector_config() -> None:
    col = yaml.safe_load(telemetry.part("otel-collector", "otelcol-config", timing("ci")))
    assert col["receivers"]["otlp"]["protocols"]["http"]["endpoint"] == "127.0.0.1:<otlp-port>"
    bridge = yaml.safe_load(telemetry.part("otel-bridge", "otelcol-config", timing("ci")))
    assert "prometheus" in bridge["receivers"]
    assert telemetry.part("otlp", "otelcol-config", timing("ci")).startswith("# mode otlp uses no Collector")
