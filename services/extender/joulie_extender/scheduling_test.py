"""With the real kube-scheduler calling the extender (KWOK nodes, real API server, watch-fed cache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from joulie_api.backoff import Backoff
from joulie_api.kube import NODE_HARDWARE, NODE_TWIN, JoulieClient
from joulie_api.names import FIELD_MANAGER_AGENT, FIELD_MANAGER_CONTROLLER_MANAGER, object_name_for_node
from joulie_extender import cli
from joulie_extender.cache.watch import WatchCache
from joulie_extender.http import routes
from joulie_extender.http.app import create_app
from joulie_extender.http.server import ServerThread
from joulie_extender.settings import Settings
from joulie_extender.wire.scheduler import ExtenderArgs, parse_extender_args
from joulie_localcluster.controlplane import ControlPlane
from joulie_localcluster.kwok import KWOK_TAINT_KEY
from joulie_localcluster.nodes import create_node
from joulie_localcluster.procs import ManagedProcess, free_port
from joulie_localcluster.scheduler import ExtenderConfig, start_scheduler
from joulie_localcluster.tools import Tools
from joulie_testinfra.waiting import eventually

pytest_plugins = ["joulie_testinfra.fixtures"]

RUN = uuid.uuid4().hex[:5]



@dataclass
class Stack:
    server: ServerThread
    cache: WatchCache
    scheduler: ManagedProcess
    mode: str
    # Which branch each request kube-scheduler sent used: "NodeNames" or "Nodes".
    branches: list[str]


@pytest.fixture(scope="module", params=[False, True], ids=["full-nodes", "node-cache-capable"])
def stack(
    request: pytest.FixtureRequest, control_plane: ControlPlane, test_tools: Tools, kwok: ManagedProcess,
    kube_api: k8s.ApiClient,
) -> Iterator[Stack]:
    """A watch-fed extender and a kube-scheduler calling it, in both wire modes in turn."""
    cache = WatchCache(kube_api)
    cache.start()
    assert cache.wait_synced(15), "the watch cache did not list NodeTwin, NodeHardware and Node"
    branches: list[str] = []

    def recording_parse(body: bytes, *, keep_raw: bool = True) -> ExtenderArgs:
        args = parse_extender_args(body, keep_raw=keep_raw)
        branches.append("NodeNames" if args.node_names is not None else "Nodes")
        return args

    patch = pytest.MonkeyPatch()
    patch.setattr(routes, "parse_extender_args", recording_parse)
    server = ServerThread(create_app(cache, Settings(debug_endpoints=True)), free_port()).start()
    # weight 5 as in the original's CI; ignorable so a dead extender never blocks scheduling.
    scheduler = start_scheduler(test_tools, control_plane, extender=ExtenderConfig(
        url_prefix=server.url, weight=5, http_timeout="2s", node_cache_capable=request.param))
    try:
        yield Stack(server, cache, scheduler, "ncc" if request.param else "full", branches)
    finally:
        scheduler.stop()
        server.stop()
        cache.stop()
        patch.undo()


def make_node(core: k8s.CoreV1Api, name: str, group: str, gpus: int = 0, profile: str | None = None) -> None:
    alloc = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    labels = {"kubernetes.io/hostname": name, "joulie-test": group}
    if profile:
        labels["joulie.io/power-profile"] = profile
    create_node(core, name, labels, alloc, kwok=True)


def publish(api: k8s.ApiClient, node: str, profile: str, *, measured_w: float, capped_w: float, gpus: int = 0) -> None:
    no_wait = Backoff(delays_s=())
    controller = JoulieClient(api, FIELD_MANAGER_CONTROLLER_MANAGER, no_wait)
    agent = JoulieClient(api, FIELD_MANAGER_AGENT, no_wait)
    name = object_name_for_node(node)
    controller.apply(NODE_TWIN, name, {"spec": {"nodeName": node, "profile": profile}})
    controller.apply_status(NODE_TWIN, name, {
        "schedulableClass": profile,
        "powerMeasurement": {"source": "prometheus", "measuredNodePowerW": measured_w, "nodeCappedPowerW": capped_w},
        "predictedPowerHeadroomScore": (capped_w - measured_w) / capped_w * 100,
        "predictedCoolingStressScore": 20,
        "lastUpdated": datetime.now(UTC).isoformat(),
    })
    hw: dict[str, Any] = {"cpu": {"sockets": 2, "totalCores": 64, "capRange": {"type": "package", "maxWattsPerSocket": 350}}}
    if gpus:
        hw["gpu"] = {"present": True, "count": gpus, "vendor": "nvidia", "capRangePerGpu": {"maxWatts": 700}}
    agent.apply(NODE_HARDWARE, name, {"spec": {"nodeName": node}})
    agent.apply_status(NODE_HARDWARE, name, hw)


def make_pod(core: k8s.CoreV1Api, group: str, cls: str, cpu: str = "1", gpus: int = 0) -> str:
    name = f"p-{group}-{uuid.uuid4().hex[:6]}"
    requests = {"cpu": cpu, **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    pod = k8s.V1Pod.from_dict({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": {"joulie.io/workload-class": cls}},
        "spec": {
            "nodeSelector": {"joulie-test": group},
            "tolerations": [{"key": KWOK_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "work", "image": "fake",
                            "resources": {"requests": requests, "limits": {"nvidia.com/gpu": str(gpus)} if gpus else {}}}],
        },
    })
    assert pod is not None
    core.create_namespaced_pod("default", pod)
    return name


def bound_node(core: k8s.CoreV1Api, pod: str, timeout_s: float = 30) -> str:
    def node() -> str | None:
        spec = core.read_namespaced_pod(pod, "default").spec
        return spec.node_name if spec else None

    return eventually(node, timeout_s, f"pod {pod} bound")


def cached(server: ServerThread, nodes: list[str]) -> bool:
    with urllib.request.urlopen(server.url + "/debug/scoring", timeout=5) as resp:
        seen = {n["nodeName"]: n for n in json.loads(resp.read())["nodes"]}
    return all(n in seen and not seen[n]["stale"] for n in nodes)


def test_performance_pods_are_never_bound_to_eco_nodes(kube_api: k8s.ApiClient, stack: Stack) -> None:
    core = k8s.CoreV1Api(kube_api)
    group = f"perf{RUN}{stack.mode}"
    eco = [f"{group}-eco-{i}" for i in range(3)]
    perf = f"{group}-perf-0"
    for n in [*eco, perf]:
        make_node(core, n, group)
    # The eco nodes look far better on power: only the filter keeps performance pods off them.
    for n in eco:
        publish(kube_api, n, "eco", measured_w=100, capped_w=1000)
    publish(kube_api, perf, "performance", measured_w=900, capped_w=1000)
    eventually(lambda: cached(stack.server, [*eco, perf]), what="twins in the extender cache")

    pods = [make_pod(core, group, "performance") for _ in range(6)]
    assert {bound_node(core, p) for p in pods} == {perf}
    # kube-scheduler really called us, in the wire branch its nodeCacheCapable setting selects.
    assert set(stack.branches) == {"NodeNames" if stack.mode == "ncc" else "Nodes"}, stack.branches
    # Standard pods may use the eco nodes (and, with their better score, do).
    assert bound_node(core, make_pod(core, group, "standard")) in eco


def test_performance_pods_stay_off_eco_labelled_nodes_without_any_twin(kube_api: k8s.ApiClient, stack: Stack) -> None:
    """Issue 21: start-up, or an agent that never reported: no NodeTwin, only the controller's label."""
    core = k8s.CoreV1Api(kube_api)
    group = f"notwin{RUN}{stack.mode}"
    eco = [f"{group}-eco-{i}" for i in range(3)]
    perf = f"{group}-perf-0"
    for n in eco:
        make_node(core, n, group, profile="eco")
    make_node(core, perf, group, profile="performance")
    # With nodeCacheCapable the request carries names only: the extender's Node watch has the labels.
    eventually(lambda: all(stack.cache.profile_label(n) == "eco" for n in eco), what="labels in the extender cache")
    assert all(stack.cache.twin(n) is None for n in [*eco, perf])

    pods = [make_pod(core, group, "performance") for _ in range(6)]
    assert {bound_node(core, p) for p in pods} == {perf}
    # Standard pods are not filtered: with every score neutral, they spread over all four nodes.
    standard = {bound_node(core, make_pod(core, group, "standard")) for _ in range(8)}
    assert standard & set(eco), standard


def test_heavy_gpu_pod_lands_on_the_node_with_most_headroom(kube_api: k8s.ApiClient, stack: Stack) -> None:
    core = k8s.CoreV1Api(kube_api)
    group = f"gpu{RUN}{stack.mode}"
    measured = {f"{group}-a": 4500.0, f"{group}-b": 1500.0, f"{group}-c": 3000.0}
    for n, w in measured.items():
        make_node(core, n, group, gpus=8)
        publish(kube_api, n, "performance", measured_w=w, capped_w=6300, gpus=8)
    eventually(lambda: cached(stack.server, list(measured)), what="twins in the extender cache")

    assert bound_node(core, make_pod(core, group, "performance", cpu="16", gpus=4)) == f"{group}-b"


def test_twin_updates_reach_the_cache_through_the_watch(kube_api: k8s.ApiClient, stack: Stack) -> None:
    node = f"watch{RUN}{stack.mode}-n"
    publish(kube_api, node, "eco", measured_w=100, capped_w=1000)
    cache = stack.cache
    eventually(lambda: cache.twin(node) is not None and cache.twin(node).schedulable_class == "eco", what="ADDED")  # type: ignore[union-attr]
    publish(kube_api, node, "performance", measured_w=500, capped_w=1000)
    eventually(lambda: cache.twin(node).schedulable_class == "performance", what="MODIFIED")  # type: ignore[union-attr]
    assert cache.hardware(node) is not None and cache.hardware(node).cpu_max_watts_total == 700  # type: ignore[union-attr]
    k8s.CustomObjectsApi(kube_api).delete_cluster_custom_object("joulie.io", "v1alpha1", "nodetwins", object_name_for_node(node))
    eventually(lambda: cache.twin(node) is None, what="DELETED")


def test_pods_still_schedule_when_the_extender_is_down(kube_api: k8s.ApiClient, stack: Stack) -> None:
    core = k8s.CoreV1Api(kube_api)
    group = f"down{RUN}{stack.mode}"
    make_node(core, f"{group}-0", group)
    stack.server.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(stack.server.url + "/healthz", timeout=2)
    assert bound_node(core, make_pod(core, group, "performance"), timeout_s=45) == f"{group}-0"


def test_the_cli_serves_from_a_kubeconfig_with_a_watch_fed_cache(
    kube_api: k8s.ApiClient, control_plane: ControlPlane, tmp_path: Path
) -> None:
    node = f"cli{RUN}-n"
    publish(kube_api, node, "eco", measured_w=100, capped_w=1000)
    port, metrics_port = free_port(), free_port()
    log = (tmp_path / "extender.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", cli.__name__, "--kubeconfig", str(control_plane.kubeconfig),
         "--addr", f"127.0.0.1:{port}", "--staleness", "2m", "--metrics-addr", f"127.0.0.1:{metrics_port}"],
        stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "EXTENDER_DEBUG_ENDPOINTS": "true"},
    )
    try:
        url = f"http://127.0.0.1:{port}"

        def debug() -> dict[str, Any] | None:
            try:
                with urllib.request.urlopen(url + "/debug/scoring", timeout=2) as resp:
                    body: dict[str, Any] = json.loads(resp.read())
            except OSError:
                return None
            return body if any(n["nodeName"] == node for n in body["nodes"]) else None

        try:
            body = eventually(debug, what="the CLI-started extender serving the twin")
        except AssertionError:
            log.flush()
            raise AssertionError((tmp_path / "extender.log").read_text()[-3000:]) from None
        assert body["stalenessThresholdSeconds"] == 120.0 and body["cacheSynced"] == {"NodeTwin": True, "NodeHardware": True, "Node": True}
        req = urllib.request.Request(url + "/filter", method="POST", headers={"content-type": "application/json"},
                                     data=json.dumps({"Pod": {"metadata": {"annotations": {
                                         "joulie.io/workload-class": "performance"}}}, "NodeNames": [node]}).encode())
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert json.loads(resp.read())["FailedNodes"] == {node: "joulie: performance pod rejected from eco node"}
        for metrics_url in (url, f"http://127.0.0.1:{metrics_port}"):
            with urllib.request.urlopen(metrics_url + "/metrics", timeout=5) as resp:
                text = resp.read().decode()
            assert 'joulie_scheduler_cache_synced{kind="NodeTwin"} 1.0' in text
            assert 'joulie_scheduler_filter_requests_total{workload_class="performance"} 1.0' in text
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
