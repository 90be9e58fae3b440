"""The agent process, composed: its parts built from the settings, then the loop until a signal.

The composition root and nothing else: what each part does is in its folder (``loop`` the
reconcile of every owned node, ``kube`` the Kubernetes calls and the NodeTwin watch,
``telemetry`` the metrics and the power export, ``host`` NVML and the node's tools).
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from joulie_agent.discovery.catalog import Catalog, CatalogError, load_catalog
from joulie_agent.host.nvml import open_nvml
from joulie_agent.kube.agentkube import AgentKube, NodeSeen, node_seen
from joulie_agent.kube.heartbeat import LeaseHeartbeat
from joulie_agent.kube.twincache import TwinSpecCache
from joulie_agent.kube.twinwatch import TwinWatcher
from joulie_agent.loop.agent import Agent
from joulie_agent.settings import Settings
from joulie_agent.telemetry.bmcpower import bmc_factory
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_agent.telemetry.otlpexport import PowerExporter, otlp_exporter
from joulie_api.backoff import Backoff
from joulie_api.kube import JoulieClient
from joulie_api.names import FIELD_MANAGER_AGENT, object_name_for_node
from joulie_api.outage import short_error
from joulie_api.watchcache import WatchCache
from joulie_common.clock import Clock, SystemClock
from joulie_common.sharding import owns_node

log = logging.getLogger(__name__)


def main_loop(settings: Settings, once: bool = False) -> int:
    """Run the agent: one tick with ``once`` (exit status 1 when a node failed), else until SIGTERM/SIGINT."""
    clock = SystemClock(whole_seconds=True)  # status timestamps in whole seconds
    metrics = serve_metrics(settings, serve=not once)
    from joulie_api.kubeconfig import api_client

    catalog = operator_catalog(settings)
    if catalog is None:
        return 2
    api = api_client(timeout_s=settings.api_timeout_s)
    exporter = None if once else start_power_export(settings, metrics)
    stop, wake = stop_on_signals()
    kube = agent_kube(api, settings, clock, watched=not once, exporter=exporter,
                      node_view=None if once else watch_pool_nodes(api, settings, stop))
    agent = Agent(settings, kube, catalog, clock, metrics,
                  open_nvml() if settings.mode == "daemonset" else None, exporter)
    if not once:
        watch_twins(api, settings, wake, stop, kube.twins)
    log.info("joulie-agent mode=%s node=%s root=%s simulate_only=%s", settings.mode, settings.node_name or "-",
             settings.root, settings.simulate_only)
    return run_ticks(agent, settings, once, wake, stop, exporter)


def serve_metrics(settings: Settings, serve: bool) -> AgentMetrics:
    """The agent's metrics, served on METRICS_ADDR when ``serve`` and an address is set."""
    from prometheus_client import start_http_server

    metrics = AgentMetrics()
    if settings.metrics_addr and serve:
        host, _, port = settings.metrics_addr.rpartition(":")
        start_http_server(int(port), addr=host or "127.0.0.1", registry=metrics.registry)
    return metrics


def operator_catalog(settings: Settings) -> Catalog | None:
    """The hardware catalog with the operators' entries; None (logged) when one of theirs is wrong."""
    try:
        return load_catalog(extra=Path(settings.hardware_catalog_extra) if settings.hardware_catalog_extra else None)
    except CatalogError as err:  # an operator's entry is wrong: say which, and do not start
        log.error("hardware catalog: %s", err)
        return None


def agent_kube(api: Any, settings: Settings, clock: Clock, watched: bool = False,
               exporter: PowerExporter | None = None, node_view: WatchCache[NodeSeen] | None = None) -> AgentKube:
    """The agent's Kubernetes calls; ``watched``: with the cache the NodeTwin watch fills (twincache);
    ``exporter``: the power export, whose pushed reconcile times let the Leases be renewed rarely."""
    # No retries inside a call: the loop's outage backoff decides when to try again, and
    # enforcement must not wait 54 s on a write to an API server that is down.
    twins = TwinSpecCache(clock.monotonic, settings.twin_resync_s) if watched else None
    pushed = exporter.pushed if exporter is not None else (lambda node: False)
    # A renewal may come a reconcile (and its slowest API calls) late: its promise allows two of them.
    slack_s = 2 * max(settings.reconcile_interval_s, settings.api_timeout_s)
    leases = (LeaseHeartbeat(api, settings.lease_namespace, settings.heartbeat_s, clock.now, clock.monotonic,
                             settings.lease_renew_s, pushed, slack_s)
              if settings.lease_namespace else None)
    return AgentKube(JoulieClient(api, FIELD_MANAGER_AGENT, Backoff(delays_s=())), clock, settings.hardware_rewrite_s,
                     settings.heartbeat_s, twins, leases, settings.status_rewrite_s, node_view)


def watch_pool_nodes(api: Any, settings: Settings, stop: threading.Event) -> WatchCache[NodeSeen] | None:
    """A pool agent's Nodes (its shard of POOL_NODE_SELECTOR) kept by a watch, started; None outside
    pool mode or with NODE_RESYNC=0. At 1000 Nodes each of 40 pool agents listed all 1000 every minute
    (5 MB of JSON, 22 % of its CPU); the watch brings each Node's changes once (KWOK's or a kubelet's
    status updates, a label change), and ends at ``stop``."""
    if settings.mode != "pool" or settings.node_resync_s <= 0:
        return None
    from kubernetes import client as k8s

    def mine(obj: Mapping[str, Any]) -> NodeSeen | None:
        seen = node_seen(obj)
        return seen if seen is not None and owns_node(seen.name, settings.pool_shards, settings.pool_shard_id) else None

    return WatchCache("Node", k8s.CoreV1Api(api).list_node, mine, resync_s=settings.node_resync_s, stop=stop,
                      label_selector=settings.pool_selector).start()


def start_power_export(settings: Settings, metrics: AgentMetrics) -> PowerExporter | None:
    """The measured-power export to POWER_EXPORT_ENDPOINT, started; None when no endpoint is set."""
    if not settings.power_export_endpoint:
        return None
    exporter = PowerExporter(otlp_exporter(settings.power_export_endpoint), settings.power_export_interval_s,
                             on_result=lambda ok: metrics.power_exports.labels("ok" if ok else "failed").inc(),
                             host_power=bmc_factory(settings.bmc_secret_dir, settings.power_export_interval_s,
                                                    settings.bmc_timeout_s),
                             gpu_only=settings.power_export_metrics == "gpu")
    exporter.start()
    log.info("exporting %s every %.0f s to %s (host power: %s)",
             "the per-GPU signals only" if settings.power_export_metrics == "gpu" else "measured power",
             settings.power_export_interval_s, settings.power_export_endpoint,
             "none" if settings.power_export_metrics == "gpu" else
             f"the BMC in the Secret at {settings.bmc_secret_dir}" if settings.bmc_secret_dir else "sum of components")
    return exporter


def stop_on_signals() -> tuple[threading.Event, threading.Event]:
    """(stop, wake): both set by SIGTERM or SIGINT, so a loop waiting for its next tick ends at once."""
    stop, wake = threading.Event(), threading.Event()

    def on_signal(*_: object) -> None:
        stop.set()
        wake.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    return stop, wake


def watch_twins(api: Any, settings: Settings, wake: threading.Event, stop: threading.Event,
                cache: TwinSpecCache | None = None) -> None:
    """Wake the loop on a spec change of a twin this process enforces (its own, or its pool shard's),
    and keep ``cache`` (what the reconcile reads the specs from) filled."""
    if settings.mode == "pool":
        TwinWatcher(api, wake, stop, owned=lambda name: owns_node(name, settings.pool_shards, settings.pool_shard_id),
                    cache=cache).start()
    else:
        TwinWatcher(api, wake, stop, twin_name=object_name_for_node(settings.node_name), cache=cache).start()


def run_ticks(agent: Agent, settings: Settings, once: bool, wake: threading.Event, stop: threading.Event,
              exporter: PowerExporter | None) -> int:
    """Tick every RECONCILE_INTERVAL (sooner when woken) until stopped; a failing tick is logged once per error."""
    loop_error = ""  # logged once, and again only when it changes
    while True:
        try:
            failed = agent.tick()
        except Exception as err:
            if short_error(err) != loop_error:
                loop_error = short_error(err)
                log.error("reconcile loop failed (logged again only when the error changes): %s", loop_error)
            failed = 1
        else:
            if loop_error:
                log.warning("reconcile loop works again")
                loop_error = ""
        if once:
            return 1 if failed else 0
        wake.wait(settings.reconcile_interval_s)
        wake.clear()
        if stop.is_set():
            if exporter is not None:
                exporter.stop()
            return 0
