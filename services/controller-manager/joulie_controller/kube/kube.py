"""Shell: read the cluster into a `Snapshot`, carry out a tick's writes.

The controller reads the cluster from watch-fed caches (``informer``, built by ``watch_cluster``):
a steady tick makes no LIST. Without them (``ControllerKube(cluster=None)``, WATCH_CLUSTER=false)
reads are plain LISTs each tick, in pages of LIST_PAGE_SIZE (pods are listed without the finished
ones: Running Pods are counted, Pending ones only looked at by the work-aware policy). At 100 000
Pods one unpaged list is ~230 MB of JSON held at once; paged, the peak is one page. Each page is
decoded with msgspec into only the fields `pod_info`/`node_info` read (managedFields, status
details and the rest are skipped by the C decoder): about half the CPU of `json.loads` of
everything. A page of an unexpected shape falls back to the full parse. Writes go through
`joulie_api.kube.JoulieClient` as field manager joulie-controller-manager: NodeTwin spec and status
by server-side apply, the profile label by merge patch. A bad object is logged with its name and
field and skipped, never fatal.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeVar

import msgspec
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_api.backoff import Backoff
from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.generated.nodetwin import NodeTwin
from joulie_api.kube import NODE_HARDWARE, NODE_TWIN, JoulieClient, KubeWriteError, ObjectDecodeError, decode
from joulie_api.names import (
    FIELD_MANAGER_CONTROLLER_MANAGER,
    GROUP,
    TAINT_SUSPENDED,
    TAINT_SUSPENDED_EFFECT,
    VERSION,
)
from joulie_api.quantity import QuantityError, parse_quantity
from joulie_api.watchcache import LIST_PAGE_SIZE, Page, WatchCache, any_page
from joulie_controller.kube.heartbeats import HEARTBEAT_SELECTOR, Heartbeat, heartbeat_of, latest_by_node
from joulie_controller.kube.informer import CachedCluster
from joulie_controller.kube.podreceipts import PodReceipts, unix_time
from joulie_controller.model.fsm import DEFAULT_SCHEDULER, PodInfo, Requirement, Toleration
from joulie_controller.model.hardware import NodeInfo, Taint
from joulie_controller.readings.values import Facility, Measurement
from joulie_controller.reconcile.snapshot import NodeWrite, Snapshot

log = logging.getLogger(__name__)

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915")


def _json(resp: Any) -> dict[str, Any]:
    body = json.loads(resp.data)
    return body if isinstance(body, dict) else {}


def _quantity_int(raw: object) -> int:
    """Whole units of a CPU/GPU quantity ("32", "32000m"); 0 when unreadable."""
    try:
        return int(parse_quantity(raw))
    except QuantityError:
        return 0


def _quantity(raw: object) -> float:
    """A quantity as a number ("500m" -> 0.5, "64Gi" -> bytes); 0 when absent or unreadable."""
    try:
        return float(parse_quantity(raw if raw is not None else "0"))
    except QuantityError:
        return 0.0


def node_info(obj: Mapping[str, Any]) -> NodeInfo:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    alloc = status.get("allocatable") or {}
    gpus = sum(_quantity_int(v) for k, v in alloc.items() if k in GPU_RESOURCES or k.endswith("/gpu"))
    taints = tuple(Taint(str(t.get("key", "")), str(t.get("value") or ""), str(t.get("effect") or ""))
                   for t in spec.get("taints") or [] if isinstance(t, dict))
    ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions") or [] if isinstance(c, dict))
    return NodeInfo(
        name=str(meta.get("name", "")),
        labels=dict(meta.get("labels") or {}),
        unschedulable=bool(spec.get("unschedulable", False)),
        allocatable_gpus=gpus,
        capacity_cpu=_quantity_int((status.get("capacity") or {}).get("cpu")),
        annotations=dict(meta.get("annotations") or {}),
        taints=taints,
        allocatable_cpu=_quantity(alloc.get("cpu")),
        allocatable_memory_bytes=_quantity(alloc.get("memory")),
        ready=ready,
    )


def suspended_change(node: Mapping[str, Any], suspended: bool) -> dict[str, Any]:
    """The merge patch that cordons a Node and adds the joulie.io/suspended:NoSchedule taint, or
    uncordons it and removes the taint; other taints kept as they are."""
    taints = [t for t in (node.get("spec") or {}).get("taints") or []
              if isinstance(t, dict) and t.get("key") != TAINT_SUSPENDED]
    if suspended:
        taints.append({"key": TAINT_SUSPENDED, "effect": TAINT_SUSPENDED_EFFECT})
    return {"spec": {"unschedulable": suspended or None, "taints": taints or None}}


def pod_info(obj: Mapping[str, Any]) -> PodInfo:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    terms: list[tuple[Requirement, ...]] = []
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in required.get("nodeSelectorTerms") or []:
        terms.append(tuple(
            Requirement(str(e.get("key", "")), str(e.get("operator", "")), tuple(str(v) for v in e.get("values") or ()))
            for e in (term or {}).get("matchExpressions") or []))
    cpu = 0.0
    memory = 0.0
    gpus = 0
    for c in spec.get("containers") or []:
        requests = ((c or {}).get("resources") or {}).get("requests") or {}
        limits = ((c or {}).get("resources") or {}).get("limits") or {}
        try:
            cpu += parse_quantity(requests.get("cpu", "0"))
            memory += parse_quantity(requests.get("memory", "0"))
            for key in GPU_RESOURCES:
                gpus += int(parse_quantity(requests.get(key, limits.get(key, "0"))))
        except QuantityError:
            continue  # a request the API server accepted but we cannot read counts as none
    return PodInfo(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        node_name=str(spec.get("nodeName") or ""),
        phase=str((obj.get("status") or {}).get("phase") or ""),
        deleting=meta.get("deletionTimestamp") is not None,
        annotations=dict(meta.get("annotations") or {}),
        node_selector=dict(spec.get("nodeSelector") or {}),
        required_terms=tuple(terms),
        labels=dict(meta.get("labels") or {}),
        cpu_request=cpu,
        gpu_request=gpus,
        memory_request_bytes=memory,
        tolerations=tuple(Toleration(str(t.get("key") or ""), str(t.get("operator") or "Equal"),
                                     str(t.get("value") or ""), str(t.get("effect") or ""))
                          for t in spec.get("tolerations") or [] if isinstance(t, dict)),
        daemonset=any(isinstance(o, dict) and o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []),
        scheduler_name=str(spec.get("schedulerName") or DEFAULT_SCHEDULER),
        unschedulable=_gave_up(obj.get("status") or {}),
        started_at=unix_time((obj.get("status") or {}).get("startTime")),
        uid=str(meta.get("uid") or ""),
    )


def _gave_up(status: Mapping[str, Any]) -> bool:
    """PodScheduled=False with reason Unschedulable: the scheduler tried every node and none fits."""
    return any(isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("status") == "False"
               and c.get("reason") == "Unschedulable" for c in status.get("conditions") or [])


T = TypeVar("T")



class _PodMeta(msgspec.Struct, omit_defaults=True):
    name: Any = None
    uid: Any = None
    namespace: Any = None
    deletionTimestamp: Any = None
    annotations: Any = None
    labels: Any = None
    ownerReferences: Any = None


class _PodSpec(msgspec.Struct, omit_defaults=True):
    nodeName: Any = None
    affinity: Any = None
    containers: Any = None
    nodeSelector: Any = None
    tolerations: Any = None
    schedulerName: Any = None


class _Phase(msgspec.Struct, omit_defaults=True):
    phase: Any = None
    conditions: Any = None
    startTime: Any = None


class _Pod(msgspec.Struct, omit_defaults=True):
    """A Pod as far as `pod_info` reads it (every other field is skipped while decoding)."""

    metadata: _PodMeta | None = None
    spec: _PodSpec | None = None
    status: _Phase | None = None


class _NodeMeta(msgspec.Struct, omit_defaults=True):
    name: Any = None
    labels: Any = None
    annotations: Any = None


class _NodeSpec(msgspec.Struct, omit_defaults=True):
    unschedulable: Any = None
    taints: Any = None


class _NodeStatus(msgspec.Struct, omit_defaults=True):
    allocatable: Any = None
    capacity: Any = None
    conditions: Any = None


class _Node(msgspec.Struct, omit_defaults=True):
    """A Node as far as `node_info` reads it (images, managedFields, nodeInfo... skipped)."""

    metadata: _NodeMeta | None = None
    spec: _NodeSpec | None = None
    status: _NodeStatus | None = None


class _ListMeta(msgspec.Struct):
    continue_: str | None = msgspec.field(default=None, name="continue")
    resource_version: str | None = msgspec.field(default=None, name="resourceVersion")


class _PodPage(msgspec.Struct):
    items: list[_Pod] | None = None
    metadata: _ListMeta | None = None


class _NodePage(msgspec.Struct):
    items: list[_Node] | None = None
    metadata: _ListMeta | None = None


_POD_PAGE: Final = msgspec.json.Decoder(_PodPage)
_NODE_PAGE: Final = msgspec.json.Decoder(_NodePage)


def _continue_of(doc: Mapping[str, Any]) -> str | None:
    meta = doc.get("metadata")
    token = meta.get("continue") if isinstance(meta, Mapping) else None
    return token if isinstance(token, str) and token else None


def _read_page(
    body: bytes, decoder: msgspec.json.Decoder[Any], read: Callable[[Mapping[str, Any]], T]
) -> tuple[list[T], str | None]:
    """One LIST page: each object read by `read`, and the continue token (None on the last page)."""
    try:
        page = decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        doc = json.loads(body)  # an odd shape: the full parse; `read` tolerates missing fields
        doc = doc if isinstance(doc, dict) else {}
        return [read(o) for o in doc.get("items") or [] if isinstance(o, dict)], _continue_of(doc)
    token = page.metadata.continue_ if page.metadata else None
    return [read(msgspec.to_builtins(o)) for o in page.items or ()], token or None


def _by_field(body: bytes, decoder: msgspec.json.Decoder[Any]) -> Page:
    """A LIST page for a watch cache: each object with only the fields its reader looks at."""
    try:
        page = decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return any_page(body)  # an odd shape: the full parse; the readers tolerate missing fields
    meta = page.metadata
    return ([msgspec.to_builtins(o) for o in page.items or ()], (meta.continue_ if meta else None) or None,
            (meta.resource_version if meta else None) or "")


def pod_page(body: bytes) -> Page:
    return _by_field(body, _POD_PAGE)


def node_page(body: bytes) -> Page:
    return _by_field(body, _NODE_PAGE)


def pods_from_page(body: bytes) -> tuple[list[PodInfo], str | None]:
    """One page of a Pod LIST: the pods and the continue token (None on the last page)."""
    return _read_page(body, _POD_PAGE, pod_info)


def nodes_from_page(body: bytes) -> tuple[list[NodeInfo], str | None]:
    """One page of a Node LIST: the nodes and the continue token (None on the last page)."""
    return _read_page(body, _NODE_PAGE, node_info)


class KubeListError(RuntimeError):
    """A LIST that could not be completed."""


def list_paged(call: Callable[..., Any], decode: Callable[[bytes], tuple[list[Any], str | None]],
               **kwargs: Any) -> list[Any]:
    """Every object of a LIST, page by page. A continue token that expired mid-list (410 Gone: the
    API server compacted past it) starts the list again, as client-go's pager does."""
    for _attempt in range(3):
        out: list[Any] = []
        token: str | None = None
        while True:
            try:
                resp = call(limit=LIST_PAGE_SIZE, _continue=token, _preload_content=False, **kwargs)
            except ApiException as exc:
                if exc.status == 410 and token:
                    log.info("list continue token expired (410 Gone); listing again from the start")
                    break
                raise
            objs, token = decode(resp.data)
            out.extend(objs)
            if not token:
                return out
    raise KubeListError("a LIST's continue token expired three times in a row (410 Gone)")


@dataclass
class WriteReport:
    writes: int = 0
    failures: int = 0


def hardware_of(obj: Mapping[str, Any]) -> NodeHardware | None:
    try:
        return decode(NODE_HARDWARE, obj)
    except ObjectDecodeError as err:
        log.warning("ignoring malformed NodeHardware (its node is treated as unknown hardware): %s", err)
        return None


def twin_of(obj: Mapping[str, Any]) -> NodeTwin | None:
    try:
        return decode(NODE_TWIN, obj)
    except ObjectDecodeError as err:
        log.warning("ignoring malformed NodeTwin (it will be rewritten): %s", err)
        return None


RUNNING_OR_PENDING: Final = "status.phase!=Succeeded,status.phase!=Failed"
"""Running Pods, and Pending ones (the work-aware policy releases a capped node for a pending
performance Pod that fits nowhere else); finished Pods are left out."""


def watch_cluster(api: k8s.ApiClient, resync_s: float, stop: threading.Event,
                  lease_namespace: str | None = None) -> CachedCluster:
    """The caches the tick reads, started."""
    return cluster_caches(api, resync_s, stop, lease_namespace).start()


def cluster_caches(api: k8s.ApiClient, resync_s: float, stop: threading.Event,
                   lease_namespace: str | None = None) -> CachedCluster:
    """The caches the tick reads (Nodes, unfinished Pods, NodeHardware, NodeTwins, and with
    ``lease_namespace`` the agents' heartbeat Leases there), not started."""
    core, custom = k8s.CoreV1Api(api), k8s.CustomObjectsApi(api)

    def crd(plural: str) -> Callable[..., Any]:
        return functools.partial(custom.list_cluster_custom_object, GROUP, VERSION, plural)

    caches: dict[str, WatchCache[Any]] = {
        "nodes": WatchCache("Node", core.list_node, node_info, resync_s=resync_s, stop=stop, decode_page=node_page),
        "pods": WatchCache("Pod", core.list_pod_for_all_namespaces, pod_info, resync_s=resync_s, stop=stop,
                           decode_page=pod_page, field_selector=RUNNING_OR_PENDING),
        "hardware": WatchCache("NodeHardware", crd(NODE_HARDWARE.plural), hardware_of, resync_s=resync_s, stop=stop),
        "twins": WatchCache("NodeTwin", crd(NODE_TWIN.plural), twin_of, resync_s=resync_s, stop=stop),
    }
    if lease_namespace:
        caches["leases"] = WatchCache(
            "agent Lease", functools.partial(k8s.CoordinationV1Api(api).list_namespaced_lease, lease_namespace),
            heartbeat_of, resync_s=resync_s, stop=stop, label_selector=HEARTBEAT_SELECTOR)
    return CachedCluster(caches)


class ControllerKube:
    def __init__(self, api: k8s.ApiClient, client: JoulieClient | None = None, write_concurrency: int = 8,
                 cluster: CachedCluster | None = None, sync_wait_s: float = 30.0, lease_namespace: str | None = None):
        self.cluster = cluster  # None: LIST every tick
        self.lease_namespace = lease_namespace  # the agents' heartbeat Leases (None: not read)
        self.coord = k8s.CoordinationV1Api(api)
        self.sync_wait_s = sync_wait_s
        self.core = k8s.CoreV1Api(api)
        self.custom = k8s.CustomObjectsApi(api)
        self.client = client or JoulieClient(api, FIELD_MANAGER_CONTROLLER_MANAGER)
        # Nodes written at once (WRITE_CONCURRENCY): one node's writes stay in order, nodes go in
        # parallel. One at a time, a tick of 855 writes to a busy API server took over 7 minutes
        # (about half a second a round trip), and every twin waited for it.
        self.write_concurrency = max(1, write_concurrency)
        # The receipts' Pod writes try once: the next window writes again, and a tick never waits out a
        # throttled server's retries (up to a minute a write) for a receipt.
        self.pods = PodReceipts(self.core, JoulieClient(api, FIELD_MANAGER_CONTROLLER_MANAGER, backoff=Backoff(delays_s=())))

    def _list_custom(self, plural: str) -> list[dict[str, Any]]:
        try:
            body = _json(self.custom.list_cluster_custom_object(GROUP, VERSION, plural, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:  # CRD not installed: no objects, not an error
                return []
            raise
        items = body.get("items") or []
        return [i for i in items if isinstance(i, dict)]

    def hardware(self) -> dict[str, NodeHardware]:
        hardware = (hardware_of(item) for item in self._list_custom(NODE_HARDWARE.plural))
        return {nhw.spec.node_name: nhw for nhw in hardware if nhw is not None}

    def twins(self) -> dict[str, NodeTwin]:
        twins = (twin_of(item) for item in self._list_custom(NODE_TWIN.plural))
        return {str((t.metadata or {}).get("name", "")): t for t in twins if t is not None}

    def heartbeats(self) -> dict[str, Heartbeat] | None:
        """The latest heartbeat Lease renewal of each node, by node name: from the Lease cache, else a LIST
        (empty without a namespace). None when the Leases cannot be read (the cache not synced: a 403 or
        the watch down; the LIST failing): the liveness verdicts wait, the rest of the tick does not."""
        if self.cluster is not None and "leases" in self.cluster.caches:
            return latest_by_node(self.cluster.values("leases")) if self.cluster.synced("leases") else None
        if not self.lease_namespace:
            return {}
        try:
            items = _json(self.coord.list_namespaced_lease(self.lease_namespace, label_selector=HEARTBEAT_SELECTOR,
                                                           _preload_content=False)).get("items") or []
        except (ApiException, OSError, ValueError) as err:
            log.warning("agent heartbeat Leases in %s unreadable: %s", self.lease_namespace, str(err)[:300])
            return None
        return latest_by_node(b for b in (heartbeat_of(i) for i in items if isinstance(i, dict)) if b is not None)

    def snapshot(self, now: datetime, measurements: Mapping[str, Measurement], facility: Facility) -> Snapshot:
        if self.cluster is not None:
            return self._cached_snapshot(now, measurements, facility)
        nodes: list[NodeInfo] = list_paged(self.core.list_node, nodes_from_page)
        pods: list[PodInfo] = list_paged(self.core.list_pod_for_all_namespaces, pods_from_page,
                                         field_selector=RUNNING_OR_PENDING)
        return Snapshot(now=now, nodes=nodes, pods=pods, hardware=self.hardware(), twins=self.twins(),
                        measurements=measurements, facility=facility)

    def _cached_snapshot(self, now: datetime, measurements: Mapping[str, Measurement],
                         facility: Facility) -> Snapshot:
        """The snapshot from the caches: waits until every one is synced (raises CacheNotSyncedError)."""
        assert self.cluster is not None
        # The agents' Leases only feed the liveness verdicts (``heartbeats``): never a reason to stop the tick.
        self.cluster.wait_synced(self.sync_wait_s, optional=frozenset({"leases"}))
        hardware: dict[str, NodeHardware] = {h.spec.node_name: h for h in self.cluster.values("hardware")}
        twins: dict[str, NodeTwin] = {str((t.metadata or {}).get("name", "")): t for t in self.cluster.values("twins")}
        return Snapshot(now=now, nodes=self.cluster.values("nodes"), pods=self.cluster.values("pods"),
                        hardware=hardware, twins=twins, measurements=measurements, facility=facility)

    def set_suspended(self, node: str, suspended: bool) -> None:
        """Cordon and taint joulie.io/suspended:NoSchedule, or the reverse (raises KubeWriteError)."""
        self.client.update_node(node, "cordon" if suspended else "uncordon",
                                lambda obj: suspended_change(obj, suspended))

    def write(self, writes: list[NodeWrite], profile_label: str) -> WriteReport:
        """Spec first (it creates the object), then label, then status. A failure skips the node's
        remaining writes and is reported; other nodes still get theirs. Up to ``write_concurrency``
        nodes are written at once."""
        report = WriteReport()
        if len(writes) <= 1 or self.write_concurrency == 1:
            outcomes = [self._write_node(w, profile_label) for w in writes]
        else:
            with ThreadPoolExecutor(max_workers=min(self.write_concurrency, len(writes)),
                                    thread_name_prefix="twin-write") as pool:
                outcomes = list(pool.map(lambda w: self._write_node(w, profile_label), writes))
        for done, failed in outcomes:
            report.writes += done
            report.failures += failed
        return report

    def _write_node(self, w: NodeWrite, profile_label: str) -> tuple[int, int]:
        """(writes done, 1 if one failed) for one node."""
        done = 0
        try:
            if w.spec is not None:
                self.client.apply(NODE_TWIN, w.object_name, {"spec": w.spec.model_dump(
                    mode="json", by_alias=True, exclude_none=True)})
                done += 1
            if w.label is not None:
                self.client.patch_node_labels(w.node, {profile_label: w.label})
                done += 1
            if w.status is not None:
                self.client.apply_status(NODE_TWIN, w.object_name, w.status)
                done += 1
        except (KubeWriteError, ObjectDecodeError) as err:
            log.error("node %s: write failed, will retry next tick: %s", w.node, err)
            return done, 1
        return done, 0
