"""kubectl joulie against the real API server: what a user reads in the terminal."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kubernetes import client as k8s
from rich.console import Console

from joulie_api.backoff import Backoff
from joulie_api.kube import NODE_HARDWARE, NODE_TWIN, JoulieClient
from joulie_api.names import FIELD_MANAGER_AGENT, FIELD_MANAGER_CONTROLLER_MANAGER, object_name_for_node
from joulie_kubectl.cli import NO_TWINS, run
from joulie_localcluster.controlplane import ControlPlane
from joulie_localcluster.nodes import create_node

pytest_plugins = ["joulie_testinfra.fixtures"]

NOW = datetime.now(UTC)


def invoke(cp: ControlPlane, *argv: str, sleeps: list[float] | None = None) -> tuple[int, str]:
    buf = io.StringIO()
    console = Console(file=buf, width=250, color_system=None, force_terminal=False)
    rc = run(["--kubeconfig", str(cp.kubeconfig), *argv], console=console, clock=lambda: NOW,
             sleep=(sleeps.append if sleeps is not None else lambda s: None))
    return rc, buf.getvalue()


def test_no_twins_says_so(control_plane: ControlPlane) -> None:
    rc, out = invoke(control_plane, "status")
    assert rc == 0 and NO_TWINS in out


@pytest.fixture(scope="module")
def cluster(kube_api: k8s.ApiClient) -> Iterator[dict[str, str]]:
    core = k8s.CoreV1Api(kube_api)
    cm = JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER, Backoff(delays_s=()))
    agent = JoulieClient(kube_api, FIELD_MANAGER_AGENT, Backoff(delays_s=()))
    run_id = uuid.uuid4().hex[:4]
    names = {"eco": f"eco.node-{run_id}", "perf": f"perf-{run_id}"}
    for key, node in names.items():
        alloc = {"cpu": "32", "memory": "128Gi", "pods": "110", **({"nvidia.com/gpu": "4"} if key == "perf" else {})}
        create_node(core, node, {}, alloc)
        obj = object_name_for_node(node)
        profile = "eco" if key == "eco" else "performance"
        spec: dict[str, object] = {"nodeName": node, "profile": profile}
        if key == "eco":
            spec["cpu"] = {"packagePowerCapPctOfMax": 60}
        cm.apply(NODE_TWIN, obj, {"spec": spec})
        cm.apply_status(NODE_TWIN, obj, {
            "schedulableClass": profile,
            "powerMeasurement": {"source": "prometheus", "measuredNodePowerW": 450 if key == "eco" else 2100,
                                 "nodeCappedPowerW": 600 if key == "eco" else 3000},
            "predictedPowerHeadroomScore": 25 if key == "eco" else 30,
            "predictedCoolingStressScore": 40 if key == "eco" else 70,
            "predictedPsuStressScore": 10,
            "lastUpdated": (NOW - (timedelta(minutes=30) if key == "eco" else timedelta(seconds=20))).isoformat(),
            **({"power": {"state": "on", "since": (NOW - timedelta(minutes=5)).isoformat(), "boots": 1,
                          "reason": "kept on: the floor of pool gpu, 1 powered (SUSPEND_MIN_POWERED=1)"}}
               if key == "perf" else {}),
        })
        agent.apply_status(NODE_TWIN, obj, {"controlStatus": {"cpu": {"backend": "rapl", "result": "applied"}}})
        agent.apply(NODE_HARDWARE, obj, {"spec": {"nodeName": node}})
        hw: dict[str, object] = {"cpu": {"model": "EPYC-9654", "sockets": 2, "totalCores": 192}}
        if key == "perf":
            hw["gpu"] = {"present": True, "model": "H100-NVL", "count": 4}
        agent.apply_status(NODE_HARDWARE, obj, hw)
    for i, (cls, node, cpu) in enumerate([("performance", names["perf"], "8"), ("standard", names["eco"], "16"),
                                          ("performance", names["eco"], "1")]):
        pod = k8s.V1Pod.from_dict({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"w{i}-{run_id}", "annotations": {"joulie.io/workload-class": cls}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]},
        })
        assert pod is not None
        core.create_namespaced_pod("default", pod)
    yield names


def line_of(out: str, needle: str) -> str:
    """The table row of `needle` (rows start with their first cell after the border)."""
    return next(line for line in out.splitlines() if line.lstrip("│┃ ").startswith(needle))


def test_status_shows_summary_and_one_row_per_node(control_plane: ControlPlane, cluster: dict[str, str]) -> None:
    rc, out = invoke(control_plane, "status")
    assert rc == 0, out
    assert "CLUSTER ENERGY STATE" in out
    assert "Nodes: 2 total (1 eco, 1 performance, 0 draining, 0 unknown); 1 with stale twin data" in out
    assert "Power: 2550 W measured of 3600 W capped" in out
    assert f"Peak: 70% ({cluster['perf']})" in out
    perf = line_of(out, cluster["perf"])
    for cell in ("performance", "2100 W / 3000 W", "30%", "70%", "25%", "1 (1 perf)", "applied (rapl)", "20s"):
        assert cell in perf, (cell, perf)
    eco = line_of(out, cluster["eco"])
    for cell in ("eco", "60%", "53%", "2 (1 perf)", "STALE"):  # 17 of 32 cores requested = 53 %
        assert cell in eco, (cell, eco)


def test_node_shows_one_node_by_raw_or_object_name(control_plane: ControlPlane, cluster: dict[str, str]) -> None:
    rc, out = invoke(control_plane, "node", cluster["perf"])
    assert rc == 0
    assert "EPYC-9654 + 4x H100-NVL" in out and f"Pods on {cluster['perf']}: 1" in out
    rc, out = invoke(control_plane, "node", object_name_for_node(cluster["eco"]))
    assert rc == 0 and "(STALE)" in out and cluster["eco"] in out
    rc, _ = invoke(control_plane, "node", "nope")
    assert rc == 1


def test_pods_shows_where_each_class_runs_and_flags_misplaced(control_plane: ControlPlane, cluster: dict[str, str]) -> None:
    rc, out = invoke(control_plane, "pods")
    assert rc == 0
    assert "performance pods on performance nodes: 1" in out
    assert "performance pods on eco nodes: 1" in out
    assert "standard pods on eco nodes: 1" in out
    assert "performance pods on eco/draining nodes: 1" in out
    misplaced_row = next(line for line in out.splitlines() if " w2-" in line)
    assert "performance pod on a non-performance node" in misplaced_row


def test_power_says_why_each_managed_node_is_warm_or_asleep(control_plane: ControlPlane, cluster: dict[str, str]) -> None:
    rc, out = invoke(control_plane, "power")
    assert rc == 0, out
    row = line_of(out, cluster["perf"])
    for cell in ("on", "5m", "floor", "kept on: the floor of pool gpu"):
        assert cell in row, (cell, row)
    assert cluster["eco"] not in out  # no status.power: not managed by the power policy


def test_top_refreshes_until_the_iteration_bound(control_plane: ControlPlane, cluster: dict[str, str]) -> None:
    sleeps: list[float] = []
    rc, out = invoke(control_plane, "top", "--iterations", "3", "--interval", "0.5", sleeps=sleeps)
    assert rc == 0
    assert out.count("CLUSTER ENERGY STATE") == 3 and out.count("PLACEMENT") == 3
    assert sleeps == [0.5, 0.5]


def test_unreachable_api_server_exits_1_with_a_message(tmp_path: Path, control_plane: ControlPlane,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "kubeconfig"
    cfg.write_text(control_plane.kubeconfig.read_text().replace(control_plane.url, "https://127.0.0.1:1"))
    buf = io.StringIO()
    rc = run(["--kubeconfig", str(cfg), "status"], console=Console(file=buf))
    assert rc == 1
    assert "reading from the API server failed" in capsys.readouterr().err
