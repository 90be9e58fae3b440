"""The controller's watch-fed caches against a real kube-apiserver and etcd: they follow adds,
updates and deletes, survive an API server restart and a 410 Gone without missing an update, and a
steady tick makes no LIST (counted by the API server's own ``apiserver_request_total``).

Nothing else in this test session lists Nodes, Pods or the Joulie resources (no KWOK, no
scheduler), so the API server's counts are the controller's.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from joulie_api.backoff import Backoff
from joulie_api.kube import JoulieClient
from joulie_api.names import FIELD_MANAGER_CONTROLLER_MANAGER, GROUP, PLURAL_NODE_TWIN, VERSION
from joulie_api.watchcache import WatchCache
from joulie_common.clock import FakeClock
from joulie_controller.controller import Controller
from joulie_controller.kube.informer import CachedCluster
from joulie_controller.kube.kube import ControllerKube, cluster_caches, watch_cluster
from joulie_controller.settings import NodeSettings, PrometheusSettings, Settings
from joulie_controller.telemetry.prometheus import PowerReader
from joulie_localcluster.controlplane import ControlPlane
from joulie_localcluster.nodes import create_node
from joulie_testinfra.waiting import eventually

pytest_plugins = ["joulie_testinfra.fixtures"]

TICKS = 5


@pytest.fixture
def tag(kube_api: k8s.ApiClient) -> Iterator[str]:
    """A label value marking this test's Nodes (deleted afterwards, with their twins)."""
    value = uuid.uuid4().hex[:8]
    yield value
    core, custom = k8s.CoreV1Api(kube_api), k8s.CustomObjectsApi(kube_api)
    names = [
        n.metadata.name
        for n in core.list_node(label_selector=f"test.joulie.io/suite={value}").items
        if n.metadata and n.metadata.name
    ]
    for name in names:
        core.delete_node(name)
        try:
            custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL_NODE_TWIN, name)
        except k8s.ApiException as err:
            if err.status != 404:
                raise


@pytest.fixture
def cluster(kube_api: k8s.ApiClient) -> Iterator[CachedCluster]:
    c = watch_cluster(kube_api, 600.0, threading.Event())
    c.wait_synced(30)
    yield c
    c.close()


def make_node(core: k8s.CoreV1Api, name: str, tag: str, **labels: str) -> None:
    create_node(
        core,
        name,
        {"test.joulie.io/suite": tag, "joulie.io/hw.cpu-model": "epyc", **labels},
        {"cpu": "32", "memory": "64Gi", "pods": "110"},
    )


def view(cluster: CachedCluster, tag: str) -> dict[str, str]:
    """This test's Nodes as the cache holds them: name -> its `v` label."""
    return {
        n.name: n.labels.get("v", "") for n in cluster.values("nodes") if n.labels.get("test.joulie.io/suite") == tag
    }


def relabel(core: k8s.CoreV1Api, name: str, value: str) -> None:
    core.patch_node(name, {"metadata": {"labels": {"v": value}}})


def changes(core: k8s.CoreV1Api, tag: str, round_: str) -> dict[str, str]:
    """An add, an update and a delete of this test's Nodes; returns the view they leave."""
    make_node(core, f"{round_}-new-{tag}", tag, v="1")
    relabel(core, f"keep-{tag}", round_)
    core.delete_node(f"gone-{tag}")
    return {f"keep-{tag}": round_, f"{round_}-new-{tag}": "1"}


def test_the_cache_follows_nodes_and_twins_added_changed_and_deleted(
    kube_api: k8s.ApiClient, cluster: CachedCluster, tag: str
) -> None:
    core = k8s.CoreV1Api(kube_api)
    make_node(core, f"keep-{tag}", tag, v="0")
    make_node(core, f"gone-{tag}", tag, v="0")
    eventually(lambda: view(cluster, tag) == {f"keep-{tag}": "0", f"gone-{tag}": "0"}, timeout_s=10)
    want = changes(core, tag, "a")
    eventually(lambda: view(cluster, tag) == want, timeout_s=10)

    ctl = controller(kube_api, tag, cluster)
    assert ctl.tick().writes == 6  # each Node's twin spec, profile label and status
    eventually(
        lambda: set(want) <= {str((t.metadata or {}).get("name")) for t in cluster.values("twins")}, timeout_s=10
    )
    assert cluster.caches["nodes"].lists == 1


def controller(api: k8s.ApiClient, tag: str, cluster: CachedCluster | None) -> Controller:
    s = Settings(nodes=NodeSettings(selector=f"test.joulie.io/suite={tag}"), prometheus=PrometheusSettings(url=""))
    shell = ControllerKube(
        api, JoulieClient(api, FIELD_MANAGER_CONTROLLER_MANAGER, Backoff(delays_s=(0.1, 0.2))), cluster=cluster
    )
    return Controller(s, shell, PowerReader(s), clock=FakeClock(t=0.0))


REQUEST = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\} (?P<n>[0-9.e+]+)$")


def requests(cp: ControlPlane) -> dict[tuple[str, str], float]:
    """``apiserver_request_total`` by (verb, resource), from the API server's /metrics."""
    status, text = cp.get("/metrics")
    assert status == 200, text[:200]
    out: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        m = REQUEST.match(line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m["labels"]))
            key = (labels.get("verb", ""), labels.get("resource", ""))
            out[key] = out.get(key, 0.0) + float(m["n"])
    return out


def lists_during_ticks(cp: ControlPlane, ctl: Controller) -> dict[str, float]:
    before = requests(cp)
    for _ in range(TICKS):
        ctl.tick()
    after = requests(cp)
    return {
        res: after.get(("LIST", res), 0.0) - before.get(("LIST", res), 0.0)
        for res in ("nodes", "pods", "nodetwins", "nodehardwares")
    }


def test_a_steady_tick_lists_nothing_once_the_caches_are_synced(
    kube_api: k8s.ApiClient, control_plane: ControlPlane, cluster: CachedCluster, tag: str
) -> None:
    core = k8s.CoreV1Api(kube_api)
    for i in range(3):
        make_node(core, f"count-{i}-{tag}", tag)
    listing = lists_during_ticks(control_plane, controller(kube_api, tag, None))
    eventually(lambda: len(view(cluster, tag)) == 3, timeout_s=10)
    watching = lists_during_ticks(control_plane, controller(kube_api, tag, cluster))
    print(f"\nLIST requests over {TICKS} ticks: listing every tick {listing}; from the caches {watching}")
    assert listing == {res: float(TICKS) for res in listing}
    assert watching == {res: 0.0 for res in watching}


def restart_apiserver(cp: ControlPlane) -> None:
    apiserver = next(p for p in cp.group.procs if p.name == "kube-apiserver")
    apiserver.stop()
    apiserver.start()
    apiserver.wait_until(lambda: cp.get("/readyz")[0] == 200, 60, "ready again (/readyz)")


def test_the_cache_survives_an_api_server_restart_without_missing_an_update(
    kube_api: k8s.ApiClient, control_plane: ControlPlane, cluster: CachedCluster, tag: str
) -> None:
    core = k8s.CoreV1Api(kube_api)
    make_node(core, f"keep-{tag}", tag, v="0")
    make_node(core, f"gone-{tag}", tag, v="0")
    eventually(lambda: len(view(cluster, tag)) == 2, timeout_s=10)
    nodes = cluster.caches["nodes"]
    lists = nodes.lists
    restart_apiserver(control_plane)
    # Changes while the cache's watch is still down (it retries with backoff): the resumed watch, or
    # the relist a 410 forces, must deliver every one.
    want = changes(core, tag, "b")
    eventually(lambda: view(cluster, tag) == want and nodes.synced.is_set(), timeout_s=60)
    print(f"\nafter the restart: {nodes.lists - lists} relist(s) (0: the watch resumed from its resourceVersion)")
    relabel(core, f"keep-{tag}", "c")
    eventually(lambda: view(cluster, tag)[f"keep-{tag}"] == "c", timeout_s=10)


def test_a_410_gone_lists_again_and_drops_what_was_deleted_in_the_gap(
    kube_api: k8s.ApiClient, cluster: CachedCluster, tag: str
) -> None:
    core = k8s.CoreV1Api(kube_api)
    make_node(core, f"keep-{tag}", tag, v="0")
    make_node(core, f"gone-{tag}", tag, v="0")
    fresh = cluster_caches(kube_api, 600.0, threading.Event()).caches["nodes"]  # not started: driven by hand
    fresh.relist()
    assert len(view_of(fresh, tag)) == 2
    want = changes(core, tag, "d")
    fresh.resource_version = "1"  # far older than the API server keeps: the watch answers 410 Gone
    thread = threading.Thread(target=fresh.run, daemon=True)
    thread.start()
    try:
        eventually(lambda: view_of(fresh, tag) == want and fresh.lists >= 2, timeout_s=20)
    finally:
        fresh.stop.set()


def view_of(cache: WatchCache[Any], tag: str) -> dict[str, str]:
    return view(CachedCluster({"nodes": cache}), tag)
