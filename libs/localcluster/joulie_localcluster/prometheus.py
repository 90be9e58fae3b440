"""Prometheus 3 with its OTLP receiver, set up the way Joulie's OpenTelemetry inputs need it."""

from __future__ import annotations

import json
import ssl
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


@dataclass(frozen=True)
class PrometheusTls:
    """Serve HTTPS only and require a client certificate signed by ``client_ca_file`` on every
    endpoint, the OTLP receiver and the query API alike (Prometheus ``--web.config.file``
    ``tls_server_config``, client_auth_type RequireAndVerifyClientCert)."""

    cert_file: Path
    key_file: Path
    client_ca_file: Path
    client_cert_file: Path
    """The certificate this harness itself queries and probes readiness with."""
    client_key_file: Path


def web_config(tls: PrometheusTls) -> dict[str, Any]:
    return {"tls_server_config": {
        "cert_file": str(tls.cert_file), "key_file": str(tls.key_file),
        "client_auth_type": "RequireAndVerifyClientCert", "client_ca_file": str(tls.client_ca_file),
    }}


def client_context(ca_file: Path, cert_file: Path | None = None, key_file: Path | None = None) -> ssl.SSLContext:
    """An HTTPS client context trusting ``ca_file``, presenting ``cert_file`` when given."""
    ctx = ssl.create_default_context(cafile=str(ca_file))
    if cert_file is not None:
        ctx.load_cert_chain(str(cert_file), str(key_file) if key_file else None)
    return ctx


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
    context: ssl.SSLContext | None = None
    """The client context of an HTTPS Prometheus (``PrometheusTls``); None over plain HTTP."""

    @property
    def otlp_metrics_url(self) -> str:
        return f"{self.url}/api/v1/otlp/v1/metrics"

    def query(self, promql: str, timeout_s: float = 5) -> list[dict[str, Any]]:
        """Instant query; the `result` list of the API response."""
        q = urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=timeout_s, context=self.context) as resp:
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
    tls: PrometheusTls | None = None,
) -> Prometheus:
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(yaml.safe_dump(prometheus_config(settings or PrometheusSettings())))
    port = free_port()
    url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    extra: list[str] = []
    context = None
    if tls is not None:
        web = workdir / "web.yml"
        web.write_text(yaml.safe_dump(web_config(tls)))
        extra = [f"--web.config.file={web}"]
        context = client_context(tls.client_ca_file, tls.client_cert_file, tls.client_key_file)
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
                *extra,
            ],
            workdir / "logs" / "prometheus.log",
        ).start()
    )

    def ready() -> bool:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2, context=context) as resp:
            return bool(resp.status == 200)

    proc.wait_until(ready, timeout_s, "ready (/-/ready)")
    return Prometheus(url, proc, context)
