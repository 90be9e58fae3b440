"""The NodeTwin specs the watch delivered: what the reconcile reads instead of a GET every tick.

At 1000 Nodes each agent GETting its twin every 20 s was 20-42 GETs a second at the API server,
although the agent already watched its twins (``twinwatch``). The watch's events carry the whole
object, so they fill this cache; ``AgentKube.read_spec`` reads it and GETs only when it has no
entry for the twin, when the watch is down (failed and not yet streaming again), or when the entry
is older than ``resync_s`` (a safety net against a watch that silently stopped delivering).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from joulie_api.generated.nodetwin import NodeTwin
from joulie_api.kube import NODE_TWIN, ObjectDecodeError, decode

Twin = NodeTwin | ObjectDecodeError | None
"""A twin as read: the object, why its spec is refused (out of the schema's bounds), or None (none exists)."""


@dataclass
class _Entry:
    twin: Twin
    generation: object
    stored_at: float


class TwinSpecCache:
    """Per twin name, the last object the watch (or a fallback GET) delivered, and when.

    Written by the watch thread, read by the agent loop (a lock keeps a GET's answer from replacing
    a newer watch event: `ticket` before the GET, `store_read` after, which keeps the event).
    """

    def __init__(self, monotonic: Callable[[], float], resync_s: float) -> None:
        self.monotonic, self.resync_s = monotonic, resync_s
        self.entries: dict[str, _Entry] = {}
        self.events: dict[str, int] = {}  # watch events seen per name (a GET's answer yields to a newer one)
        self.up = False  # the watch streams: its events are the truth
        self.lock = threading.Lock()

    # The watch side.

    def watch_event(self, event: Mapping[str, Any]) -> None:
        """One watch event of a twin this agent enforces (any event says the watch streams)."""
        kind, obj = event.get("type"), event.get("object")
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        with self.lock:
            self.up = True
            if kind not in ("ADDED", "MODIFIED", "DELETED") or not isinstance(name, str):
                return  # a BOOKMARK: only says the watch is alive
            assert isinstance(obj, dict) and isinstance(meta, dict)
            self.events[name] = self.events.get(name, 0) + 1
            now, gen = self.monotonic(), meta.get("generation")
            old = self.entries.get(name)
            if kind == "DELETED":
                self.entries[name] = _Entry(None, None, now)
            elif old is not None and old.twin is not None and old.generation == gen and gen is not None:
                old.stored_at = now  # a status write: the spec (its generation) did not move
            else:
                self.entries[name] = _Entry(_decoded(obj), gen, now)

    def watch_down(self) -> None:
        """The watch failed: until it streams again, every read GETs."""
        with self.lock:
            self.up = False

    def watch_relist(self) -> None:
        """The watch starts over (410 Gone): a deletion in the gap would never arrive, so forget all."""
        with self.lock:
            self.up = False
            self.entries.clear()

    # The reconcile side.

    def lookup(self, name: str) -> Twin | ObjectDecodeError:
        """The cached twin; raises KeyError when the reconcile must GET it (no fresh entry, watch down)."""
        with self.lock:
            entry = self.entries.get(name)
            if not self.up or entry is None or self.monotonic() - entry.stored_at >= self.resync_s:
                raise KeyError(name)
            return entry.twin

    def ticket(self, name: str) -> int:
        with self.lock:
            return self.events.get(name, 0)

    def store_read(self, name: str, twin: Twin, ticket: int) -> None:
        """A GET's answer, kept unless a watch event for the twin arrived since its `ticket`."""
        with self.lock:
            if self.events.get(name, 0) == ticket:
                gen = twin.metadata.get("generation") if isinstance(twin, NodeTwin) and twin.metadata else None
                self.entries[name] = _Entry(twin, gen, self.monotonic())


def _decoded(obj: Mapping[str, Any]) -> NodeTwin | ObjectDecodeError:
    try:
        return decode(NODE_TWIN, obj)
    except ObjectDecodeError as err:
        return err
