"""S15: the load's GPU Pods named on their boards in Prometheus, with the boards' DRAM activity. Pure.

What the agents export from each NVIDIA Node's pod-resources API and GPU tools (docs/work-aware-caps.md
"The node side"); the shell that reads the cluster and Prometheus is ``gpupodstep.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from joulie_simcluster.smoke.checks import CHECKS, Assertion, _result


def _label(labels: Mapping[str, Any], dotted: str) -> str:
    """A label under either naming: escaped (``k8s_pod_name``) or UTF-8 (``k8s.pod.name``)."""
    return str(labels.get(dotted.replace(".", "_"), labels.get(dotted, "")))


def _node_of(labels: Mapping[str, Any]) -> str:
    # The agent's resource: service.instance.id (Prometheus' `instance`) is the node; promoted k8s.node.name too.
    return _label(labels, "k8s.node.name") or str(labels.get("instance", ""))


def gpu_pod_signals(
    gpu_pods: Mapping[tuple[str, str], tuple[str, int]],
    allocation: Iterable[Mapping[str, Any]],
    dram: Iterable[tuple[Mapping[str, Any], float]],
) -> Assertion:
    """S15. ``gpu_pods``: (namespace, pod) -> (node, GPUs it requests) for the running Pods holding GPUs on
    NVIDIA Nodes; ``allocation``: the label sets of the hw.gpu.allocation series; ``dram``: (labels, value) of
    hw.gpu.dram.active."""
    held: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for labels in allocation:
        key = (_label(labels, "k8s.namespace.name"), _label(labels, "k8s.pod.name"))
        held.setdefault(key, set()).add((_node_of(labels), _label(labels, "hw.id")))
    dram_by_board = {(_node_of(labels), _label(labels, "hw.id")): v for labels, v in dram}
    failures = []
    boards = 0
    for (ns, pod), (node, want) in sorted(gpu_pods.items()):
        got = held.get((ns, pod), set())
        if not got:
            failures.append(f"{ns}/{pod} on {node}: no hw.gpu.allocation series names it")
            continue
        elsewhere = sorted(n for n, _ in got if n != node)
        if elsewhere:
            failures.append(f"{ns}/{pod}: hw.gpu.allocation places it on {elsewhere}, it runs on {node}")
        if len(got) != want:
            failures.append(f"{ns}/{pod} on {node}: {len(got)} boards in hw.gpu.allocation, it requests {want}")
        for board in sorted(got):
            boards += 1
            v = dram_by_board.get(board)
            if v is None:
                failures.append(f"{ns}/{pod}: no hw.gpu.dram.active for {board[0]} {board[1]}")
            elif not 0.0 <= v <= 1.0:
                failures.append(f"{ns}/{pod}: hw.gpu.dram.active {v:g} on {board[0]} {board[1]} is outside [0, 1]")
    if not gpu_pods:
        failures.append("no running Pod holds a GPU on an NVIDIA Node: nothing was checked")
    return _result(
        "S15",
        failures,
        f"{len(gpu_pods)} GPU Pods, {boards} boards named with their DRAM activity",
        CHECKS["S15"][1],
        float(boards),
    )
