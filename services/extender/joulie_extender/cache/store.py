"""In-memory NodeTwin and NodeHardware state, and each Node's power-profile label: the store the
watches (watch.py) keep current.

The request path reads only this cache: it never calls the API server. The Node label is kept
because with `nodeCacheCapable: true` kube-scheduler sends node names only, and the eco rule
(rules/filtering.py) must hold without a twin; only the one label value is stored per Node, so memory
stays a few bytes per node. `StateCache` is the plain store (tests fill it directly); `WatchCache`
(watch.py) feeds it from the API server.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Final

from joulie_extender.bulk.columns import Gathered, NodeColumns
from joulie_extender.rules.filtering import is_eco_label
from joulie_extender.rules.powerest import HardwareInfo
from joulie_extender.rules.scoring import WORK_AWARE_POLICY, ClusterContext, TwinView, cluster_context

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
        """The same state as columns (bulk/columns.py), for requests over thousands of nodes."""
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
