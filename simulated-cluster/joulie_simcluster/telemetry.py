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
``otel-collector``        the simulator pushes OTLP to an OpenTelemetry Collector (ci/tools/otelcol), which
                          batches and forwards it (otlphttp) to Prometheus' OTLP receiver; names and promotion
                          as in otlp
``otel-bridge``           the Collector's Prometheus bridge: its prometheus receiver scrapes the simulator's
                          /metrics/components and forwards OTLP to Prometheus. It carries no whole-host power
                          (as a node exporter with RAPL and GPU meters only), so the controller manager sums
                          the components (NODE_POWER_SCOPE=components) and S06 checks against the truth's
                          component sum
In every mode Prometheus scrapes the simulator's ``/metrics/cadvisor`` (job ``kubelet-cadvisor``): each
container's CPU time, as a real cluster's Prometheus scrapes every kubelet's cAdvisor.
In every mode the agents push the per-GPU signals and hw.gpu.allocation (the emulated kubelet's
pod-resources API) into Prometheus' OTLP receiver; in modes other than ``agent`` only those
(POWER_EXPORT_METRICS=gpu).

``agent``                 the power comes from the agents, not the simulator: each agent measures its Node's
                          emulated RAPL package and DRAM counters and GPU draw (fakesmi) and pushes OTLP
                          into Prometheus' receiver (POWER_EXPORT_ENDPOINT, services/agent/joulie_agent/
                          telemetry/otlpexport.py), as on a real cluster; the simulator pushes nothing. The agents'
                          hw.host.energy is the sum of those components (no platform meter), so S06 checks
                          against the truth's component sum; the controller manager keeps NODE_POWER_SCOPE=auto

With SIMCLUSTER_POWER_SCOPE=host a mode other than otel-bridge also sets NODE_POWER_SCOPE=host (whole-host
power only); otel-bridge has none to read and stays on components.
Pure: ``simcluster telemetry --part ... --mode ...`` prints what a mode generates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from joulie_localcluster.otelcol import CollectorMode, OtelcolSettings, otelcol_config
from joulie_localcluster.prometheus import PROMOTED_RESOURCE_ATTRIBUTES, PrometheusSettings, prometheus_config
from joulie_simcluster.timing import Timing, duration

# What the bridge scrapes: the simulator's component series, without the whole-host meter.
BRIDGE_METRICS_PATH = "/metrics/components"
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
    collector: CollectorMode | None = None
    """The OpenTelemetry Collector between the simulator and Prometheus, if any, and in which mode."""
    scrape: bool = False
    """Prometheus scrapes the simulator's /metrics instead of receiving OTLP pushes."""
    host_power: bool = True
    """False: no whole-host meter reaches Prometheus (otel-bridge; agent, whose host power is the
    components' sum); S06 compares with the truth's component sum."""
    agents_push: bool = False
    """The agents measure and push the power (POWER_EXPORT_ENDPOINT); the simulator pushes nothing."""

    @property
    def needs_collector(self) -> bool:
        return self.collector is not None

    @property
    def simulator_pushes(self) -> bool:
        """Whether the simulator pushes OTLP at all (else something scrapes its /metrics)."""
        return not self.scrape and self.collector != "otel-bridge" and not self.agents_push

    def truth_scope(self) -> str:
        """Which truth S06 compares against: ``host`` (whole-host power) or ``components`` (their sum)."""
        return "host" if self.host_power else "components"

    def collector_settings(self, prometheus_url: str, health_endpoint: str, otlp_endpoint: str, simulator: str,
                           interval: str = "5s", tls: tuple[str, str, str] | None = None) -> OtelcolSettings:
        """The Collector of this mode: OTLP in at `otlp_endpoint` (otel-collector), or the simulator's
        component /metrics at `simulator` (host:port) scraped every `interval` (otel-bridge)."""
        if self.collector is None:
            raise TelemetryError(f"telemetry mode {self.name} uses no Collector")
        bridge = self.collector == "otel-bridge"
        return OtelcolSettings(
            mode=self.collector, prometheus_url=prometheus_url, health_endpoint=health_endpoint,
            otlp_http_endpoint=None if bridge else otlp_endpoint, scrape_targets=(simulator,) if bridge else (),
            scrape_interval=interval, metrics_path=BRIDGE_METRICS_PATH, prometheus_tls=tls)

    def prometheus_settings(self, simulator: str = "<simulator>", interval: str = "5s") -> PrometheusSettings:
        """`simulator`: host:port of the simulator's HTTP server (its /metrics in scrape mode; its emulated
        kubelets' /metrics/cadvisor in every mode, as a real cluster's Prometheus scrapes each kubelet's)."""
        jobs = [{"job_name": "joulie-simulator", "scrape_interval": interval,
                 "static_configs": [{"targets": [simulator]}]}] if self.scrape else []
        jobs.append(CADVISOR_JOB | {"scrape_interval": interval, "static_configs": [{"targets": [simulator]}]})
        return PrometheusSettings(promote_resource_attributes=list(self.promote), translation_strategy=self.translation,
                                  scrape_configs=jobs)

    def agent_env(self, prometheus_url: str, interval_s: float) -> dict[str, str]:
        """The agents' export settings in this mode. Where the simulator meters the power, the agents push
        only what no other source has, the per-GPU signals and which Pod holds each board
        (POWER_EXPORT_METRICS=gpu), straight into Prometheus' OTLP receiver in every mode."""
        env = {"POWER_EXPORT_ENDPOINT": f"{prometheus_url}/api/v1/otlp/v1/metrics",
               "POWER_EXPORT_INTERVAL": duration(interval_s)}
        if not self.agents_push:
            env["POWER_EXPORT_METRICS"] = "gpu"
        return env

    def joulie_env(self, scope: str = "auto") -> dict[str, str]:
        env = dict(self.controller_env)
        if scope == "host" and self.host_power:
            env["NODE_POWER_SCOPE"] = "host"
        return env


CADVISOR_JOB: dict[str, Any] = {"job_name": "kubelet-cadvisor", "metrics_path": "/metrics/cadvisor", "honor_labels": True}
"""Each container's CPU time (``container_cpu_usage_seconds_total``), which the controller manager's energy
receipts split a node's busy CPU energy by: a real cluster's Prometheus scrapes it from every kubelet
(kube-prometheus' ``kubelet`` job, path ``/metrics/cadvisor``, honouring the kubelet's labels); here one
address serves every emulated node's, each series labelled with its ``node``."""

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
        Mode("otel-collector", "OTLP through an OpenTelemetry Collector into Prometheus", collector="otel-collector"),
        Mode("otel-bridge", "the Collector's Prometheus bridge scrapes component power (no whole-host power)",
             collector="otel-bridge", host_power=False, controller_env={"NODE_POWER_SCOPE": "components"}),
        Mode("agent", "the agents measure their Nodes' counters and GPU draw and push OTLP into Prometheus",
             host_power=False, agents_push=True),
    )
}


def mode(name: str) -> Mode:
    m = MODES.get(name)
    if m is None:
        raise TelemetryError(f"SIMCLUSTER_TELEMETRY={name!r}: unknown mode; known: {', '.join(MODES)}")
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
        out = otelcol_config(m.collector_settings("http://<prometheus>", "127.0.0.1:<health-port>",
                                                  "127.0.0.1:<otlp-port>", "<simulator>", duration(timing.otlp_interval_s)))
    elif part_name == "sim-values":
        push = "<collector>/v1/metrics" if m.needs_collector else "<prometheus>/api/v1/otlp/v1/metrics"
        out = {"emulate": {"otlpEndpoint": push if m.simulator_pushes else "",
                           "otlpInterval": duration(timing.otlp_interval_s), "tick": duration(timing.sim_tick_s)}}
    elif part_name == "joulie-values":
        out = {"controllerManager": {"env": {"NODE_POWER_SOURCE": "prometheus",
                                             "NODE_POWER_RATE_WINDOW": duration(timing.rate_window_s),
                                             **m.joulie_env(scope)}}}
        agent = m.agent_env("<prometheus>", timing.otlp_interval_s)
        if agent:
            out["agent"] = {"env": agent}
    elif part_name == "checks":
        truth = ("host.powerW (whole-host)" if m.truth_scope() == "host"
                 else "the sum of packages, DRAM zones and GPUs powerW (components: this mode carries no host power)")
        out = {"S06": f"NodeTwin.status.powerMeasurement.measuredNodePowerW within max(3 %, 1 W) of /debug/emulate {truth}"}
    elif part_name == "wait":
        out = {"settleSeconds": timing.settle_s, "rateWindow": duration(timing.rate_window_s)}
    else:
        raise TelemetryError(f"--part {part_name!r}: one of {', '.join(PARTS)}")
    return str(yaml.safe_dump(out, sort_keys=False))

