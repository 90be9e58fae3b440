"""Benchmark (not a test): the agent's Kubernetes API requests by verb and resource, per simulated second.

    ./pants run services/agent:requestsbench [-- --nodes 20 --ticks 90]

One pool agent over ``--nodes`` emulated RAPL nodes, driven by a fake clock (RECONCILE_INTERVAL 20 s):
10 ticks of warm-up, then ``--ticks`` counted (90: 1800 s, the longest unchanged-rewrite period).
Requests are counted at the Kubernetes client's HTTP layer; a stub answers them, echoing what is
written. The NodeTwin watch is simulated: an ADDED event per twin at the start and a MODIFIED event
for each of the agent's own controlStatus applies (as the real watch delivers them). The power
export goes to a sink that accepts every push, as a Prometheus that answers (``--no-push``: no
export, the heartbeat Lease renewed every AGENT_HEARTBEAT). Issue 39's figures (the issue asks for
the API server's own ``apiserver_request_total``; this counts the same requests from the client's
side, without an API server). ``LIST nodes`` is per pool agent, not per node. Figures, not a gate.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kubernetes import client as k8s
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.fixtures import testtrees
from joulie_agent.loop.agent import Agent
from joulie_agent.runner import agent_kube
from joulie_agent.settings import Settings
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_agent.telemetry.otlpexport import PowerExporter
from joulie_api.names import object_name_for_node
from joulie_common.clock import FakeClock


class Sink(MetricExporter):
    def __init__(self) -> None:
        super().__init__()

    def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="requestsbench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--ticks", type=int, default=90)
    ap.add_argument("--no-push", action="store_true", help="no power export (the Lease every AGENT_HEARTBEAT)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="joulie-requestsbench-"))
    try:
        return _run(args.nodes, args.ticks, args.no_push, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(n: int, ticks: int, no_push: bool, work: Path) -> int:
    warm = 10
    nodes = [f"node-{i}" for i in range(n)]
    for node in nodes:
        testtrees.rapl_node(work / node)
    twin: dict[str, dict[str, Any]] = {name: {"apiVersion": "joulie.io/v1alpha1", "kind": "NodeTwin",
                   "metadata": {"name": object_name_for_node(name), "generation": 1, "resourceVersion": "1"},
                   "spec": {"nodeName": name, "profile": "eco", "cpu": {"packagePowerCapWatts": 120}}} for name in nodes}
    by_obj: dict[Any, dict[str, Any]] = {object_name_for_node(k): v for k, v in twin.items()}
    node_list = json.dumps({"items": [{"metadata": {"name": x, "labels": {"joulie.io/managed": "true",
                            "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel"}},
                            "status": {"allocatable": {"cpu": "8"}, "capacity": {"cpu": "8"}}} for x in nodes]}).encode()
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    cache_ref: list[Any] = [None]
    store: dict[tuple[str, Any], dict[str, Any]] = {}

    def request(method: str, url: str, query_params: Any = None, headers: Any = None, body: Any = None,
                post_params: Any = None, _preload_content: bool = True, _request_timeout: Any = None) -> Any:
        path = url.split("://", 1)[-1].split("/", 1)[-1].split("?")[0]
        m = re.match(r"(?:api/v1|apis/[^/]+/[^/]+)(?:/namespaces/[^/]+)?/([a-z]+)(?:/([^/]+))?(?:/([a-z]+))?$", path)
        resource = (m.group(1) + ("/" + m.group(3) if m.group(3) else "")) if m else path
        name = m.group(2) if m else None
        verb = {"GET": "LIST" if name is None else "GET"}.get(method, method)
        if method == "PATCH" and headers and "apply-patch" in str(headers.get("Content-Type", "")):
            verb = "APPLY"
        counts[(verb, resource)] += 1
        if resource == "nodes" and name is None:
            data = node_list
        elif resource == "nodetwins" and method == "GET":
            data = json.dumps(by_obj[name]).encode()
        else:
            sent = json.loads(body) if isinstance(body, str) else (body or {})
            base = resource.split("/")[0]
            obj = store.setdefault((base, name), {"apiVersion": sent.get("apiVersion", ""), "kind": sent.get("kind", ""),
                                                  "metadata": {"name": name}})
            if base == "nodetwins":
                obj.update(by_obj[name])
            for k in ("spec", "status"):
                if isinstance(sent, dict) and k in sent:
                    obj[k] = sent[k]
            data = json.dumps(obj).encode()
            if resource == "nodetwins/status" and cache_ref[0] is not None:  # the watch delivers the agent's own write
                cache_ref[0].watch_event({"type": "MODIFIED", "object": by_obj[name]})
        raw = SimpleNamespace(status=200, reason="OK", data=data, getheaders=lambda: {}, getheader=lambda k, d=None: d)
        return SimpleNamespace(status=200, reason="OK", data=data, response=raw, read=lambda: data,
                               getheaders=lambda: {}, getheader=lambda k, d=None: d)

    api = k8s.ApiClient()
    api.rest_client.request = request  # type: ignore[method-assign,assignment]
    settings = Settings(mode="pool", root=str(work / "{node}"), tool_path=str(work / "no-bin"),
                        lease_namespace="joulie-system", metrics_addr="",
                        power_export_endpoint="" if no_push else "http://sink")
    clock = FakeClock(t=1000.0)
    exporter = None if no_push else PowerExporter(Sink(), 10.0, monotonic=clock.monotonic)
    kube = agent_kube(api, settings, clock, watched=True, exporter=exporter)
    assert kube.twins is not None
    cache_ref[0] = kube.twins
    for obj in by_obj.values():
        kube.twins.watch_event({"type": "ADDED", "object": obj})
    agent = Agent(settings, kube, load_catalog(), clock, AgentMetrics(), exporter=exporter)
    for k in range(warm + ticks):
        if k == warm:
            counts.clear()
        agent.tick()
        if exporter is not None:
            exporter.export_once()
        clock.advance(20.0)
    sim_s = ticks * 20.0
    total = sum(counts.values())
    print(f"nodes={n} push={'no' if no_push else 'yes'} simulated={sim_s:.0f}s (after {warm * 20} s of warm-up)")
    per_node = 0
    for (verb, res), k in sorted(counts.items(), key=lambda kv: -kv[1]):
        if (verb, res) == ("LIST", "nodes"):
            print(f"  {verb:6} {res:22} {k:6d}  {k / sim_s:7.4f}/s per pool agent")
            continue
        per_node += k
        print(f"  {verb:6} {res:22} {k:6d}  {k / sim_s:7.4f}/s  -> {k / sim_s * 1000 / n:6.2f}/s per 1000 Nodes")
    print(f"  per-node requests {per_node}: {per_node / sim_s:.4f}/s -> {per_node / sim_s * 1000 / n:.2f}/s per 1000 Nodes "
          f"(+ LIST nodes per pool agent; all requests {total})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
