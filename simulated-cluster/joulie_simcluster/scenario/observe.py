"""One look at the live cluster for a scenario: NodeTwins and NodeHardware from the API server, the
emulator's truth and facility from ``/debug/emulate``, the cluster's power from Prometheus, the
workload runner's job counts, the chaos health look. Only what a condition needs is read.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
import urllib.request
from collections.abc import Collection, Mapping
from typing import Any, cast

from joulie_controller.api import MetricNaming, power_queries
from joulie_controller.api import Settings as ControllerSettings
from joulie_simcluster import telemetry, telemetrytls
from joulie_simcluster.chaos import observe as health
from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.deploy.reports import http_ok, runner_counts
from joulie_simcluster.runtimes import kube
from joulie_simcluster.scenario.conditions import Observation
from joulie_simcluster.scenario.schema import Condition
from joulie_simcluster.timing import Timing, duration

TIMELINE_NEEDS = frozenset({"twins", "truth", "prometheus", "jobs"})
PART_FIELDS = {"twins": ("twins",), "hardware": ("hardware",), "truth": ("truth", "facility"),
               "prometheus": ("prometheus_power_w",), "jobs": ("jobs",), "health": ("health",)}
"""The Observation fields each part of a look fills."""


def cluster_power_query(telemetry_mode: str, power_scope: str, timing: Timing) -> str:
    """PromQL for the cluster's power in W: the controller manager's per-Node query of this telemetry
    mode (its own builder, not a copy), summed; whole-host energy where the mode carries it, else the
    components' (as smoke S06 compares)."""
    tmode = telemetry.mode(telemetry_mode)
    s = ControllerSettings.from_env(tmode.joulie_env(power_scope))
    p = s.prometheus
    q = power_queries(MetricNaming.from_setting(p.metric_naming), p.node_attribute, p.node_attribute_promoted,
                      duration(timing.rate_window_s))
    return f"sum({q.energy_rate if tmode.truth_scope() == 'host' else q.component_energy_rate})"


def needs(cond: Condition) -> set[str]:
    kind = cond.kind
    if kind == "cluster_power" and cond.cluster_power is not None:
        return {cond.cluster_power.source}
    return {"twin": {"twins"}, "caps_applied": {"twins", "hardware", "truth"}, "jobs": {"jobs"},
            "facility": {"truth"}, "healthy": {"health"}, "twin_error": {"twins", "hardware", "truth"},
            "tick_cost": {"truth"}}[kind]


class Looker:
    def __init__(self, ctx: Context, rendered: RenderedSpec) -> None:
        self.state, self.rendered = ctx.state, rendered
        cluster = self.state.read_cluster_env() or {}
        self.prometheus_url = cluster.get("PROMETHEUS_URL", "")
        self.prometheus_context = telemetrytls.query_context(cluster)
        self.power_query = cluster_power_query(cluster.get("TELEMETRY", ctx.settings.telemetry),
                                               ctx.settings.power_scope, ctx.settings.timing)

    @property
    def env(self) -> dict[str, str]:
        return self.state.read_deploy_env() or {}

    def agents(self) -> list[str]:
        return [n for n in self.env.get("AGENT_NODES", "").split(",") if n]

    def by_node(self, path: str) -> dict[str, dict[str, Any]]:
        return {o["spec"]["nodeName"]: o for o in kube.kube_list(self.state.kubeconfig, path, attempts=1)}

    def emulate(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://{self.env['SIMULATOR_HTTP']}/debug/emulate", timeout=10) as resp:
            return cast(dict[str, Any], json.loads(resp.read()))

    def prometheus_power_w(self) -> float | None:
        url = f"{self.prometheus_url}/api/v1/query?{urllib.parse.urlencode({'query': self.power_query})}"
        with urllib.request.urlopen(url, timeout=10, context=self.prometheus_context) as resp:
            result = json.loads(resp.read())["data"]["result"]
        return float(result[0]["value"][1]) if result else None

    def jobs(self) -> dict[str, float]:
        ok, body = http_ok(self.env.get("URL_workload", ""), timeout_s=5.0)
        return runner_counts(body) if ok else {}

    def look(self, parts: Collection[str]) -> Observation:
        """An Observation with `parts` read (twins, hardware, truth, prometheus, jobs, health); an
        unreadable part raises (OSError, KeyError, ValueError, RuntimeFailure)."""
        got: dict[str, Any] = {"agents": self.agents(), "managed": self.rendered.managed}
        if "twins" in parts:
            got["twins"] = self.by_node(kube.NODETWINS)
        if "hardware" in parts:
            got["hardware"] = self.by_node(kube.NODEHARDWARES)
        if "truth" in parts:
            doc = self.emulate()
            got["truth"] = {n["name"]: n for n in doc.get("nodes") or []}
            got["facility"] = doc.get("facility") if isinstance(doc.get("facility"), Mapping) else None
            got["tick_cost"] = doc.get("tickCost") if isinstance(doc.get("tickCost"), Mapping) else None
        if "prometheus" in parts:
            got["prometheus_power_w"] = self.prometheus_power_w()
        if "jobs" in parts:
            got["jobs"] = self.jobs()
        if "health" in parts:
            h = health.look(self.state, self.rendered)
            got["health"] = (h.healthy, h.why_not())
        return Observation(**got)

    def look_partial(self, parts: Collection[str]) -> tuple[Observation, list[str]]:
        """Each of `parts` read on its own: the Observation of those that could be read, and the others."""
        o, failed = self.look(()), []
        for part in sorted(parts):
            try:
                one = self.look({part})
            except Exception:  # - a component down mid-look: that part stays empty
                failed.append(part)
                continue
            o = dataclasses.replace(o, **{f: getattr(one, f) for f in PART_FIELDS[part]})
        return o, failed
