"""kubectl joulie receipt / receipts: the Pods' energy receipts, read from their annotation (the API
server is replaced by a list of Pod objects; cli_test.py runs the other commands against a real one)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from rich.console import Console

from joulie_api.names import ANNOTATION_ENERGY_RECEIPT
from joulie_api.receipt import EnergyReceipt
from joulie_kubectl import cli

GPU_JOB = EnergyReceipt(
    "gpu-0",
    "finished",
    3600.0,
    {"gpu": 7.2e6, "cpuBusy": 1.8e5, "cpuIdle": 1.44e5, "platform": 9e5},
    3.6e5,
    (1.8e5, 5.4e5),
    120.0,
    "attribution:joulie/v1; counterfactual:capmodel-ratio",
)
CPU_JOB = EnergyReceipt("cpu-0", "running", 1800.0, {"cpuBusy": 3.6e5, "cpuIdle": 9e4, "platform": 5.4e4})
OTHER_TEAM = EnergyReceipt("cpu-1", "finished", 600.0, {"cpuBusy": 3.6e4, "cpuIdle": 3.6e4, "platform": 3.6e4})


def pod(ns: str, name: str, receipt: EnergyReceipt | str | None) -> dict[str, Any]:
    ann = (
        {}
        if receipt is None
        else {ANNOTATION_ENERGY_RECEIPT: receipt if isinstance(receipt, str) else receipt.to_annotation()}
    )
    return {"metadata": {"namespace": ns, "name": name, "annotations": ann}}


PODS = [
    pod("ml", "train-0", GPU_JOB),
    pod("ml", "etl-0", CPU_JOB),
    pod("ml", "fresh", None),
    pod("web", "batch-0", OTHER_TEAM),
]


def invoke(monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[int, str, str]:
    def read_pods(api: object, namespace: str | None, name: str | None = None) -> list[dict[str, Any]]:
        return [
            p for p in PODS if namespace in (None, p["metadata"]["namespace"]) and name in (None, p["metadata"]["name"])
        ]

    monkeypatch.setattr(cli, "api_client", lambda kubeconfig, context: object())
    monkeypatch.setattr(cli, "read_pods", read_pods)
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(cli, "Console", lambda stderr=False: Console(file=err, width=300))
    rc = cli.run(list(argv), console=Console(file=out, width=300))
    return rc, out.getvalue(), err.getvalue()


def test_receipt_of_a_gpu_job_shows_energy_by_device_and_the_saving(monkeypatch: pytest.MonkeyPatch) -> None:
    rc, out, _ = invoke(monkeypatch, "receipt", "train-0", "-n", "ml")
    assert rc == 0, out
    for line in ("GPU", "2000.0 Wh"), ("CPU busy", "50.0 Wh"), ("memory+platform", "250.0 Wh"), ("Energy", "2340.0 Wh"):
        assert any(line[0] in row and line[1] in row for row in out.splitlines()), (line, out)
    assert "100.0 Wh [50.0 Wh .. 150.0 Wh]" in out and "120 s" in out and "capmodel-ratio" in out


def test_receipt_of_a_running_cpu_job_is_its_running_total_and_json_has_every_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rc, out, _ = invoke(monkeypatch, "receipt", "etl-0", "-n", "ml")
    assert rc == 0 and "running (running total)" in out
    assert "140.0 Wh" in next(line for line in out.splitlines() if line.startswith("Energy"))  # 100 + 25 + 15 Wh
    rc, out, _ = invoke(monkeypatch, "receipt", "etl-0", "-n", "ml", "-o", "json")
    body = json.loads(out)
    assert rc == 0 and body["state"] == "running" and body["energyJ"]["total"] == pytest.approx(5.04e5)
    assert body["energyJ"]["gpu"] == 0.0 and body["node"] == "cpu-0"


def test_receipt_says_when_a_pod_has_none_or_does_not_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    rc, _, err = invoke(monkeypatch, "receipt", "fresh", "-n", "ml")
    assert rc == 1 and f"has no {ANNOTATION_ENERGY_RECEIPT} annotation yet" in err
    rc, _, err = invoke(monkeypatch, "receipt", "nope", "-n", "ml")
    assert rc == 1 and "no Pod 'nope' in namespace 'ml'" in err


def test_receipts_table_rolls_up_the_namespace_and_all_namespaces_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    rc, out, _ = invoke(monkeypatch, "receipts", "-n", "ml")
    assert rc == 0
    assert "train-0" in out and "etl-0" in out and "batch-0" not in out and "fresh" not in out
    ml_total = next(line for line in out.splitlines() if "ml (total)" in line)
    assert "2 pods" in ml_total and "1 running" in ml_total and "2480.0 Wh" in ml_total  # 2340 + 140
    rc, out, _ = invoke(monkeypatch, "receipts", "-A", "-o", "json")
    body = json.loads(out)
    assert set(body["namespaces"]) == {"ml", "web"}
    assert body["total"]["energyJ"]["total"] == pytest.approx(sum(r.total_j for r in (GPU_JOB, CPU_JOB, OTHER_TEAM)))
    assert body["total"]["savedJ"] == pytest.approx(3.6e5) and body["total"]["pods"] == 3


def test_a_malformed_receipt_is_shown_with_its_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    PODS.append(pod("web", "broken", '{"v": 1, "state": "done"}'))
    try:
        rc, out, _ = invoke(monkeypatch, "receipts", "-n", "web")
    finally:
        PODS.pop()
    assert rc == 0 and "state='done': expected one of running, finished" in out
