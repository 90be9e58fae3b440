"""S16 on Pods as the API server lists them."""

from __future__ import annotations

from typing import Any

from joulie_api.receipt import EnergyReceipt
from joulie_simcluster.smoke.receipts import receipts_on_load_pods

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
STARTED = "2027-01-15T07:58:00Z"  # two minutes before NOW


def pod(name: str, node: str, receipt: EnergyReceipt | None = None, started: str = STARTED) -> dict[str, Any]:
    ann = {"joulie.io/energy-receipt": receipt.to_annotation()} if receipt else {}
    return {
        "metadata": {"name": name, "annotations": ann},
        "spec": {"nodeName": node},
        "status": {"phase": "Running", "startTime": started},
    }


def receipt(node: str, gpu: float = 0.0) -> EnergyReceipt:
    return EnergyReceipt(node, "running", 100.0, {"gpu": gpu, "cpuBusy": 50.0, "cpuIdle": 20.0, "platform": 9.0})


def test_every_load_pod_on_a_metered_node_carries_its_receipt() -> None:
    pods = [
        pod("l-cpu", "cpu-0", receipt("cpu-0")),
        pod("l-gpu", "gpu-0", receipt("gpu-0", 900.0)),
        pod("l-fake", "fake-0"),
    ]  # no meter: not checked
    got = receipts_on_load_pods(pods, {"cpu-0", "gpu-0"}, {"gpu-0"}, {"gpu-0"}, NOW, 30.0)
    assert got.status == "pass" and "2 load Pods" in got.observed and "1 GPU Pod(s)" in got.observed


def test_a_missing_or_wrong_receipt_fails_naming_the_pod() -> None:
    missing = receipts_on_load_pods([pod("l-cpu", "cpu-0")], {"cpu-0"}, set(), set(), NOW, 30.0)
    assert missing.status == "fail" and "l-cpu on cpu-0: no joulie.io/energy-receipt" in missing.observed
    elsewhere = receipts_on_load_pods([pod("l-cpu", "cpu-0", receipt("cpu-9"))], {"cpu-0"}, set(), set(), NOW, 30.0)
    assert elsewhere.status == "fail" and "node 'cpu-9'" in elsewhere.observed
    no_boards = receipts_on_load_pods([pod("l-gpu", "gpu-0", receipt("gpu-0"))], {"gpu-0"}, {"gpu-0"}, {"gpu-0"}, NOW, 30)
    assert no_boards.status == "fail" and "bills no GPU energy" in no_boards.observed


def test_a_node_without_hw_gpu_allocation_bills_its_boards_to_nobody() -> None:
    # The emulated kubelet serves pod-resources for NVIDIA Nodes only: an AMD Node's Pod is billed no board.
    pods = [pod("l-nv", "nv-0", receipt("nv-0", 900.0)), pod("l-amd", "amd-0", receipt("amd-0"))]
    ok = receipts_on_load_pods(pods, {"nv-0", "amd-0"}, {"nv-0", "amd-0"}, {"nv-0"}, NOW, 30.0)
    assert ok.status == "pass" and "1 GPU Pod(s) billed" in ok.observed and "1 on Nodes without" in ok.observed
    billed = receipts_on_load_pods([pod("l-amd", "amd-0", receipt("amd-0", 5.0))], {"amd-0"}, {"amd-0"}, set(), NOW, 30)
    assert billed.status == "fail" and "no hw.gpu.allocation on amd-0" in billed.observed


def test_a_pod_younger_than_two_windows_is_not_yet_checked() -> None:
    young = receipts_on_load_pods(
        [pod("l-cpu", "cpu-0", started="2027-01-15T07:59:30Z")], {"cpu-0"}, set(), set(), NOW, 30.0
    )
    assert young.status == "skipped"
