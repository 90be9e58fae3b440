"""Benchmark: one full reconcile of a synthetic cluster from an in-memory snapshot.

    ./pants run services/controller-manager:bench -- --nodes 1000 --pods 10000

Prints CPU ms per tick for the first tick (everything to write) and for steady ticks (nothing
changed, unless ``--jitter-pct``/``--jump-pct`` move the readings), the writes per tick in each,
and memory: the process's resident set before the snapshot is built (interpreter and imports),
after it (the cluster as the reconciler holds it: Nodes, Pods, NodeHardware, measurements) and at
its peak over all ticks, with the cost per Node and per Pod. Figures, not a test: nothing is gated on time.

On a real cluster each node's measured power moves a little every tick. ``--jitter-pct P`` makes
each steady tick's reading of every node a fresh draw within ±P % of the node's own level (P below
half of STATUS_DEADBAND_PCT keeps every move within the dead band); ``--jump-pct Q`` moves Q % of
the nodes each tick to a new level 5-20 % away (a job starting or ending: beyond the dead band, a
status write). The power trend spans up to 5 minutes, so moving readings move it for the first 30
ticks (10 s apart); ``--warmup N`` runs N untimed steady ticks first, the state a controller that
has run for a while is in.

``--list`` adds what each tick costs before the reconcile when it LISTs (WATCH_CLUSTER=false): reading every Node and Pod from the
API server. It serves KWOK-like Node and Pod JSON (managedFields, status, tolerations: ~2.4 kB a
Pod) and prints CPU ms and peak memory above the start of the read for the tick's read as it is
(pages of LIST_PAGE_SIZE, decoded by field) beside one unpaged list parsed whole with
``json.loads``, the way it was read before; then what the watch caches cost instead (their one
list, a tick's read from them, one watch event).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.watchcache import LIST_PAGE_SIZE, WatchCache, settle_heap
from joulie_common.procstatus import KIB_PER_MIB, status_kib
from joulie_controller.kube.informer import CachedCluster, HeapSettler
from joulie_controller.kube.kube import (
    list_paged,
    node_info,
    node_page,
    nodes_from_page,
    pod_info,
    pod_page,
    pods_from_page,
)
from joulie_controller.model.fsm import PodInfo, Requirement
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.readings.values import Measurement
from joulie_controller.reconcile.snapshot import Memory, Snapshot, apply_in_memory
from joulie_controller.reconcile.tick import reconcile
from joulie_controller.settings import PolicySettings, Settings

FAMILIES = [
    ("epyc-9654", 2, 360.0, "", 0, 0.0),
    ("xeon-8480", 2, 350.0, "nvidia-h100-nvl", 8, 400.0),
    ("xeon-6448y", 2, 225.0, "nvidia-l40s", 4, 350.0),
    ("epyc-9965", 2, 500.0, "", 0, 0.0),
]


def synthetic(n_nodes: int, n_pods: int, seed: int = 42) -> Snapshot:
    rnd = random.Random(seed)
    nodes, hardware = [], {}
    for i in range(n_nodes):
        cpu, sockets, cpu_w, gpu, gpus, gpu_w = FAMILIES[i % len(FAMILIES)]
        name = f"node-{i:05d}"
        nodes.append(NodeInfo(name, {"joulie.io/managed": "true", "joulie.io/rack": f"rack-{i // 40}",
                                     "joulie.io/cooling-zone": f"zone-{i // 200}"}, allocatable_gpus=gpus))
        status: dict[str, object] = {"cpu": {"model": cpu, "sockets": sockets,
                                             "capRange": {"minWattsPerSocket": 100, "maxWattsPerSocket": cpu_w}}}
        if gpus:
            status["gpu"] = {"present": True, "model": gpu, "count": gpus,
                             "capRangePerGpu": {"minWatts": 200, "maxWatts": gpu_w}}
        hardware[name] = NodeHardware.model_validate({"spec": {"nodeName": name}, "status": status})
    pods = []
    for j in range(n_pods):
        kind = rnd.random()
        terms: tuple[tuple[Requirement, ...], ...] = ()
        if kind < 0.3:
            terms = ((Requirement("joulie.io/power-profile", "NotIn", ("eco",)),),)
        pods.append(PodInfo("bench", f"pod-{j}", node_name=nodes[rnd.randrange(n_nodes)].name, required_terms=terms,
                            annotations={"joulie.io/workload-class": "standard"}))
    measurements = {n.name: Measurement(rnd.uniform(200, 2000)) for n in nodes}
    return Snapshot(datetime(2026, 3, 1, tzinfo=UTC), nodes, pods, hardware, {}, measurements)


class Readings:
    """Each steady tick's measured power: every node within ±``jitter_pct`` % of its level, and
    ``jump_pct`` % of the nodes moved to a new level 5-20 % away (seeded: runs repeat)."""

    def __init__(self, levels: dict[str, Measurement], jitter_pct: float, jump_pct: float, seed: int = 7) -> None:
        self.levels = {k: m.power_w or 0.0 for k, m in levels.items()}
        self.jitter, self.jump = jitter_pct / 100.0, jump_pct / 100.0
        self.rnd = random.Random(seed)

    def next(self) -> dict[str, Measurement]:
        rnd = self.rnd
        for name in rnd.sample(sorted(self.levels), round(len(self.levels) * self.jump)):
            self.levels[name] *= 1.0 + rnd.choice((-1.0, 1.0)) * rnd.uniform(0.05, 0.20)
        return {k: Measurement(w * (1.0 + rnd.uniform(-self.jitter, self.jitter))) for k, w in self.levels.items()}


def _status_mib(field: str) -> float:
    kib = status_kib(field)
    if kib is None:
        raise RuntimeError(f"/proc/self/status has no {field}")
    return kib / KIB_PER_MIB


def rss_mib() -> float:
    return _status_mib("VmRSS")


def peak_rss_mib() -> float:
    return _status_mib("VmHWM")


def reset_peak_rss() -> None:
    """Start VmHWM again from the current resident set (Linux: clear_refs 5)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def pod_json(j: int, n_nodes: int) -> dict[str, Any]:
    """A running Pod as the API server lists it (KWOK-like: managedFields, conditions, status)."""
    t = "2026-12-03T10:00:00Z"
    return {
        "metadata": {"name": f"job-{j}-x7k2p", "namespace": "bench", "uid": f"00000000-0000-0000-0000-{j:012d}",
                     "resourceVersion": str(100000 + j), "creationTimestamp": t,
                     "labels": {"app": "bench", "batch.kubernetes.io/job-name": f"job-{j}"},
                     "annotations": {"joulie.io/workload-class": "standard"},
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": f"job-{j}", "uid": "u",
                                          "controller": True, "blockOwnerDeletion": True}],
                     "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                                        "time": t, "fieldsType": "FieldsV1", "fieldsV1": {
                                            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                                            "f:spec": {"f:containers": {'k:{"name":"main"}': {
                                                ".": {}, "f:image": {}, "f:resources": {"f:requests": {}}}}}}}]},
        "spec": {"nodeName": f"node-{j % n_nodes:05d}", "restartPolicy": "Never", "dnsPolicy": "ClusterFirst",
                 "containers": [{"name": "main", "image": "registry.local/bench:1", "imagePullPolicy": "IfNotPresent",
                                 "resources": {"requests": {"cpu": "4", "memory": "16Gi"},
                                               "limits": {"cpu": "4", "memory": "16Gi"}},
                                 "terminationMessagePath": "/dev/termination-log"}],
                 "serviceAccountName": "default", "schedulerName": "default-scheduler", "priority": 0,
                 "tolerations": [{"key": k, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
                                 for k in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")]},
        "status": {"phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.1.2.3", "startTime": t, "qosClass": "Guaranteed",
                   "conditions": [{"type": c, "status": "True", "lastProbeTime": None, "lastTransitionTime": t}
                                  for c in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
                   "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0, "started": True,
                                          "image": "registry.local/bench:1", "imageID": "",
                                          "state": {"running": {"startedAt": t}}}]},
    }


def node_json(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    t = "2026-12-03T10:00:00Z"
    return {
        "metadata": {"name": name, "uid": f"n-{i}", "resourceVersion": str(i), "creationTimestamp": t,
                     "labels": {"kubernetes.io/hostname": name, "joulie.io/managed": "true", "type": "kwok",
                                "joulie.io/power-profile": "performance", "joulie.io/rack": f"rack-{i // 40}"},
                     "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"podCIDR": f"10.{i // 256 % 256}.{i % 256}.0/24",
                 "taints": [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "128", "memory": "1024Gi", "pods": "110"},
                   "allocatable": {"cpu": "128", "memory": "1024Gi", "pods": "110"},
                   "conditions": [{"type": c, "status": "True" if c == "Ready" else "False", "lastHeartbeatTime": t,
                                   "lastTransitionTime": t, "reason": "r", "message": "m"}
                                  for c in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure",
                                            "NetworkUnavailable")],
                   "nodeInfo": {"kubeletVersion": "fake", "osImage": "", "architecture": "amd64",
                                "containerRuntimeVersion": "", "kernelVersion": "", "machineID": ""},
                   "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}], "daemonEndpoints": {}},
    }


class _Resp:
    def __init__(self, data: bytes) -> None:
        self.data = data


class ListServer:
    """A LIST endpoint over generated objects, page by page with continue tokens (the page's JSON is
    made when asked, as the API server does, so no whole list sits in this process)."""

    def __init__(self, make: Callable[[int], dict[str, Any]], count: int) -> None:
        self.make, self.count = make, count

    def page(self, start: int, end: int, token: str | None) -> bytes:
        meta = {"resourceVersion": "1", **({"continue": token} if token else {})}
        return json.dumps({"kind": "List", "apiVersion": "v1", "metadata": meta,
                           "items": [self.make(i) for i in range(start, min(end, self.count))]}).encode()

    def __call__(self, *, limit: int | None = None, _continue: str | None = None, **_: Any) -> _Resp:
        start = int(_continue or 0)
        end = start + limit if limit else self.count
        return _Resp(self.page(start, end, str(end) if end < self.count else None))


def list_read_cost(n_nodes: int, n_pods: int) -> None:
    """CPU and peak memory of one tick's read of every Node and Pod: paged and by field, beside whole."""
    nodes, pods = ListServer(node_json, n_nodes), ListServer(lambda j: pod_json(j, n_nodes), n_pods)
    decode_s = 0.0

    def timed(decode: Callable[[bytes], tuple[list[Any], str | None]]) -> Callable[[bytes], tuple[list[Any], str | None]]:
        def run(data: bytes) -> tuple[list[Any], str | None]:
            nonlocal decode_s
            t0 = time.process_time()
            out = decode(data)
            decode_s += time.process_time() - t0
            return out
        return run

    gc.collect()
    reset_peak_rss()
    rss0 = rss_mib()
    got = len(list_paged(nodes, timed(nodes_from_page))) + len(list_paged(pods, timed(pods_from_page)))
    paged_ms, paged_peak = decode_s * 1000, peak_rss_mib() - rss0
    assert got == n_nodes + n_pods
    gc.collect()
    whole_pods, whole_nodes = pods(limit=None).data, nodes(limit=None).data  # what an unpaged LIST returns
    reset_peak_rss()
    rss0 = rss_mib()
    t0 = time.process_time()
    read = [node_info(n) for n in json.loads(whole_nodes)["items"]] + [pod_info(p) for p in json.loads(whole_pods)["items"]]
    whole_ms, whole_peak = (time.process_time() - t0) * 1000, peak_rss_mib() - rss0
    whole_mib = (len(whole_pods) + len(whole_nodes)) / 2**20
    assert len(read) == got
    print(f"list read per tick: {n_nodes} Nodes + {n_pods} Pods, {whole_mib:.0f} MiB of JSON "
          f"({len(pods(limit=1).data)} B a Pod page of one)")
    print(f"  paged ({LIST_PAGE_SIZE} a page), decoded by field: {paged_ms:8.0f} CPU ms, peak {paged_peak:6.0f} MiB "
          "above the start (pages made on demand)")
    print(f"  one list, json.loads whole:        {whole_ms:8.0f} CPU ms, peak {whole_peak:6.0f} MiB above the "
          f"{whole_mib:.0f} MiB body already held")
    print(f"  ratio paged/whole: CPU {paged_ms / whole_ms:.2f}, peak memory "
          f"{(paged_peak) / max(whole_peak + whole_mib, 1e-9):.2f} (the whole list counted with its body)")


def watch_read_cost(n_nodes: int, n_pods: int) -> None:
    """What the watch caches cost instead: their one list (at start, and each CACHE_RESYNC_INTERVAL),
    a tick's read from them, and one watch event."""
    nodes, pods = ListServer(node_json, n_nodes), ListServer(lambda j: pod_json(j, n_nodes), n_pods)
    serve_s = 0.0

    def served(server: ListServer) -> Callable[..., _Resp]:
        def call(**kw: Any) -> _Resp:
            nonlocal serve_s
            t0 = time.process_time()
            resp = server(**kw)
            serve_s += time.process_time() - t0  # the API server's work, not the controller's
            return resp
        return call

    stop = threading.Event()
    caches = CachedCluster({
        "nodes": WatchCache("Node", served(nodes), node_info, resync_s=600.0, stop=stop, decode_page=node_page),
        "pods": WatchCache("Pod", served(pods), pod_info, resync_s=600.0, stop=stop, decode_page=pod_page)})
    gc.collect()
    reset_peak_rss()
    rss0 = rss_mib()
    t0 = time.process_time()
    for c in caches.caches.values():
        c.relist()
    list_ms = (time.process_time() - t0 - serve_s) * 1000
    list_peak, held = peak_rss_mib() - rss0, rss_mib() - rss0
    t0 = time.process_time()
    caches.wait_synced(0)
    read = len(caches.values("nodes")) + len(caches.values("pods"))
    read_ms = (time.process_time() - t0) * 1000
    assert read == n_nodes + n_pods
    line = json.dumps({"type": "MODIFIED", "object": pod_json(7, n_nodes)}).encode()
    t0 = time.process_time()
    for _ in range(1000):
        caches.caches["pods"].event(json.loads(line))
    event_us = (time.process_time() - t0) * 1000
    print(f"watch caches: first list {list_ms:.0f} CPU ms (once, and each CACHE_RESYNC_INTERVAL), peak {list_peak:.0f} "
          f"MiB above the start, {held:.0f} MiB held; a tick's read {read_ms:.1f} CPU ms; one Pod event {event_us:.0f} "
          "CPU µs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--ticks", type=int, default=5, help="steady ticks to time after the first")
    parser.add_argument("--warmup", type=int, default=0, help="untimed steady ticks before the timed ones")
    parser.add_argument("--jitter-pct", type=float, default=0.0,
                        help="each steady tick, every node's reading within ±this %% of its level (default 0)")
    parser.add_argument("--jump-pct", type=float, default=0.0,
                        help="each steady tick, this %% of the nodes move to a level 5-20 %% away (default 0)")
    parser.add_argument("--policy", default="queue_aware_v1")
    parser.add_argument("--budget-w", type=float, default=1e12, help="CLUSTER_POWER_BUDGET_W for cluster_power_budget")
    parser.add_argument("--list", action="store_true", help="also measure each tick's LIST of Nodes and Pods")
    parser.add_argument("--no-settle", action="store_true",
                        help="no collector pause during and no heap settling after each steady tick (the "
                        "controller without them: WATCH_CLUSTER=false)")
    args = parser.parse_args(argv)
    s = Settings(policy=PolicySettings(type=args.policy, power_budget_w=args.budget_w))
    gc.collect()
    base_mib = rss_mib()
    snap = synthetic(args.nodes, args.pods)
    gc.collect()
    snap_mib = rss_mib()
    settle_heap()  # as the controller does once its caches have listed the cluster
    mem = Memory()

    t0 = time.process_time()
    first = reconcile(snap, s, mem)
    first_ms = (time.process_time() - t0) * 1000
    snap = apply_in_memory(snap, first, s.nodes.profile_label)

    steady_ms, steady_writes = [], []
    heap = HeapSettler()  # as the controller does after each tick with its watch caches
    moving = Readings(dict(snap.measurements), args.jitter_pct, args.jump_pct) if (
        args.jitter_pct or args.jump_pct) else None
    for i in range(args.warmup + args.ticks):
        snap = replace(snap, now=snap.now + timedelta(seconds=10))
        if moving is not None:
            snap = replace(snap, measurements=moving.next())
        t0 = time.process_time()
        if args.no_settle:
            result = reconcile(snap, s, mem)
        else:
            with heap.paused():
                result = reconcile(snap, s, mem)
            heap.after_tick()
        if i >= args.warmup:
            steady_ms.append((time.process_time() - t0) * 1000)
            steady_writes.append(result.write_count)
        snap = apply_in_memory(snap, result, s.nodes.profile_label)

    perf = sum(o.profile == "performance" and not o.draining for o in first.outcomes)
    print(f"cluster: {args.nodes} nodes, {args.pods} pods, policy {args.policy} "
          f"({perf} performance, {sum(o.draining for o in first.outcomes)} draining)")
    print(f"first tick:  {first_ms:8.1f} CPU ms, {first.write_count} writes (spec+label+status for every node)")
    settled = "no heap settling" if args.no_settle else (
        "collector paused during each and the heap settled after it, as the controller does")
    if moving is not None:
        settled += (f"; readings within ±{args.jitter_pct:g} %, {args.jump_pct:g} % of nodes jumping, "
                    f"after {args.warmup} untimed ticks")
    print(f"steady tick: {statistics.median(steady_ms):8.1f} CPU ms median ({settled}) "
          f"(min {min(steady_ms):.1f}, max {max(steady_ms):.1f}), writes per tick {steady_writes}")
    refresh_s = s.reconcile.status_refresh_s
    print(f"status refresh: each twin rewritten (lastUpdated only) once per {refresh_s * 0.75:.0f}-"
          f"{refresh_s:.0f} s, spread by node name: about {args.nodes / (refresh_s * 0.875):.1f} "
          "writes/s averaged, none at all between refreshes")
    print(f"ratio steady/first: {statistics.median(steady_ms) / first_ms:.2f}")
    gc.collect()
    held = snap_mib - base_mib
    print(f"memory: {base_mib:.0f} MiB before the snapshot (interpreter, imports); the snapshot {held:.0f} MiB "
          f"(about {held * 2**20 / (args.nodes + args.pods):.0f} B per Node or Pod); after all ticks {rss_mib():.0f} MiB; "
          f"peak {peak_rss_mib():.0f} MiB")
    if args.list:
        del snap, mem, first, result
        list_read_cost(args.nodes, args.pods)
        watch_read_cost(args.nodes, args.pods)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
