"""The NodeTwin watch: wakes the agent loop when the spec of a twin it enforces changes, and fills
the cache (``twincache``) the reconcile reads the specs from."""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Callable, Generator
from typing import Any

import msgspec
from kubernetes.client.exceptions import ApiException

from joulie_agent.kube.twincache import TwinSpecCache
from joulie_api.outage import Outage
from joulie_api.watchcache import watch_lines, watch_response

log = logging.getLogger(__name__)


class _Meta(msgspec.Struct):
    name: str = ""
    resourceVersion: str = ""


class _Object(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    code: int = 0  # an ERROR event's Status
    message: str = ""


class _Head(msgspec.Struct):
    """What a watch event line says before it is decoded whole: its type, the object's name and
    resourceVersion (an ERROR's code); every other field is skipped unread."""

    type: str = ""
    object: _Object = msgspec.field(default_factory=_Object)


_HEAD = msgspec.json.Decoder(_Head)


def open_stream(custom: Any, group: str, version: str, plural: str, **kwargs: Any) -> Generator[bytes, None, None]:
    """The NodeTwin watch's event lines, raw (the client's ``watch.Watch`` decoded each event three
    times: JSON, back to JSON, JSON again). A seam for tests."""
    with watch_response(functools.partial(custom.list_cluster_custom_object, group, version, plural), **kwargs) as resp:
        yield from watch_lines(resp)


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
    write woke every agent's loop. Each event line is read first for its type, name and
    resourceVersion only, and decoded whole only when the agent owns the twin: a pool agent owns a
    fortieth of them, and the status writes of every twin reach every pool agent.
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

        from joulie_api.names import GROUP, PLURAL_NODE_TWIN, VERSION

        custom = k8s.CustomObjectsApi(self.kube_api)
        while not self.stop.is_set():
            kwargs: dict[str, Any] = {"timeout_seconds": 300, "allow_watch_bookmarks": True}
            if self.twin_name:
                kwargs["field_selector"] = f"metadata.name={self.twin_name}"
            if self.resource_version:
                kwargs["resource_version"] = self.resource_version
            stream: Generator[bytes, None, None] | None = None
            try:
                stream = open_stream(custom, GROUP, VERSION, PLURAL_NODE_TWIN, **kwargs)
                for line in stream:
                    self.health.ok()
                    self._line(line)
                    if self.stop.is_set():
                        break
                else:  # the server ended the watch (timeout_seconds): it answered
                    self.health.ok()
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
                if stream is not None:
                    stream.close()  # the connection back to the pool, whatever ended the watch

    def _line(self, line: bytes) -> None:
        """One event line: its resourceVersion kept (the resume point), decoded whole only for an owned
        twin; an ERROR event raised as the API's exception (410: the caller starts over)."""
        try:
            head = _HEAD.decode(line)
        except msgspec.ValidationError:
            head = _Head()  # a field of an unexpected type: the whole decode below decides
        except msgspec.DecodeError:
            return  # not JSON (a torn line): nothing to act on
        meta = head.object.metadata
        if head.type == "ERROR":
            raise ApiException(status=head.object.code, reason=head.object.message or "watch error")
        if meta.resourceVersion:
            self.resource_version = meta.resourceVersion
        if head.type != "BOOKMARK" and meta.name and not self.changes.owned(meta.name):
            return
        event = json.loads(line)
        if isinstance(event, dict):
            self._cache(event)
            if self.changes.wakes(event):
                self.wake.set()

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
