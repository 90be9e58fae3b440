"""The chart's Prometheus alert rules (issue 23): agent lost, cap drift, controller not leading,
telemetry stale. Rendered with the real helm, loaded and evaluated by the real Prometheus, and
every metric they read is one a Joulie service exports."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from joulie_localcluster.procs import ProcessGroup
from joulie_localcluster.prometheus import PrometheusSettings, start_prometheus
from joulie_localcluster.tools import Tools
from joulie_simcluster import chart
from joulie_simcluster.metricnames import queried_metric_names, service_metric_names

pytest_plugins = ["joulie_testinfra.fixtures"]

JOULIE = Path("charts/joulie")
RULES = JOULIE / "alerts/joulie-rules.yaml"
ALERTS = {"JoulieAgentLost", "JoulieCapDrift", "JoulieControllerNotLeading", "JoulieTelemetryStale"}


def _rules() -> list[dict[str, Any]]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def test_the_four_alerts_read_only_metrics_the_services_export() -> None:
    rules = _rules()
    assert {r["alert"] for r in rules} == ALERTS
    known = service_metric_names()
    assert {"joulie_node_agent_lost", "joulie_node_cap_drift", "joulie_policy_leader"} <= known
    for r in rules:
        unknown = queried_metric_names(r["expr"]) - known
        assert not unknown, f"{r['alert']} reads metrics no service exports: {sorted(unknown)}"
        assert r["labels"]["severity"] in ("warning", "critical") and r["annotations"]["summary"]


def test_the_chart_renders_the_rules_as_a_configmap_or_a_prometheusrule(test_tools: Tools) -> None:
    assert not [d for d in chart.render_chart(JOULIE) if d["metadata"]["name"] == "joulie-alerts"]  # off by default
    on = {"prometheusRules.enabled": "true"}
    cm = chart.find(chart.render_chart(JOULIE, (), on), "ConfigMap", "joulie-alerts")
    assert len(cm) == 1 and yaml.safe_load(cm[0]["data"]["joulie-rules.yaml"]) == yaml.safe_load(RULES.read_text())
    pr = chart.find(chart.render_chart(JOULIE, (), {**on, "prometheusRules.kind": "PrometheusRule",
                                                    "prometheusRules.labels.release": "kps"}),
                    "PrometheusRule", "joulie-alerts")
    assert len(pr) == 1 and pr[0]["spec"] == yaml.safe_load(RULES.read_text())
    assert pr[0]["metadata"]["labels"]["release"] == "kps"
    with pytest.raises(chart.ChartError, match="prometheusRules.kind"):
        chart.render_chart(JOULIE, (), {**on, "prometheusRules.kind": "Secret"})


def test_prometheus_loads_and_evaluates_every_rule_without_error(test_tools: Tools, tmp_path: Path) -> None:
    group = ProcessGroup()
    try:
        prom = start_prometheus(test_tools, tmp_path, group,
                                PrometheusSettings(scrape_interval="1s", rule_files=[str(RULES.resolve())]))
        deadline = time.monotonic() + 30
        while True:
            with urllib.request.urlopen(f"{prom.url}/api/v1/rules", timeout=5) as resp:
                groups = json.loads(resp.read())["data"]["groups"]
            rules = [r for g in groups for r in g["rules"]]
            if rules and all(r.get("lastEvaluation", "").startswith("20") for r in rules):
                break
            assert time.monotonic() < deadline, f"rules not evaluated: {rules}"
            time.sleep(0.5)
    finally:
        group.stop_all()
    assert {r["name"] for r in rules} == ALERTS
    assert [(r["name"], r["health"], r.get("lastError", "")) for r in rules if r["health"] != "ok"] == []
    # With no controller manager reporting at all, "not leading" is pending (it has a for: 2m).
    state = {r["name"]: r["state"] for r in rules}
    assert state["JoulieControllerNotLeading"] == "pending" and state["JoulieAgentLost"] == "inactive"
