"""S16's step: the load Pods' energy receipts as the API server lists them, with the metered Nodes and
whether any board is allocated read from Prometheus; the evaluation is the pure ``receipts``. Shell."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from joulie_simcluster.runtimes import kube
from joulie_simcluster.smoke import load as smokeload
from joulie_simcluster.smoke import receipts as smokereceipts
from joulie_simcluster.smoke.checks import Assertion
from joulie_simcluster.state import StateDir
from joulie_simcluster.timing import Timing


class Cluster(Protocol):
    """What the step reads of the smoke run (``smoke.run.Smoke``)."""

    state: StateDir
    timing: Timing

    def prom_query(self, promql: str) -> list[Mapping[str, Any]]: ...

    def truth(self) -> dict[str, dict[str, Any]]: ...

    def until(self, check_id: str, evaluate: Callable[[], Assertion], timeout_s: float) -> Assertion: ...


def receipts_step(c: Cluster) -> Assertion:
    """S16: waits up to three receipt windows (and 30 s) for every load Pod's running receipt."""
    query, window = c.prom_query, c.timing.receipt_window_s
    metered = {
        str(r["metric"].get("k8s_node_name", ""))
        for r in query("count by (k8s_node_name) (hw_host_energy_joules_total)")
    }
    gpu_nodes = {n for n, t in c.truth().items() if t.get("gpus")}
    allocated = {str(r["metric"].get("k8s_node_name", ""))
                 for r in query("count by (k8s_node_name) (hw_gpu_allocation_ratio)")}

    def evaluate() -> Assertion:
        pods = kube.kube_list(c.state.kubeconfig, smokeload.PODS_PATH)
        return smokereceipts.receipts_on_load_pods(pods, metered, gpu_nodes, allocated, time.time(), window)

    return c.until("S16", evaluate, 3 * window + 30)
