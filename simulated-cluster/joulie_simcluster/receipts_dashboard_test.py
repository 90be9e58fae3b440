"""The energy receipts' Grafana dashboard (charts/joulie/dashboards/joulie-receipts.json, issue 38): valid
JSON the chart ships, per-namespace energy and savings panels, every metric it reads named in the
telemetry vocabulary, and every query accepted by the real Prometheus."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from joulie_localcluster.procs import ProcessGroup
from joulie_localcluster.prometheus import start_prometheus
from joulie_localcluster.tools import Tools
from joulie_simcluster import chart
from joulie_simcluster.metricnames import queried_metric_names, service_metric_names
from joulie_telemetry.vocabulary import POD_ENERGY, POD_ENERGY_SAVED, RECEIPT_METRICS

pytest_plugins = ["joulie_testinfra.fixtures"]

JOULIE = Path("charts/joulie")
RECEIPTS_DASHBOARD = JOULIE / "dashboards/joulie-receipts.json"


def _dashboard() -> dict[str, Any]:
    return dict(json.loads(RECEIPTS_DASHBOARD.read_text()))


def _queries(dash: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    return exprs + [v["query"]["query"] for v in dash["templating"]["list"] if v["type"] == "query"]


def test_the_dashboard_has_per_namespace_energy_and_savings_panels() -> None:
    dash = _dashboard()
    assert dash["uid"] == "joulie-receipts" and len({p["id"] for p in dash["panels"]}) == len(dash["panels"])
    by_ns = [t["expr"] for p in dash["panels"] for t in p["targets"] if "by (k8s_namespace_name" in t["expr"]]
    assert any(POD_ENERGY.prometheus_name() in e for e in by_ns)
    assert any(POD_ENERGY_SAVED.prometheus_name() in e for e in by_ns)
    for p in dash["panels"]:
        assert p["targets"] and p["datasource"]["uid"] == "${datasource}" and p["title"] and p["description"]


def test_every_metric_the_dashboard_reads_is_in_the_telemetry_vocabulary() -> None:
    known = service_metric_names()  # the receipts' metrics among them: the controller manager exports them
    assert {m.prometheus_name() for m in RECEIPT_METRICS} <= known
    for q in _queries(_dashboard()):
        names = queried_metric_names(q)
        assert names, q
        assert not names - known, f"{q!r} reads metrics the vocabulary does not name: {sorted(names - known)}"


def test_the_chart_ships_the_dashboard_beside_the_overview(test_tools: Tools) -> None:
    docs = chart.render_chart(JOULIE, (), {"grafanaDashboard.enabled": "true"})
    [cm] = chart.find(docs, "ConfigMap", "joulie-grafana-dashboard")
    assert json.loads(cm["data"]["joulie-receipts.json"]) == _dashboard()
    assert "joulie.json" in cm["data"]


def test_prometheus_accepts_every_query(test_tools: Tools, tmp_path: Path) -> None:
    group = ProcessGroup()
    try:
        prom = start_prometheus(test_tools, tmp_path, group)
        for q in _queries(_dashboard()):
            if q.startswith("label_values("):
                continue  # a Grafana function, not PromQL
            promql = q.replace("$__range", "1h").replace("$namespace", ".*")
            url = f"{prom.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
            with urllib.request.urlopen(url, timeout=5) as resp:
                body = json.loads(resp.read())
            assert body["status"] == "success", (promql, body)
    finally:
        group.stop_all()
