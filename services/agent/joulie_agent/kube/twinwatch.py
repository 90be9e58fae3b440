"""The NodeTwin watch: wakes the agent loop when the spec of a twin it enforces changes, and fills
the cache (``twincache``) the reconcile reads the specs from."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from joulie_agent.kube.twincache import TwinSpecCache
from joulie_api.outage import Outage

log = logging.getLogger(__name__)


class TwinSpecChanges:
    """Which NodeTwin watch events are a spec change of a twin this agent enforces.

    Pure. Status writes (the controller's, every agent's heartbeat) are most of a cluster's NodeTwin
    events; the spec's ``metadata.generation`` moves only with the spec, so an event wakes the loop
    only when an owned twin's generation differs from the last one seen (or the twin went away).
    """

    def __init__(self, owned: Callable[[str], bool]) -> None:
        self.owned = owned
        self.generations: dict[str, object] = {}

    def wakes(self, event: dict[str, Any]) -> bool:
        obj = event.get("object")
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not self.owned(name):
            return False
        assert isinstance(meta, dict)
        if event.get("type") == "DELETED":
            return self.generations.pop(name, None) is not None
        gen = meta.get("generation")
        if name in self.generations and self.generations[name] == gen:
            return False
        self.generations[name] = gen
        return True


class TwinWatcher:
    """Wakes the loop when a NodeTwin's spec changes, so a new cap is enforced at once, not a tick later.

    With a ``cache``, every event of an owned twin (the whole object) goes into it, and the reconcile
    reads the spec from there; a broken watch (restarted with backoff) marks the cache down, so the
    reconcile GETs the twin until the watch streams again: it costs API calls, never correctness. One node's agent watches its own twin
    (a field selector); a pool agent watches all and keeps its own. The watch resumes from the last
    resourceVersion seen (bookmarks keep it fresh), so a restart does not list every twin again:
    at 1000 Nodes each pool agent's restart every minute re-read all 1000 twins, and every status
    write woke every agent's loop.
    """

    def __init__(self, kube_api: Any, wake: threading.Event, stop: threading.Event,
                 owned: Callable[[str], bool] = lambda _name: True, twin_name: str = "",
                 cache: TwinSpecCache | None = None):
        self.kube_api, self.wake, self.stop = kube_api, wake, stop
        self.twin_name = twin_name  # watch this NodeTwin object alone (its name: object_name_for_node)
        self.changes = TwinSpecChanges(owned)
        self.cache = cache
        self.resource_version = ""
        self.thread = threading.Thread(target=self._run, name="nodetwin-watch", daemon=True)
        # One line when the watch starts failing (429, API server down), one when it streams again;
        # it logged a multi-line warning (every response header) per retry (issue 23, api-throttle).
        self.health = Outage("NodeTwin watch", log)

    def start(self) -> TwinWatcher:
        self.thread.start()
        return self

    def _run(self) -> None:
        from kubernetes import client as k8s
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException

        from joulie_api.names import GROUP, PLURAL_NODE_TWIN, VERSION

        custom = k8s.CustomObjectsApi(self.kube_api)
        watch_api: Any = watch  # the watch helper is untyped
        while not self.stop.is_set():
            w = watch_api.Watch()
            kwargs: dict[str, Any] = {"timeout_seconds": 300, "allow_watch_bookmarks": True}
            if self.twin_name:
                kwargs["field_selector"] = f"metadata.name={self.twin_name}"
            if self.resource_version:
                kwargs["resource_version"] = self.resource_version
            try:
                for event in w.stream(custom.list_cluster_custom_object, GROUP, VERSION, PLURAL_NODE_TWIN, **kwargs):
                    self.health.ok()
                    if isinstance(event, dict):
                        self._cache(event)
                    if isinstance(event, dict) and self.changes.wakes(event):
                        self.wake.set()
                    if self.stop.is_set():
                        break
                else:  # the server ended the watch (timeout_seconds): it answered
                    self.health.ok()
                self.resource_version = str(getattr(w, "resource_version", "") or "")
            except ApiException as err:
                if err.status == 410:  # the resourceVersion is too old: start over from the current state
                    self.resource_version = ""
                    if self.cache is not None:
                        self.cache.watch_relist()
                    continue
                self._down()
                self.stop.wait(self.health.failed(err))
            except Exception as err:
                self._down()
                self.stop.wait(self.health.failed(err))
            finally:
                w.stop()

    def _cache(self, event: dict[str, Any]) -> None:
        """An owned twin's event (or a bookmark: the watch is alive) into the cache."""
        if self.cache is None:
            return
        obj = event.get("object")
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if event.get("type") == "BOOKMARK" or (isinstance(name, str) and self.changes.owned(name)):
            self.cache.watch_event(event)

    def _down(self) -> None:
        if self.cache is not None:
            self.cache.watch_down()
