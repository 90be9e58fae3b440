"""Prometheus 3 with its OTLP receiver, set up the way Joulie's OpenTelemetry inputs need it."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from joulie_localcluster.procs import ManagedProcess, ProcessGroup, free_port
from joulie_localcluster.tools import Tools

# Resource attributes Joulie groups by; promoted so series carry k8s_node_name / host_name.
PROMOTED_RESOURCE_ATTRIBUTES = ["k8s.node.name", "host.name", "service.name"]


@dataclass(frozen=True)
class PrometheusSettings:
    """What the OTLP path needs (seed: "What a real Prometheus needs")."""

    promote_resource_attributes: list[str] = field(default_factory=lambda: list(PROMOTED_RESOURCE_ATTRIBUTES))
    # hw.host.energy (unit J, counter) → hw_host_energy_joules_total, as Joulie's queries expect.
    translation_strategy: str = "UnderscoreEscapingWithSuffixes"
    # Producers stamp samples with their own time; late or reordered pushes must not be dropped.
    out_of_order_time_window: str = "30m"
    scrape_interval: str = "5s"
    scrape_configs: list[dict[str, Any]] = field(default_factory=list)
    # Rule files (absolute paths) Prometheus loads and evaluates every evaluation interval.
    rule_files: list[str] = field(default_factory=list)


def prometheus_config(s: PrometheusSettings) -> dict[str, Any]:
    return {
        "global": {"scrape_interval": s.scrape_interval, "evaluation_interval": s.scrape_interval},
        "otlp": {
            "promote_resource_attributes": s.promote_resource_attributes,
            "translation_strategy": s.translation_strategy,
        },
        "storage": {"tsdb": {"out_of_order_time_window": s.out_of_order_time_window}},
        "scrape_configs": s.scrape_configs,
        **({"rule_files": s.rule_files} if s.rule_files else {}),
    }


@dataclass
class Prometheus:
    url: str
    proc: ManagedProcess

    @property
    def otlp_metrics_url(self) -> str:
        return f"{self.url}/api/v1/otlp/v1/metrics"

    def query(self, promql: str, timeout_s: float = 5) -> list[dict[str, Any]]:
        """Instant query; the `result` list of the API response."""
        q = urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=timeout_s) as resp:
            body = json.loads(resp.read())
        if body.get("status") != "success":
            raise RuntimeError(f"PromQL {promql!r} failed: {body}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result


def start_prometheus(
    tools: Tools,
    workdir: Path,
    group: ProcessGroup,
    settings: PrometheusSettings | None = None,
    timeout_s: float = 30,
) -> Prometheus:
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(yaml.safe_dump(prometheus_config(settings or PrometheusSettings())))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = group.add(
        ManagedProcess(
            "prometheus",
            [
                str(tools.path("prometheus")),
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--web.enable-otlp-receiver",
                "--storage.tsdb.retention.time=1d",
                "--log.level=warn",
            ],
            workdir / "logs" / "prometheus.log",
        ).start()
    )

    def ready() -> bool:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as resp:
            return bool(resp.status == 200)

    proc.wait_until(ready, timeout_s, "ready (/-/ready)")
    return Prometheus(url, proc)
