"""The Prometheus names of the metrics Joulie's services export, read from their source: what a
dashboard panel or an alert rule may query (a name no service exports would never match).

prometheus-client metrics (Counter/Gauge/Histogram/GaugeMetricFamily with a literal name), read from
the services' sources, and the OTel ``hw.*``/``joulie.*`` metrics of the telemetry vocabulary
(``joulie_telemetry.vocabulary``) as Prometheus' OTLP translation names them by default.
"""

from __future__ import annotations

import re
from pathlib import Path

from joulie_telemetry.vocabulary import ALL_METRICS


def service_metric_names(services: Path = Path("services")) -> set[str]:
    names: set[str] = set()
    for path in services.glob("*/joulie_*/**/*.py"):
        if path.name.endswith("_test.py"):
            continue
        text = path.read_text()
        for kind, name in re.findall(r"\b(Counter|Gauge|Histogram|GaugeMetricFamily)\(\s*\"(joulie_[a-z0-9_]+)\"", text):
            base = name.removesuffix("_total")
            names.add(base + "_total" if kind == "Counter" else name)
            if kind == "Histogram":
                names.update({name + "_bucket", name + "_sum", name + "_count"})
    names.update(spec.prometheus_name() for spec in ALL_METRICS)
    return names


def queried_metric_names(promql: str) -> set[str]:
    """Joulie and hw metric names a PromQL expression reads (label names in by/without/{} excluded)."""
    bare = re.sub(r"\b(?:by|without)\s*\([^)]*\)|\{[^}]*\}", "", promql)
    return set(re.findall(r"\b(?:joulie|hw)_[a-z0-9_]+", bare))
