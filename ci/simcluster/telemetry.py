"""Telemetry modes (seed "Telemetry modes"): how the emulated Nodes' power reaches Prometheus and
which controller-manager settings read it. ``SIMCLUSTER_TELEMETRY`` picks one at ``up``; every
mode is checked against the emulator's truth by the smoke's S06 (within 3 %, never closer than 1 W).

``otlp`` (default)        the simulator pushes OTLP into Prometheus' receiver; k8s.node.name promoted,
                          UnderscoreEscapingWithSuffixes (hw_host_energy_joules_total)
``otel-unpromoted``       no resource attribute promoted: the controller manager joins target_info
                          on job/instance (OTEL_NODE_ATTRIBUTE_PROMOTED=false)
``otel-labels-unpromoted``  both at once: nothing promoted and UTF-8 names, so the node's label is joined
                          from target_info under its literal name (group_left ("k8s.node.name")); what a
                          Prometheus 3 with UTF-8 names and no promotion gives. Ours: the original's
                          definition of this mode is not known.
``otel-utf8``             NoUTF8EscapingWithSuffixes: names keep their dots ({"hw.host.energy_joules_total"})
                          (OTEL_METRIC_NAMING=utf8-suffixes)
``scrape``                Prometheus scrapes the simulator's /metrics (same names and labels); no OTLP push
``otel-collector``, ``otel-bridge``  through an OpenTelemetry Collector (OTLP in / the simulator's /metrics
                          scraped, otlphttp out to Prometheus): the otelcol is built (ci/tools/otelcol) and its
                          config comes from joulie_testinfra.otelcol; the simulated cluster does not start it yet.

With SIMCLUSTER_POWER_SCOPE=host a mode also sets NODE_POWER_SCOPE=host (whole-host power only).
Pure: ``simcluster telemetry --part ... --mode ...`` prints what a mode generates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from joulie_testinfra.otelcol import OtelcolSettings, otelcol_config
from joulie_testinfra.prometheus import PROMOTED_RESOURCE_ATTRIBUTES, PrometheusSettings, prometheus_config
from simcluster.timing import Timing, duration

PARTS = ("prom-config", "otelcol-config", "sim-values", "joulie-values", "checks", "wait")


class TelemetryError(ValueError):
    """A mode that does not exist or cannot run here; the message says which and why."""


@dataclass(frozen=True)
class Mode:
    name: str
    description: str
    promote: list[str] = field(default_factory=lambda: list(PROMOTED_RESOURCE_ATTRIBUTES))
    translation: str = "UnderscoreEscapingWithSuffixes"
    controller_env: dict[str, str] = field(default_factory=dict)
    needs_collector: bool = False
    scrape: bool = False
    """Prometheus scrapes the simulator's /metrics instead of receiving OTLP pushes."""

    def prometheus_settings(self, simulator: str = "<simulator>", interval: str = "5s") -> PrometheusSettings:
        """`simulator`: host:port of the simulator's HTTP server (scrape mode)."""
        jobs = [{"job_name": "joulie-simulator", "scrape_interval": interval,
                 "static_configs": [{"targets": [simulator]}]}] if self.scrape else []
        return PrometheusSettings(promote_resource_attributes=list(self.promote), translation_strategy=self.translation,
                                  scrape_configs=jobs)

    def joulie_env(self, scope: str = "auto") -> dict[str, str]:
        env = dict(self.controller_env)
        if scope == "host":
            env["NODE_POWER_SCOPE"] = "host"
        return env


MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode("otlp", "OTLP straight into Prometheus, k8s.node.name promoted, underscore names with suffixes"),
        Mode("otel-unpromoted", "OTLP into Prometheus without promotion; node joined from target_info",
             promote=[], controller_env={"OTEL_NODE_ATTRIBUTE_PROMOTED": "false"}),
        Mode("otel-labels-unpromoted", "OTLP into Prometheus, no promotion and UTF-8 names; node label joined "
             "from target_info by its literal name", promote=[], translation="NoUTF8EscapingWithSuffixes",
             controller_env={"OTEL_NODE_ATTRIBUTE_PROMOTED": "false", "OTEL_METRIC_NAMING": "utf8-suffixes"}),
        Mode("otel-utf8", "OTLP into Prometheus with UTF-8 names (NoUTF8EscapingWithSuffixes)",
             translation="NoUTF8EscapingWithSuffixes", controller_env={"OTEL_METRIC_NAMING": "utf8-suffixes"}),
        Mode("scrape", "Prometheus scrapes the simulator's /metrics; no OTLP push", scrape=True),
        Mode("otel-collector", "OTLP through an OpenTelemetry Collector into Prometheus", needs_collector=True),
        Mode("otel-bridge", "the Collector's Prometheus bridge (no whole-host power)", needs_collector=True),
    )
}


def mode(name: str) -> Mode:
    m = MODES.get(name)
    if m is None:
        raise TelemetryError(f"SIMCLUSTER_TELEMETRY={name!r}: unknown mode; known: {', '.join(MODES)}")
    return m


def runnable(name: str) -> Mode:
    m = mode(name)
    if m.needs_collector:
        raise TelemetryError(
            f"telemetry mode {name}: needs an OpenTelemetry Collector, and the simulated cluster does not start one yet "
            "(the otelcol is built, ci/tools/otelcol, and both paths pass libs/testinfra's otelcol_test against a real "
            "Prometheus; the process runtime runs otlp, otel-unpromoted, otel-labels-unpromoted, otel-utf8 and scrape)"
        )
    return m


def part(name: str, part_name: str, timing: Timing, scope: str = "auto") -> str:
    """What `simcluster telemetry --part P --mode M` prints."""
    m = mode(name)
    out: Any
    if part_name == "prom-config":
        out = prometheus_config(m.prometheus_settings(interval=duration(timing.otlp_interval_s)))
    elif part_name == "otelcol-config":
        if not m.needs_collector:
            return f"# mode {name} uses no Collector\n"
        bridge = name == "otel-bridge"
        out = otelcol_config(OtelcolSettings(
            mode="otel-bridge" if bridge else "otel-collector", prometheus_url="http://<prometheus>",
            health_endpoint="127.0.0.1:<health-port>", otlp_http_endpoint=None if bridge else "127.0.0.1:<otlp-port>",
            scrape_targets=("<simulator>",) if bridge else (), scrape_interval=duration(timing.otlp_interval_s)))
    elif part_name == "sim-values":
        out = {"emulate": {"otlpEndpoint": "" if m.scrape else "<prometheus>/api/v1/otlp/v1/metrics",
                           "otlpInterval": duration(timing.otlp_interval_s), "tick": duration(timing.sim_tick_s)}}
    elif part_name == "joulie-values":
        out = {"controllerManager": {"env": {"NODE_POWER_SOURCE": "prometheus",
                                             "NODE_POWER_RATE_WINDOW": duration(timing.rate_window_s),
                                             **m.joulie_env(scope)}}}
    elif part_name == "checks":
        out = {"S06": "NodeTwin.status.powerMeasurement.measuredNodePowerW within max(3 %, 1 W) of "
                      f"/debug/emulate host.powerW ({'whole-host' if scope == 'host' else 'host, else components'})"}
    elif part_name == "wait":
        out = {"settleSeconds": timing.settle_s, "rateWindow": duration(timing.rate_window_s)}
    else:
        raise TelemetryError(f"--part {part_name!r}: one of {', '.join(PARTS)}")
    return str(yaml.safe_dump(out, sort_keys=False))


def runnable_message(name: str) -> str:
    try:
        runnable(name)
    except TelemetryError as e:
        return str(e)
    return ""
