"""The controller's side of the receipts' allocation check: refused allocations counted per window and
logged when they start, not every window."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from joulie_api.generated.nodehardware import NodeHardware
from joulie_controller.controller import Controller
from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.readings.receiptinputs import Allocation
from joulie_controller.settings import Settings
from joulie_controller.testing import MemoryKube, NoPower


def hardware(node: str) -> NodeHardware:
    return NodeHardware.model_validate({
        "apiVersion": "joulie.io/v1alpha1", "kind": "NodeHardware", "metadata": {"name": node},
        "spec": {"nodeName": node},
        "status": {"gpu": {"present": True, "capRangePerGpu": {"minWatts": 200, "maxWatts": 700}}},
    })


def test_refused_allocations_are_counted_every_window_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    nodes = [NodeInfo("g1", allocatable_gpus=4), NodeInfo("g2", allocatable_gpus=4)]
    kube = MemoryKube(nodes, [PodInfo("ml", "train", node_name="g1"), PodInfo("ml", "other", node_name="g2")])
    kube.snap = replace(kube.snap, hardware={"g1": hardware("g1"), "g2": hardware("g2")})
    ctl = Controller(Settings(), kube, NoPower())  # type: ignore[arg-type]
    allocations = [
        Allocation("g1", "ml/train", "gpu-0"),
        Allocation("g1", "ml/train", "gpu-9"),
        Allocation("g1", "ml/other", "gpu-1"),
    ]
    caplog.set_level(logging.WARNING)
    for _ in range(2):
        assert ctl.believed_boards(kube.snap, allocations) == {("g1", "ml/train"): (0,)}
    refused = [r for r in caplog.records if "hw.gpu.allocation refused" in r.getMessage()]
    assert len(refused) == 1 and "gpu-9" in refused[0].getMessage() and "ml/other" in refused[0].getMessage()
    get = ctl.metrics.registry.get_sample_value
    name = "joulie_receipt_gpu_allocations_refused_total"
    assert get(name, {"kind": "unlisted-board"}) == 2 and get(name, {"kind": "pod-not-on-node"}) == 2
    ctl.believed_boards(kube.snap, allocations[:1])
    assert any("believed again" in r.getMessage() for r in caplog.records)


def test_a_nodes_cpu_idle_is_exported_under_its_current_source_alone() -> None:
    ctl = Controller(Settings(), MemoryKube([NodeInfo("vm")], []), NoPower())  # type: ignore[arg-type]
    get = ctl.metrics.registry.get_sample_value
    name = "joulie_receipt_cpu_idle_watts"
    ctl.metrics.record_receipt_cpu_idle({"vm": (0.0, "unknown")})
    assert get(name, {"k8s_node_name": "vm", "source": "unknown"}) == 0.0
    ctl.metrics.record_receipt_cpu_idle({"vm": (4.8, "measured")})
    assert get(name, {"k8s_node_name": "vm", "source": "measured"}) == 4.8
    assert get(name, {"k8s_node_name": "vm", "source": "unknown"}) is None
