"""Shell: the cluster as the tick reads it, kept by watching (informer-style caches,
``joulie_api.watchcache``, one a resource).

At 10 000 Nodes / 100 000 Pods a LIST of every Node and Pod on every tick cost the controller 3.7
CPU s and 173 MiB, and the API server as much again, forever (issue 39). A ``WatchCache`` lists its
resource once (in pages of LIST_PAGE_SIZE), then watches from the list's resourceVersion with
bookmarks, so a watch that ends (the server's timeoutSeconds, a lost connection, an API server
restart) resumes where it left off without listing again. Only a 410 Gone (etcd compacted past the
resourceVersion) lists again, and so does the resync interval (CACHE_RESYNC_INTERVAL), a safety net
against a watch that silently stopped delivering. A relist replaces the whole view at once, so a
deletion missed in a gap cannot linger.

Each object is kept as the tick reads it (``read``: a ``NodeInfo``, a ``PodInfo``, a decoded
NodeTwin or NodeHardware), not as JSON. ``synced`` is set once the first list is in and cleared
while the watch is down (failing, not yet streaming again): ``CachedCluster.wait_synced`` makes the
tick wait for every cache, and a tick that cannot get a synced view fails (and is retried with
backoff) rather than plan on a partial or stale one.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from joulie_api.watchcache import WatchCache, collector_paused, settle_heap


class HeapSettler:
    """``settle_heap`` after every tick, and once every ``thaw_every_s`` a thaw first (``gc.unfreeze``).

    What a tick leaves (new watch objects, the Memory it kept) is otherwise collected only by the
    full collections its allocations trigger, each a walk over every object not frozen: at 5000 Nodes
    / 50 000 Pods one landed every other steady tick and cost ~0.2 CPU s (a quarter of the tick). A
    collection right after the tick walks only what came since the last one (~10 ms there), then
    freezes it. A frozen object that later becomes part of a reference cycle is not collected until
    the next thaw: the hourly thaw and full collection bound that."""

    def __init__(self, thaw_every_s: float = 3600.0, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.thaw_every_s, self.monotonic = thaw_every_s, monotonic
        self.thawed_at = monotonic()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The collector off for the tick's reconcile; ``after_tick`` collects once what it left.

        Each collection the reconcile's allocations triggered walked again what the tick had built and
        kept so far (its memo entries, the writes, the outcomes): at 10 000 Nodes with readings moving,
        ~110 young, ~11 middle and one full collection a tick cost 0.15-0.2 CPU s, a fifth of it, where
        the one collection after it costs ~0.05 s more. The tick's garbage is freed by reference
        counting as before; only cycles wait for the collection after it (``collector_paused``: shared
        with the caches' lists, so one ending does not turn the collector on under the other)."""
        with collector_paused():
            yield

    def after_tick(self) -> None:
        now = self.monotonic()
        if now - self.thawed_at >= self.thaw_every_s:
            gc.unfreeze()
            self.thawed_at = now
        settle_heap()


class CacheNotSyncedError(TimeoutError):
    """A tick asked for the cluster before every cache had a complete, current view (a TimeoutError:
    an outage, retried with backoff and logged without a traceback)."""


class CachedCluster:
    """The controller's four caches; ``wait_synced`` before reading them."""

    def __init__(self, caches: Mapping[str, WatchCache[Any]]) -> None:
        self.caches = dict(caches)

    def start(self) -> CachedCluster:
        for c in self.caches.values():
            c.start()
        return self

    def wait_synced(self, timeout_s: float, optional: frozenset[str] = frozenset()) -> None:
        """Returns once every cache but the ``optional`` ones is synced; raises CacheNotSyncedError naming
        those that are not (an optional cache is read only when it is synced: ``synced``)."""
        deadline = time.monotonic() + timeout_s
        required = {name: c for name, c in self.caches.items() if name not in optional}
        for c in required.values():
            c.synced.wait(max(0.0, deadline - time.monotonic()))
        missing = [name for name, c in required.items() if not c.synced.is_set()]
        if missing:
            raise CacheNotSyncedError(
                f"no complete view of {', '.join(missing)} after {timeout_s:g} s (listing, or the watch is down); "
                f"the tick waits rather than plan on part of the cluster"
            )

    def close(self) -> None:
        """Stops every cache's thread (after its current watch event or the watch's end)."""
        for c in self.caches.values():
            c.stop.set()

    def values(self, name: str) -> list[Any]:
        return self.caches[name].values()

    def synced(self, name: str) -> bool:
        return self.caches[name].synced.is_set()
