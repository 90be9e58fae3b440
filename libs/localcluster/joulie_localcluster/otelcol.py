"""The custom OpenTelemetry Collector (ci/tools/otelcol) between Joulie's producers and Prometheus 3.

Two telemetry modes go through a Collector; both deliver into Prometheus' own OTLP receiver, so
Prometheus applies the same name translation and resource-attribute promotion as for a direct push:

``otel-collector``  producers push OTLP/HTTP to the Collector's otlp receiver (127.0.0.1:<port>)
                    → batch → otlphttp exporter → ``<prometheus>/api/v1/otlp/v1/metrics``.
``otel-bridge``     the Collector's prometheus receiver scrapes a ``host:port`` /metrics target
                    → batch → otlphttp exporter → the same Prometheus OTLP receiver.

:func:`otelcol_config` is pure (settings in, config dict out); :func:`start_otelcol` writes it
next to the logs, starts the binary on 127.0.0.1 and waits for the health_check extension.
"""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from joulie_localcluster.procs import ManagedProcess, ProcessGroup, free_port
from joulie_localcluster.tools import Tools

CollectorMode = Literal["otel-collector", "otel-bridge"]
COLLECTOR_MODES: tuple[CollectorMode, ...] = ("otel-collector", "otel-bridge")

# Prometheus' OTLP receiver base; the otlphttp exporter appends /v1/metrics.
PROMETHEUS_OTLP_PATH = "/api/v1/otlp"
# The scrape job of the bridge: it becomes service.name, i.e. Prometheus' `job` label.
BRIDGE_JOB = "joulie-simulator"


@dataclass(frozen=True)
class OtelcolSettings:
    """Everything the Collector config depends on; endpoints are ``host:port`` or URLs as named."""

    mode: CollectorMode
    prometheus_url: str
    """Prometheus' base URL, e.g. http://127.0.0.1:9090 (the exporter posts to <it>/api/v1/otlp/v1/metrics)."""
    health_endpoint: str
    """host:port of the health_check extension (GET / answers 200 once the pipelines run)."""
    otlp_http_endpoint: str | None = None
    """otel-collector: host:port the otlp receiver listens on (OTLP/HTTP only, POST /v1/metrics)."""
    scrape_targets: tuple[str, ...] = ()
    """otel-bridge: host:port targets whose /metrics the prometheus receiver scrapes."""
    scrape_interval: str = "5s"
    scrape_job: str = BRIDGE_JOB
    metrics_path: str = "/metrics"
    batch_timeout: str = "1s"
    """How long the batch processor holds data; short, so pushed samples reach Prometheus quickly."""
    debug_verbosity: str | None = None
    """Also log every batch with the debug exporter ("basic", "normal", "detailed"); None: off."""
    log_level: str = "info"
    prometheus_tls: tuple[str, str, str] | None = None
    """(CA, client certificate, key) of the exporter to a Prometheus that requires client certificates
    (its web config); None: plain HTTP."""


def otelcol_config(s: OtelcolSettings) -> dict[str, Any]:
    """The Collector configuration of one mode (a dict; ``yaml.safe_dump`` it)."""
    if s.mode == "otel-collector":
        if not s.otlp_http_endpoint:
            raise ValueError("mode otel-collector needs otlp_http_endpoint (host:port of the otlp receiver)")
        receivers: dict[str, Any] = {"otlp": {"protocols": {"http": {"endpoint": s.otlp_http_endpoint}}}}
    elif s.mode == "otel-bridge":
        if not s.scrape_targets:
            raise ValueError("mode otel-bridge needs scrape_targets (host:port of the /metrics endpoints)")
        receivers = {
            "prometheus": {
                "config": {
                    "scrape_configs": [
                        {
                            "job_name": s.scrape_job,
                            "scrape_interval": s.scrape_interval,
                            "metrics_path": s.metrics_path,
                            "static_configs": [{"targets": list(s.scrape_targets)}],
                        }
                    ]
                }
            }
        }
    else:
        raise ValueError(f"unknown Collector mode {s.mode!r}; one of {', '.join(COLLECTOR_MODES)}")

    exporters: dict[str, Any] = {
        "otlphttp/prometheus": {
            "endpoint": s.prometheus_url.rstrip("/") + PROMETHEUS_OTLP_PATH,
            "tls": ({"insecure": True} if s.prometheus_tls is None else
                    dict(zip(("ca_file", "cert_file", "key_file"), s.prometheus_tls, strict=True))),
            # Retry briefly (Prometheus restarts between modes), never queue for minutes.
            "retry_on_failure": {"enabled": True, "initial_interval": "1s", "max_interval": "5s",
                                 "max_elapsed_time": "60s"},
        }
    }
    if s.debug_verbosity:
        exporters["debug"] = {"verbosity": s.debug_verbosity}

    return {
        "receivers": receivers,
        "processors": {"batch": {"timeout": s.batch_timeout}},
        "exporters": exporters,
        "extensions": {"health_check": {"endpoint": s.health_endpoint}},
        "service": {
            "extensions": ["health_check"],
            "pipelines": {
                "metrics": {
                    "receivers": list(receivers),
                    "processors": ["batch"],
                    "exporters": list(exporters),
                }
            },
            # No self-metrics server: its default port 8888 would clash between Collectors.
            "telemetry": {"logs": {"level": s.log_level}, "metrics": {"level": "none"}},
        },
    }


def otelcol_argv(binary: Path | str, config_path: Path) -> list[str]:
    return [str(binary), f"--config=file:{config_path}"]


@dataclass
class Otelcol:
    proc: ManagedProcess
    settings: OtelcolSettings
    config_path: Path

    @property
    def health_url(self) -> str:
        return f"http://{self.settings.health_endpoint}/"

    @property
    def otlp_url(self) -> str:
        """otel-collector: the OTLP/HTTP base URL producers push to (OTEL_EXPORTER_OTLP_ENDPOINT style)."""
        if not self.settings.otlp_http_endpoint:
            raise ValueError(f"a Collector in mode {self.settings.mode} has no otlp receiver")
        return f"http://{self.settings.otlp_http_endpoint}"

    @property
    def otlp_metrics_url(self) -> str:
        """otel-collector: the full metrics URL (what OTLPMetricExporter(endpoint=...) takes)."""
        return f"{self.otlp_url}/v1/metrics"


def start_otelcol(
    tools: Tools,
    workdir: Path,
    group: ProcessGroup,
    mode: CollectorMode,
    prometheus_url: str,
    *,
    scrape_targets: tuple[str, ...] = (),
    otlp_port: int | None = None,
    health_port: int | None = None,
    settings: OtelcolSettings | None = None,
    timeout_s: float = 30,
) -> Otelcol:
    """Writes <workdir>/otelcol.yaml, starts otelcol (log <workdir>/logs/otelcol.log) and waits for health.

    Ports default to free ones on 127.0.0.1. `settings`, when given, is used as is (mode, URLs and
    ports in it win over the other arguments).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    if settings is None:
        settings = OtelcolSettings(
            mode=mode,
            prometheus_url=prometheus_url,
            health_endpoint=f"127.0.0.1:{health_port or free_port()}",
            otlp_http_endpoint=f"127.0.0.1:{otlp_port or free_port()}" if mode == "otel-collector" else None,
            scrape_targets=tuple(scrape_targets),
        )
    config = workdir / "otelcol.yaml"
    config.write_text(yaml.safe_dump(otelcol_config(settings), sort_keys=False))
    proc = group.add(
        ManagedProcess("otelcol", otelcol_argv(tools.path("otelcol"), config), workdir / "logs" / "otelcol.log").start()
    )
    col = Otelcol(proc, settings, config)

    def healthy() -> bool:
        with urllib.request.urlopen(col.health_url, timeout=2) as resp:
            return bool(resp.status == 200)

    proc.wait_until(healthy, timeout_s, f"healthy ({col.health_url})")
    return col
