"""The charts' files agree with what they name, without helm: each default image tag is its service's
VERSION, the Prometheus values are the settings the tests' Prometheus runs with, and every dashboard
query names a metric a service exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from joulie_simcluster.chart_cases import DASHBOARD, PROMETHEUS_VALUES, VERSION_FILES, version
from joulie_simcluster.metricnames import service_metric_names


def test_default_image_tags_are_the_service_versions() -> None:
    for (chart_name, component), path in VERSION_FILES.items():
        values = yaml.safe_load((Path("charts") / chart_name / "values.yaml").read_text())
        image = values[component]["image"] if component else values["image"]
        assert str(image["tag"]) == version(path), (
            f"charts/{chart_name}/values.yaml {component + '.' if component else ''}image.tag is {image['tag']!r} "
            f"but {path} says {version(path)!r}: bump the chart pin with the service"
        )


def test_prometheus_values_match_the_settings_the_tests_use() -> None:
    from joulie_localcluster.prometheus import PrometheusSettings

    want = PrometheusSettings()
    spec = yaml.safe_load(PROMETHEUS_VALUES.read_text())["prometheus"]["prometheusSpec"]
    assert spec["enableOTLPReceiver"] is True
    assert spec["otlp"]["promoteResourceAttributes"] == want.promote_resource_attributes
    assert spec["otlp"]["translationStrategy"] == want.translation_strategy
    assert spec["tsdb"]["outOfOrderTimeWindow"] == want.out_of_order_time_window


def test_dashboard_panels_query_metrics_the_services_export() -> None:
    known = service_metric_names()
    assert "hw_host_energy_joules_total" in known and "joulie_policy_state_transitions_total" in known
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    exprs.append(dash["templating"]["list"][1]["query"]["query"])
    assert len(dash["panels"]) >= 10
    # Metric names only: the label names in by (...) and {...} are not metrics.
    metric_exprs = [re.sub(r"\b(?:by|without)\s*\([^)]*\)|\{[^}]*\}", "", e) for e in exprs]
    unknown = {m for e in metric_exprs for m in re.findall(r"\b(?:joulie|hw)_[a-z0-9_]+", e)} - known
    assert not unknown, f"dashboard queries metrics no service exports: {sorted(unknown)}"
