"""The watch-fed caches against a scripted API (no API server): what the tick would read after a list,
after watch events, after a 410 Gone and after a lost watch. The real kube-apiserver runs in
``kube_watch_cluster_test.py``."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from joulie_api.watchcache import Page, WatchCache, any_page
from joulie_controller.kube.informer import CachedCluster, CacheNotSyncedError
from joulie_controller.kube.kube import node_info, pod_info, pod_page
from joulie_controller.model.hardware import NodeInfo


def node(name: str, rv: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": rv, "labels": labels}}


class _Resp:
    def __init__(self, data: bytes = b"", lines: list[bytes] | None = None) -> None:
        self.data, self.lines = data, lines or []

    def stream(self, amt: Any = None, decode_content: bool = False) -> Iterator[bytes]:
        # Events split across chunks, as HTTP delivers them.
        blob = b"".join(line + b"\n" for line in self.lines)
        for i in range(0, len(blob), 7):
            yield blob[i : i + 7]

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


class FakeApi:
    """A list method: pages of ``objects`` (two per page), then the scripted watches, one per call."""

    def __init__(self, objects: list[dict[str, Any]], rv: str = "10") -> None:
        self.objects, self.rv = objects, rv
        self.watches: list[list[dict[str, Any]] | BaseException] = []
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kw: Any) -> _Resp:
        self.calls.append(kw)
        if kw.get("watch"):
            script = self.watches.pop(0) if self.watches else []
            if isinstance(script, BaseException):
                raise script
            return _Resp(lines=[json.dumps(e).encode() for e in script])
        start = int(kw.get("_continue") or 0)
        end = start + 2
        meta: dict[str, Any] = {"resourceVersion": self.rv}
        if end < len(self.objects):
            meta["continue"] = str(end)
        return _Resp(json.dumps({"items": self.objects[start:end], "metadata": meta}).encode())

    def lists(self) -> int:
        return sum(1 for c in self.calls if not c.get("watch") and not c.get("_continue"))


def cache(api: FakeApi, resync_s: float = 600.0) -> WatchCache[NodeInfo]:
    return WatchCache("Node", api, node_info, resync_s=resync_s, stop=threading.Event())


def names(c: WatchCache[NodeInfo]) -> dict[str, str]:
    return {n.name: n.labels.get("v", "") for n in c.values()}


def test_a_paged_list_fills_the_cache_and_the_watch_resumes_from_its_resource_version() -> None:
    api = FakeApi([node(f"n{i}", str(i)) for i in range(5)], rv="42")
    c = cache(api)
    c.relist()
    assert sorted(names(c)) == ["n0", "n1", "n2", "n3", "n4"]
    assert c.synced.is_set()
    c.watch()
    watch = api.calls[-1]
    assert (watch["resource_version"], watch["allow_watch_bookmarks"]) == ("42", True)


def test_watch_events_add_update_and_delete_and_a_bookmark_moves_the_resume_point() -> None:
    api = FakeApi([node("a", "1", v="old"), node("b", "2")], rv="2")
    api.watches = [
        [
            {"type": "MODIFIED", "object": node("a", "3", v="new")},
            {"type": "ADDED", "object": node("c", "4")},
            {"type": "DELETED", "object": node("b", "5")},
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}},
        ]
    ]
    c = cache(api)
    c.relist()
    c.watch()
    assert names(c) == {"a": "new", "c": ""}
    assert c.resource_version == "9"
    assert api.lists() == 1


def test_a_410_in_the_watch_lists_again_and_drops_what_was_deleted_in_the_gap() -> None:
    api = FakeApi([node("a", "1"), node("b", "2")], rv="2")
    api.watches = [[{"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}]]
    c = cache(api)
    c.relist()
    api.objects = [node("a", "7")]  # b went away while the watch could not say so
    stop_after_watches(c, api, 2)
    c.run()
    assert names(c) == {"a": ""}
    assert api.lists() == 2


def stop_after_watches(c: WatchCache[Any], api: FakeApi, n: int = 1) -> None:
    """Makes ``run`` return after its ``n``-th watch request (the scripted API's watches end at once)."""

    def call(**kw: Any) -> _Resp:
        if kw.get("watch") and sum(1 for k in api.calls if k.get("watch")) + 1 >= n:
            c.stop.set()
        return api(**kw)

    c.call = call


def test_run_relists_after_a_410_answer_to_the_watch_request() -> None:
    api = FakeApi([node("a", "1")], rv="1")
    c = cache(api)
    c.relist()
    api.watches = [ApiException(status=410, reason="Gone")]
    stop_after_watches(c, api, 2)
    c.run()
    assert api.lists() == 2


def test_a_lost_watch_leaves_the_cache_unsynced_until_it_streams_again_without_listing() -> None:
    api = FakeApi([node("a", "1")], rv="1")
    c = cache(api)
    c.relist()
    c.health.delays_s = (0.0,)
    api.watches = [ConnectionResetError("apiserver restarted"), [{"type": "ADDED", "object": node("b", "2")}]]
    seen: list[bool] = []
    original = c._down

    def down(err: BaseException) -> None:
        original(err)
        seen.append(c.synced.is_set())

    c._down = down  # type: ignore[method-assign]
    stop_after_watches(c, api, 2)
    c.run()
    assert seen == [False]
    assert c.synced.is_set()
    assert sorted(names(c)) == ["a", "b"]
    assert api.lists() == 1


def test_the_resync_interval_lists_again() -> None:
    now = [0.0]
    api = FakeApi([node("a", "1")], rv="1")
    c = WatchCache("Node", api, node_info, resync_s=600.0, stop=threading.Event(), monotonic=lambda: now[0])
    c.relist()
    now[0] = 601.0
    stop_after_watches(c, api)
    c.run()
    assert api.lists() == 2


@pytest.mark.parametrize("decode_page", [any_page, pod_page], ids=["whole", "by-field"])
def test_pods_keep_only_what_the_tick_reads_keyed_by_namespace(decode_page: Callable[[bytes], Page]) -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns1", "resourceVersion": "1", "managedFields": [{"x": 1}]},
        "spec": {"nodeName": "n1", "containers": [{"resources": {"requests": {"cpu": "500m"}}}]},
        "status": {"phase": "Running"},
    }
    other = json.loads(json.dumps(pod))
    other["metadata"]["namespace"] = "ns2"
    c = WatchCache(
        "Pod", FakeApi([pod, other], rv="77"), pod_info, resync_s=600.0, stop=threading.Event(), decode_page=decode_page
    )
    c.relist()
    assert c.resource_version == "77"
    assert sorted((p.namespace, p.node_name, p.cpu_request) for p in c.values()) == [
        ("ns1", "n1", 0.5),
        ("ns2", "n1", 0.5),
    ]


def test_a_tick_refuses_a_cluster_whose_caches_have_not_synced_naming_them() -> None:
    listed, unlisted = cache(FakeApi([node("a", "1")])), cache(FakeApi([]))
    listed.relist()
    with pytest.raises(CacheNotSyncedError, match="pods"):
        CachedCluster({"nodes": listed, "pods": unlisted}).wait_synced(0.01)


def test_the_collector_is_off_for_the_tick_and_on_again_after_it_unless_a_list_still_runs() -> None:
    import gc

    from joulie_api.watchcache import collector_paused
    from joulie_controller.kube.informer import HeapSettler

    heap = HeapSettler()
    assert gc.isenabled()
    with heap.paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), heap.paused():
        raise RuntimeError("a tick that failed")
    assert gc.isenabled()
    with collector_paused():  # a cache listing meanwhile (its thread): the tick's end leaves it off
        with heap.paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_heap_settled_after_a_tick_keeps_what_lives_and_frees_cycles_and_thaws_hourly() -> None:
    import gc
    import weakref

    from joulie_controller.kube.informer import HeapSettler

    class Node:
        other: object = None

    clock = [0.0]
    heap = HeapSettler(thaw_every_s=3600.0, monotonic=lambda: clock[0])
    try:
        kept = Node()
        cycle_a, cycle_b = Node(), Node()
        cycle_a.other, cycle_b.other = cycle_b, cycle_a  # garbage a tick left, reachable only from itself
        dead = weakref.ref(cycle_a)
        del cycle_a, cycle_b
        heap.after_tick()
        assert dead() is None  # collected before the freeze, not frozen for good
        assert gc.get_freeze_count() > 0 and kept is not None
        heap.after_tick()
        assert heap.thawed_at == 0.0  # not thawed within the hour
        clock[0] = 3600.0  # an hour on: everything thawed, collected once in full, frozen again
        heap.after_tick()
        assert heap.thawed_at == 3600.0 and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
