"""The watches that keep a StateCache current: NodeTwin, NodeHardware and Node (labels only).

`WatchCache` adds one thread per kind that lists, then watches from the list's resourceVersion, and
relists after a 410 Gone or any error, with the backoff sequence 1, 1, 2, 3, 5, 8, 13, 21 s (capped).
Until the CRDs exist it keeps retrying and every node gets the neutral score, like a missing twin.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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
from joulie_extender.cache.store import KIND_HARDWARE, KIND_NODE, KIND_TWIN, Entry, StateCache
from joulie_extender.rules.powerest import HardwareInfo
from joulie_extender.rules.scoring import TwinView
from joulie_extender.wire.views import hardware_info, profile_label_of, twin_view

log = logging.getLogger(__name__)

BACKOFF_S: Final = (1.0, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0)
# The server ends each watch after this long; we resume from the last resourceVersion.
WATCH_TIMEOUT_S: Final = 60


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
