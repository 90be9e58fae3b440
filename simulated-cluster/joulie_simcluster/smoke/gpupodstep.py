"""S15's step: the load's GPU Pods and what Prometheus holds of their boards. Shell.

Reads the running workload Pods that request ``nvidia.com/gpu`` on NVIDIA Nodes (the smoke load pins
one per Node, every GPU), then Prometheus' ``hw.gpu.allocation`` and ``hw.gpu.dram.active`` series
(the agents' export, named as the telemetry mode's translation names them); the evaluation is the pure
``gpupods``. It waits for the agents' first tool reads (every 10 s) and two export intervals.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from joulie_simcluster import telemetry, telemetrytls
from joulie_simcluster.runtimes import kube
from joulie_simcluster.smoke import gpupods
from joulie_simcluster.smoke.checks import Assertion
from joulie_simcluster.state import StateDir
from joulie_simcluster.timing import Timing
from joulie_telemetry.vocabulary import GPU_ALLOCATION, GPU_DRAM_ACTIVE
from joulie_workload.pods import LABEL_PART_OF, PART_OF

GPU_RESOURCE = "nvidia.com/gpu"


class Cluster(Protocol):
    """What the step reads of the smoke run (``smoke.run.Smoke``)."""

    state: StateDir
    timing: Timing

    @property
    def env(self) -> dict[str, str]: ...

    def nvidia_agent_nodes(self) -> set[str]: ...

    def until(self, check_id: str, evaluate: Callable[[], Assertion], timeout_s: float) -> Assertion: ...


def gpu_pod_signals(c: Cluster) -> Assertion:
    nvidia = c.nvidia_agent_nodes()
    api = kube.core_api(c.state.kubeconfig)
    cluster = c.state.read_cluster_env() or {}
    prom, context = cluster["PROMETHEUS_URL"], telemetrytls.query_context(cluster)
    escape = telemetry.mode(c.env.get("TELEMETRY", "otlp")).translation == "UnderscoreEscapingWithSuffixes"

    def series(name: str) -> list[tuple[Mapping[str, Any], float]]:
        q = urllib.parse.urlencode({"query": f'{{__name__="{name}"}}'})
        with urllib.request.urlopen(f"{prom}/api/v1/query?{q}", timeout=10, context=context) as resp:
            result = json.loads(resp.read())["data"]["result"]
        return [(r["metric"], float(r["value"][1])) for r in result]

    def gpu_pods() -> dict[tuple[str, str], tuple[str, int]]:
        out: dict[tuple[str, str], tuple[str, int]] = {}
        for p in api.list_pod_for_all_namespaces(label_selector=f"{LABEL_PART_OF}={PART_OF}").items:
            spec, meta = p.spec, p.metadata
            if (
                spec is None
                or meta is None
                or spec.node_name not in nvidia
                or (p.status is not None and p.status.phase not in ("Running", "Pending"))
            ):
                continue
            want = sum(
                int((ct.resources.requests or {}).get(GPU_RESOURCE, 0)) if ct.resources else 0 for ct in spec.containers
            )
            if want:
                out[(str(meta.namespace), str(meta.name))] = (str(spec.node_name), want)
        return out

    def evaluate() -> Assertion:
        alloc = [labels for labels, _ in series(GPU_ALLOCATION.prometheus_name(escape=escape))]
        return gpupods.gpu_pod_signals(gpu_pods(), alloc, series(GPU_DRAM_ACTIVE.prometheus_name(escape=escape)))

    return c.until("S15", evaluate, 60 + 4 * c.timing.otlp_interval_s)
