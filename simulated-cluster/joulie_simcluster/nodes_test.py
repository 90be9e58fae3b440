from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from joulie_localcluster import kwok
from joulie_simcluster.nodes import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE, KWOK_TAINT_KEY, render_nodes
from joulie_simcluster.spec import load_spec, parse_spec

SMOKE = Path("simulated-cluster/specs/smoke.yaml")
KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}


def _by_name() -> dict[str, dict[str, Any]]:
    return {n["metadata"]["name"]: n for n in render_nodes(load_spec(SMOKE))}


def test_kwok_strings_are_the_ones_testinfra_starts_kwok_with() -> None:
    assert (KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE, KWOK_TAINT_KEY) == (
        kwok.KWOK_NODE_ANNOTATION,
        kwok.KWOK_NODE_ANNOTATION_VALUE,
        kwok.KWOK_TAINT_KEY,
    )


def test_smoke_nodes_are_named_pool_index_in_spec_order() -> None:
    assert [n["metadata"]["name"] for n in render_nodes(load_spec(SMOKE))] == [
        "intel-0", "epyc-0", "epyc-hsmp-0", "h100-nvl-0", "h100-sxm-0", "mi300x-0", "vm-0", "intel-managed-0", "arm64-managed-0",
    ]


def test_every_node_carries_cluster_pool_kwok_annotation_and_taint_and_its_profile() -> None:
    for name, node in _by_name().items():
        meta = node["metadata"]
        pool = name.rsplit("-", 1)[0]
        assert meta["labels"]["sim.joulie.io/cluster"] == "smoke"
        assert meta["labels"]["sim.joulie.io/pool"] == pool
        assert meta["labels"]["kubernetes.io/hostname"] == name
        assert meta["labels"]["joulie.io/managed"] == "true"
        assert meta["annotations"]["kwok.x-k8s.io/node"] == "fake"
        assert meta["annotations"]["sim.joulie.io/profile"] == load_spec(SMOKE).pool(pool).profile
        assert node["spec"]["taints"][-1] == KWOK_TAINT
        assert list(meta["labels"]) == sorted(meta["labels"])


@pytest.mark.parametrize(
    ("node", "taints"),
    [
        ("intel-0", [KWOK_TAINT]),
        ("vm-0", [KWOK_TAINT]),
        ("intel-managed-0", [{"key": "dedicated", "value": "managed", "effect": "NoSchedule"}, KWOK_TAINT]),
        ("h100-nvl-0", [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}, KWOK_TAINT]),
        ("arm64-managed-0", [KWOK_TAINT]),
    ],
)
def test_taints_are_the_profiles_plus_kwoks(node: str, taints: list[dict[str, str]]) -> None:
    assert _by_name()[node]["spec"]["taints"] == taints


@pytest.mark.parametrize(
    ("node", "resource", "count"),
    [("h100-nvl-0", "nvidia.com/gpu", "8"), ("h100-sxm-0", "nvidia.com/gpu", "8"), ("mi300x-0", "amd.com/gpu", "8")],
)
def test_gpu_nodes_advertise_their_gpus_in_capacity_and_allocatable(node: str, resource: str, count: str) -> None:
    status = _by_name()[node]["status"]
    assert status["capacity"][resource] == status["allocatable"][resource] == count


def test_cpu_nodes_advertise_no_gpu_and_allocatable_subtracts_reservations() -> None:
    status = _by_name()["intel-0"]["status"]
    assert not {"nvidia.com/gpu", "amd.com/gpu"} & set(status["capacity"])
    assert status["capacity"]["cpu"] == "96" and status["allocatable"]["cpu"] == "95"
    assert status["capacity"]["memory"] == "791917286Ki" and status["allocatable"]["memory"] == f"{791917286 - 4194304}Ki"


@pytest.mark.parametrize(("node", "arch"), [("intel-0", "amd64"), ("mi300x-0", "amd64"), ("arm64-managed-0", "arm64")])
def test_architecture_comes_from_the_profile(node: str, arch: str) -> None:
    n = _by_name()[node]
    assert n["metadata"]["labels"]["kubernetes.io/arch"] == n["metadata"]["labels"]["beta.kubernetes.io/arch"] == arch
    assert n["status"]["nodeInfo"]["architecture"] == arch


def test_spec_labels_taints_and_architecture_go_on_top_of_the_profile() -> None:
    spec = parse_spec(
        {
            "name": "c1",
            "pools": [
                {
                    "name": "m",
                    "profile": "intel-managed",
                    "count": 2,
                    "architecture": "arm64",
                    "labels": {"node.kubernetes.io/instance-type": "custom", "joulie.io/rack": "r1"},
                    "taints": [
                        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                        {"key": "dedicated", "value": "x", "effect": "NoExecute"},
                    ],
                }
            ],
        },
        "c1.yaml",
    )
    nodes = render_nodes(spec)
    assert [n["metadata"]["name"] for n in nodes] == ["m-0", "m-1"]
    labels = nodes[1]["metadata"]["labels"]
    assert labels["node.kubernetes.io/instance-type"] == "custom"
    assert labels["joulie.io/rack"] == "r1"
    assert labels["sim.joulie.io/managed"] == "true"  # the profile's own label stays
    assert labels["kubernetes.io/arch"] == "arm64" and nodes[1]["status"]["nodeInfo"]["architecture"] == "arm64"
    assert nodes[1]["spec"]["taints"] == [
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "x", "effect": "NoExecute"},
        KWOK_TAINT,
    ]


def test_a_zero_count_pool_renders_no_node() -> None:
    spec = parse_spec({"name": "c", "pools": [{"name": "p", "profile": "vm-no-powercap", "count": 0}]}, "c.yaml")
    assert render_nodes(spec) == []
