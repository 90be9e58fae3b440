from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from joulie_simcluster.agents import agent_daemonset, controller_tolerations, select_agents, tolerates
from joulie_simcluster.nodes import render_nodes
from joulie_simcluster.spec import load_spec

SMOKE = Path("simulated-cluster/specs/smoke.yaml")
SMOKE_DS = Path("simulated-cluster/specs/smoke-agent-daemonset.yaml")


def _node(name: str = "n", labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
          arch: str = "amd64") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/arch": arch, "joulie.io/managed": "true", **(labels or {})}},
        "spec": {"taints": taints or []},
        "status": {"nodeInfo": {"architecture": arch}},
    }


def test_smoke_with_the_smoke_daemonset_reaches_every_node_but_arm64() -> None:
    eligible, excluded = select_agents(render_nodes(load_spec(SMOKE)), yaml.safe_load(SMOKE_DS.read_text()))
    assert eligible == ["intel-0", "epyc-0", "epyc-hsmp-0", "h100-nvl-0", "h100-sxm-0", "mi300x-0", "vm-0", "intel-managed-0"]
    assert excluded == [("arm64-managed-0", "arch arm64 not in [amd64] (the agent image's platforms)")]


def test_smoke_with_the_chart_default_daemonset_says_which_taints_keep_agents_off() -> None:
    _, excluded = select_agents(render_nodes(load_spec(SMOKE)), agent_daemonset())
    assert dict(excluded) == {
        "h100-nvl-0": "taint nvidia.com/gpu=present:NoSchedule not tolerated",
        "h100-sxm-0": "taint nvidia.com/gpu=present:NoSchedule not tolerated",
        "intel-managed-0": "taint dedicated=managed:NoSchedule not tolerated",
        "arm64-managed-0": "arch arm64 not in [amd64] (the agent image's platforms)",
    }


MANAGED_TAINT = {"key": "dedicated", "value": "managed", "effect": "NoSchedule"}
TOL_MANAGED = {"key": "dedicated", "operator": "Equal", "value": "managed", "effect": "NoSchedule"}
ARCH_AFFINITY = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}]}}}


@pytest.mark.parametrize(
    ("node", "ds", "reason"),
    [
        (_node(), agent_daemonset(), None),
        (_node(labels={"joulie.io/managed": "false"}), agent_daemonset(),
         "nodeSelector joulie.io/managed=true not matched (node has joulie.io/managed=false)"),
        ({**_node(), "metadata": {"name": "n", "labels": {"kubernetes.io/arch": "amd64"}}}, agent_daemonset(),
         "nodeSelector joulie.io/managed=true not matched (node has no joulie.io/managed)"),
        (_node(taints=[MANAGED_TAINT]), agent_daemonset(), "taint dedicated=managed:NoSchedule not tolerated"),
        (_node(taints=[MANAGED_TAINT]), agent_daemonset(tolerations=[TOL_MANAGED]), None),
        (_node(taints=[MANAGED_TAINT]), agent_daemonset(tolerations=[{"key": "dedicated", "operator": "Equal", "value": "other"}]),
         "taint dedicated=managed:NoSchedule not tolerated"),
        (_node(taints=[MANAGED_TAINT]), agent_daemonset(tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}]),
         "taint dedicated=managed:NoSchedule not tolerated"),
        (_node(taints=[MANAGED_TAINT]), agent_daemonset(tolerations=[{"operator": "Exists"}]), None),
        (_node(taints=[{"key": "soft", "effect": "PreferNoSchedule"}]), agent_daemonset(), None),
        (_node(taints=[{"key": "gone", "effect": "NoExecute"}]), agent_daemonset(), "taint gone:NoExecute not tolerated"),
        (_node(taints=[{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]), agent_daemonset(), None),
        (_node(taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
                       {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
                       {"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"},
                       {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"},
                       {"key": "node.kubernetes.io/pid-pressure", "effect": "NoSchedule"},
                       {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                       {"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]), agent_daemonset(), None),
        (_node(taints=[{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]), agent_daemonset(host_network=False),
         "taint node.kubernetes.io/network-unavailable:NoSchedule not tolerated"),
        (_node(arch="arm64"), agent_daemonset(), "arch arm64 not in [amd64] (the agent image's platforms)"),
        (_node(arch="arm64"), agent_daemonset(node_selector={"joulie.io/managed": "true", "kubernetes.io/arch": "amd64"}),
         "arch arm64 not in [amd64]"),
        (_node(arch="arm64"), agent_daemonset(affinity=ARCH_AFFINITY), "node affinity not matched: arch arm64 not in [amd64]"),
        (_node(), agent_daemonset(affinity=ARCH_AFFINITY), None),
        (_node(labels={"joulie.io/rack": "r2"}), agent_daemonset(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "joulie.io/rack", "operator": "In", "values": ["r1"]}]},
                                  {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]}}}),
         "node affinity not matched: joulie.io/rack in [r1] (node has joulie.io/rack=r2) or gpu exists (node has no gpu)"),
        (_node(name="a"), agent_daemonset(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}]}]}}}), None),
        (_node(labels={"joulie.io/managed": "false"}, taints=[MANAGED_TAINT], arch="arm64"), agent_daemonset(),
         "nodeSelector joulie.io/managed=true not matched (node has joulie.io/managed=false); "
         "taint dedicated=managed:NoSchedule not tolerated; arch arm64 not in [amd64] (the agent image's platforms)"),
    ],
)
def test_select_agents_decides_as_the_daemonset_controller(node: dict[str, Any], ds: dict[str, Any], reason: str | None) -> None:
    eligible, excluded = select_agents([node], ds)
    if reason is None:
        assert (eligible, excluded) == ([node["metadata"]["name"]], [])
    else:
        assert (eligible, excluded) == ([], [(node["metadata"]["name"], reason)])


def test_the_controller_adds_network_unavailable_only_for_host_network_pods() -> None:
    keys = {t["key"] for t in controller_tolerations(host_network=False)}
    assert keys == {f"node.kubernetes.io/{k}" for k in
                    ("not-ready", "unreachable", "disk-pressure", "memory-pressure", "pid-pressure", "unschedulable")}
    assert len(controller_tolerations(host_network=True)) == 7


@pytest.mark.parametrize(
    ("toleration", "taint", "ok"),
    [
        ({"key": "k", "value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
        ({"key": "k", "value": "w"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
        ({"key": "k", "operator": "Exists"}, {"key": "k", "value": "v", "effect": "NoExecute"}, True),
        ({"operator": "Exists", "effect": "NoSchedule"}, {"key": "any", "effect": "NoSchedule"}, True),
        ({"operator": "Exists", "effect": "NoSchedule"}, {"key": "any", "effect": "NoExecute"}, False),
        ({"value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),  # Equal needs a key
    ],
)
def test_tolerates_follows_the_kubernetes_rule(toleration: dict[str, str], taint: dict[str, str], ok: bool) -> None:
    assert tolerates(toleration, taint) is ok
