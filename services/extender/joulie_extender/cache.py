"""In-memory NodeTwin and NodeHardware state, and each Node's power-profile label, kept current
by watches on the API server.

The request path reads only this cache: it never calls the API server. The Node label is kept
because with `nodeCacheCapable: true` kube-scheduler sends node names only, and the eco rule
(filtering.py) must hold without a twin; only the one label value is stored per Node, so memory
stays a few bytes per node. `StateCache` is the
plain store (tests fill it directly); `WatchCache` adds one thread per kind that lists, then
watches from the list's resourceVersion, and relists after a 410 Gone or any error, with the
backoff sequence 1, 1, 2, 3, 5, 8, 13, 21 s (capped). Until the CRDs exist it keeps retrying
and every node gets the neutral score, like a missing twin.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from kubernetes import client as k8s
from kubernetes import watch as k8s_watch
from kubernetes.client.exceptions import ApiException

from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.generated.nodetwin import NodeTwin
from joulie_api.kube import (
    NODE_HARDWARE,
    NODE_TWIN,
    ObjectDecodeError,
    Resource,
    decode,
    response_json,
    server_message,
)
from joulie_api.names import GROUP, VERSION
from joulie_extender.columns import Gathered, NodeColumns
from joulie_extender.filtering import is_eco_label
from joulie_extender.powerest import HardwareInfo
from joulie_extender.scoring import WORK_AWARE_POLICY, ClusterContext, TwinView, cluster_context
from joulie_extender.views import hardware_info, profile_label_of, twin_view

log = logging.getLogger(__name__)

BACKOFF_S: Final = (1.0, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0)
# The server ends each watch after this long; we resume from the last resourceVersion.
WATCH_TIMEOUT_S: Final = 60

KIND_TWIN: Final = "NodeTwin"
KIND_HARDWARE: Final = "NodeHardware"
KIND_NODE: Final = "Node"

Entry = tuple[str, TwinView | HardwareInfo | str]
"""(node name, view): a twin view, a hardware view, or a Node's power-profile label value."""


class StateCache:
    """Twin and hardware views keyed by the raw node name (spec.nodeName), and Node power-profile
    labels keyed by Node name; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._twins: dict[str, TwinView] = {}
        self._hardware: dict[str, HardwareInfo] = {}
        self._profiles: dict[str, str] = {}
        # object name -> node name, so a DELETED event finds the entry it removes.
        self._names: dict[str, dict[str, str]] = {KIND_TWIN: {}, KIND_HARDWARE: {}, KIND_NODE: {}}
        self._columns = NodeColumns()
        """The same state as columns (columns.py), for requests over thousands of nodes."""
        self._generation = 0
        self._ctx_key: tuple[int, int, float] | None = None
        self._ctx = ClusterContext()
        self.synced: dict[str, bool] = {KIND_TWIN: False, KIND_HARDWARE: False, KIND_NODE: False}

    # --- reads (request path) ---
    # Single-key reads take no lock: a dict lookup is atomic under the GIL and the values are immutable.

    def twin(self, node_name: str) -> TwinView | None:
        return self._twins.get(node_name)

    def hardware(self, node_name: str) -> HardwareInfo | None:
        return self._hardware.get(node_name)

    def profile_label(self, node_name: str) -> str | None:
        """The Node's `joulie.io/power-profile` label, None when absent or the Node is unknown."""
        return self._profiles.get(node_name)

    def gather(self, names: list[str]) -> Gathered:
        """The candidates' rows of the column table (copies, taken under the lock)."""
        with self._lock:
            return self._columns.gather(names)

    def twins(self) -> list[TwinView]:
        with self._lock:
            return list(self._twins.values())

    def hardware_all(self) -> dict[str, HardwareInfo]:
        with self._lock:
            return dict(self._hardware)

    def counts(self) -> dict[str, int]:
        return {KIND_TWIN: len(self._twins), KIND_HARDWARE: len(self._hardware), KIND_NODE: len(self._profiles)}

    def cluster_context(self, now: datetime, staleness: timedelta) -> ClusterContext:
        """Aggregates over all twins, memoised per state change and per second of `now`."""
        key = (self._generation, int(now.timestamp()), staleness.total_seconds())
        if key != self._ctx_key:
            self._ctx = cluster_context(self.twins(), now, staleness)
            self._ctx_key = key
        return self._ctx

    # --- writes (watch threads, tests) ---

    def put_twin(self, object_name: str, view: TwinView) -> None:
        self._put(KIND_TWIN, object_name, view.node_name, view)

    def put_hardware(self, object_name: str, node_name: str, info: HardwareInfo) -> None:
        self._put(KIND_HARDWARE, object_name, node_name, info)

    def put_profile_label(self, node_name: str, label: str | None) -> None:
        """Record a Node's power-profile label; None (label removed) forgets it."""
        if label is None:
            self.delete(KIND_NODE, node_name)
        else:
            self._put(KIND_NODE, node_name, node_name, label)

    def _put(self, kind: str, object_name: str, node_name: str, value: TwinView | HardwareInfo | str) -> None:
        with self._lock:
            old = self._names[kind].get(object_name)
            if old is not None and old != node_name:
                self._forget(kind, old)
            self._names[kind][object_name] = node_name
            self._remember(kind, node_name, value)
            self._generation += 1

    def _remember(self, kind: str, node: str, value: TwinView | HardwareInfo | str) -> None:
        self._store(kind)[node] = value
        if isinstance(value, TwinView):
            self._columns.put_twin(value, WORK_AWARE_POLICY)
        elif isinstance(value, HardwareInfo):
            self._columns.put_hardware(node, value)
        else:
            self._columns.put_label_eco(node, is_eco_label(value))

    def _forget(self, kind: str, node: str) -> None:
        self._store(kind).pop(node, None)
        if kind == KIND_TWIN:
            self._columns.remove_twin(node)
        elif kind == KIND_HARDWARE:
            self._columns.remove_hardware(node)
        else:
            self._columns.put_label_eco(node, False)

    def _store(self, kind: str) -> dict[str, Any]:
        stores: dict[str, dict[str, Any]] = {KIND_TWIN: self._twins, KIND_HARDWARE: self._hardware, KIND_NODE: self._profiles}
        return stores[kind]

    def delete(self, kind: str, object_name: str) -> None:
        with self._lock:
            node = self._names[kind].pop(object_name, None)
            if node is not None:
                self._forget(kind, node)
            self._generation += 1

    def replace(self, kind: str, entries: Mapping[str, Entry]) -> None:
        """Replace every entry of `kind` (after a list): object name -> (node name, view)."""
        with self._lock:
            for node in list(self._store(kind)):
                self._forget(kind, node)
            names = self._names[kind]
            names.clear()
            for object_name, (node_name, view) in entries.items():
                names[object_name] = node_name
                self._remember(kind, node_name, view)
            self._generation += 1
            self.synced[kind] = True


@dataclass
class CacheEvents:
    """Hooks for metrics: decode errors and watch restarts, by kind."""

    on_decode_error: Callable[[str], None] = lambda kind: None
    on_restart: Callable[[str], None] = lambda kind: None


def _object_name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name", "")) if isinstance(meta, Mapping) else ""


def _to_entry(resource: Resource[Any], obj: Mapping[str, Any]) -> Entry:
    model = decode(resource, obj)
    if isinstance(model, NodeTwin):
        return model.spec.node_name, twin_view(model)
    assert isinstance(model, NodeHardware)
    return model.spec.node_name, hardware_info(model)


@dataclass(frozen=True)
class _Source:
    """One watched kind: how to list it and how to turn an object into a cache entry.

    `decode` returns None for a Node without the label (the entry is dropped), and raises
    ObjectDecodeError for an object that does not match its CRD.
    """

    kind: str
    list_call: Callable[..., Any]
    decode: Callable[[Mapping[str, Any]], Entry | None]


class WatchCache(StateCache):
    """A StateCache fed by list+watch of NodeTwin, NodeHardware and Node (labels only)."""

    def __init__(self, api: k8s.ApiClient, events: CacheEvents | None = None) -> None:
        super().__init__()
        custom = k8s.CustomObjectsApi(api)
        core = k8s.CoreV1Api(api)
        self._events = events or CacheEvents()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._watches: list[k8s_watch.Watch] = []

        def crd(resource: Resource[Any], kind: str) -> _Source:
            def list_call(**kw: Any) -> Any:
                return custom.list_cluster_custom_object(GROUP, VERSION, resource.plural, **kw)

            return _Source(kind, list_call, lambda obj: _to_entry(resource, obj))

        def node_entry(obj: Mapping[str, Any]) -> Entry | None:
            label = profile_label_of(obj)
            return None if label is None else (_object_name(obj), label)

        # Watch.stream finds the return type from the call's docstring; deserialize=False skips it.
        self._sources = {s.kind: s for s in (
            crd(NODE_TWIN, KIND_TWIN), crd(NODE_HARDWARE, KIND_HARDWARE), _Source(KIND_NODE, core.list_node, node_entry),
        )}

    def start(self) -> None:
        for source in self._sources.values():
            t = threading.Thread(target=self._run, args=(source,), name=f"watch-{source.kind}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stop.set()
        for w in self._watches:
            w.stop()  # type: ignore[no-untyped-call]
        for t in self._threads:
            t.join(timeout_s)

    def wait_synced(self, timeout_s: float) -> bool:
        """Whether every kind was listed within `timeout_s` seconds."""
        deadline = time.monotonic() + timeout_s
        while not all(self.synced.values()) and time.monotonic() < deadline and not self._stop.wait(0.05):
            pass
        return all(self.synced.values())

    def _decode(self, source: _Source, obj: Mapping[str, Any]) -> Entry | None:
        try:
            return source.decode(obj)
        except ObjectDecodeError as err:
            # A bad object makes its node neutral (as if missing) rather than stopping the watch.
            log.warning("ignoring %s: %s", source.kind, err)
            self._events.on_decode_error(source.kind)
            return None

    def _list(self, source: _Source) -> str:
        body = response_json(source.list_call(_preload_content=False))
        entries: dict[str, Entry] = {}
        for obj in body.get("items", []):
            entry = self._decode(source, obj)
            if entry is not None:
                entries[_object_name(obj)] = entry
        self.replace(source.kind, entries)
        return str(body.get("metadata", {}).get("resourceVersion", ""))

    def _apply_event(self, kind: str, event: Mapping[str, Any]) -> str | None:
        obj = event.get("object")
        if not isinstance(obj, Mapping):
            return None
        rv = obj.get("metadata", {}).get("resourceVersion")
        etype = event.get("type")
        name = _object_name(obj)
        source = self._sources[kind]
        if etype == "DELETED":
            self.delete(kind, name)
        elif etype in ("ADDED", "MODIFIED"):
            entry = self._decode(source, obj)
            if entry is None:
                self.delete(kind, name)
            elif isinstance(entry[1], TwinView):
                self.put_twin(name, entry[1])
            elif isinstance(entry[1], HardwareInfo):
                self.put_hardware(name, entry[0], entry[1])
            else:
                self.put_profile_label(entry[0], entry[1])
        return str(rv) if rv else None

    def _run(self, source: _Source) -> None:
        kind = source.kind
        failures = 0
        rv = ""
        while not self._stop.is_set():
            try:
                if not rv:
                    rv = self._list(source)
                    failures = 0
                w = k8s_watch.Watch()  # type: ignore[no-untyped-call]
                self._watches.append(w)
                try:
                    for event in w.stream(  # type: ignore[no-untyped-call]
                        source.list_call, resource_version=rv, timeout_seconds=WATCH_TIMEOUT_S,
                        allow_watch_bookmarks=True, deserialize=False,
                    ):
                        if self._stop.is_set():
                            break
                        if event.get("type") == "ERROR":
                            raise ApiException(status=int(event.get("object", {}).get("code", 0) or 0), reason="watch error")
                        rv = self._apply_event(kind, event) or rv
                        failures = 0
                finally:
                    self._watches.remove(w)
            except Exception as err:  # the watch must outlive any API or transport error
                if isinstance(err, ApiException) and err.status == 410:
                    rv = ""  # our resourceVersion is too old: relist at once
                    continue
                failures += 1
                rv = ""
                self._events.on_restart(kind)
                delay = BACKOFF_S[min(failures, len(BACKOFF_S)) - 1]
                log.warning("watch %s failed (%s); relisting in %.0f s", kind, server_message(err), delay)
                self._stop.wait(delay)
