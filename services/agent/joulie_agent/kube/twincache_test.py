"""The NodeTwin watch's cache (twincache) and the watcher filling it; the agent reading it: loop/agent_twincache_test."""

import threading
from typing import Any

import pytest

from joulie_agent.fixtures.twins import twin_object
from joulie_agent.kube.twincache import TwinSpecCache
from joulie_api.kube import NODE_TWIN, decode
from joulie_api.names import object_name_for_node
from joulie_common.clock import FakeClock

TWIN = object_name_for_node("n1")


def twin(watts: float, generation: int) -> dict[str, Any]:
    return twin_object("n1", watts, generation)


def test_a_get_answer_does_not_replace_a_newer_watch_event() -> None:
    cache = TwinSpecCache(FakeClock().monotonic, 600)
    cache.watch_event({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "1"}}})
    ticket = cache.ticket(TWIN)
    cache.watch_event({"type": "MODIFIED", "object": twin(150, 2)})  # arrives while the GET is in flight
    cache.store_read(TWIN, decode(NODE_TWIN, twin(120, 1)), ticket)
    got = cache.lookup(TWIN)
    assert got is not None and not isinstance(got, Exception) and got.spec.cpu is not None
    assert got.spec.cpu.package_power_cap_watts == 150


class NoWaitEvent(threading.Event):
    """A stop event whose waits return at once (the watch's backoff, without sleeping)."""

    def wait(self, timeout: float | None = None) -> bool:
        return self.is_set()


def test_the_watcher_fills_the_cache_marks_it_down_on_failure_and_forgets_it_on_410(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    from kubernetes import client as k8s
    from kubernetes.client.exceptions import ApiException

    from joulie_agent.kube import twinwatch
    from joulie_agent.kube.twinwatch import TwinWatcher

    cache = TwinSpecCache(FakeClock().monotonic, 600)
    seen: list[tuple[bool, set[str]]] = []

    def snapshot() -> list[dict[str, Any]]:
        seen.append((cache.up, set(cache.entries)))
        return []

    other = {**twin(90, 1), "metadata": {"name": "not-mine", "generation": 1}}
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}}
    steps: list[Any] = [
        [{"type": "ADDED", "object": twin(120, 1)}, {"type": "ADDED", "object": other}],
        snapshot,
        ConnectionResetError("the API server went away"),
        snapshot,
        ApiException(status=410, reason="Gone"),
        snapshot,
        [{"type": "ADDED", "object": twin(125, 2)}, gone],  # a 410 as the watch says it: an ERROR event
        snapshot,
        [{"type": "ADDED", "object": twin(130, 3)}],
        snapshot,
    ]
    stop, wake = NoWaitEvent(), threading.Event()
    closed: list[bool] = []

    def scripted(*_: Any, **__: Any) -> Any:
        step = steps.pop(0)
        if not steps:
            stop.set()
        if isinstance(step, Exception):
            raise step
        try:
            yield from (json.dumps(e).encode() for e in (step() if callable(step) else step))
        finally:
            closed.append(True)

    monkeypatch.setattr(twinwatch, "open_stream", scripted)
    TwinWatcher(k8s.ApiClient(), wake, stop, owned=lambda name: name != "not-mine", cache=cache)._run()
    assert seen == [(True, {TWIN}), (False, {TWIN}), (False, set()), (False, set()), (True, {TWIN})]
    got = cache.lookup(TWIN)
    assert not isinstance(got, Exception) and got is not None and got.spec.cpu is not None
    assert got.spec.cpu.package_power_cap_watts == 130 and wake.is_set()
    assert len(closed) == 8  # every stream that opened given back (eight of ten; two failed to open)


def test_a_pool_agent_decodes_only_its_own_twins_and_resumes_after_the_last_event_of_any(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    from kubernetes import client as k8s

    from joulie_agent.kube import twinwatch
    from joulie_agent.kube.twinwatch import TwinWatcher

    cache = TwinSpecCache(FakeClock().monotonic, 600)
    stop, wake = NoWaitEvent(), threading.Event()
    mine = {**twin(140, 4), "metadata": {**twin(140, 4)["metadata"], "resourceVersion": "17"}}
    others = [{"type": "MODIFIED", "object": {**twin(90, 1), "metadata": {"name": f"other-{i}", "resourceVersion": str(18 + i),
                                                                            "labels": {"name": TWIN}}}} for i in range(40)]
    lines = [json.dumps({"type": "MODIFIED", "object": mine}).encode(), *(json.dumps(e).encode() for e in others)]

    def stream(*_: Any, **__: Any) -> Any:
        yield from lines
        stop.set()  # the server ends the watch; the agent stops

    decoded: list[bytes] = []
    real_loads = json.loads

    def loads(s: bytes, **kw: Any) -> Any:
        decoded.append(s)
        return real_loads(s, **kw)

    monkeypatch.setattr(twinwatch, "open_stream", stream)
    monkeypatch.setattr(json, "loads", loads)  # the module twinwatch decodes whole events with
    watcher = TwinWatcher(k8s.ApiClient(), wake, stop, owned=lambda name: name == TWIN, cache=cache)
    watcher._run()
    assert decoded == lines[:1]  # a label that reads like the name does not fool it
    assert watcher.resource_version == "57"  # resumes after the last event seen, owned or not
    got = cache.lookup(TWIN)
    assert got is not None and not isinstance(got, Exception) and got.spec.cpu is not None
    assert got.spec.cpu.package_power_cap_watts == 140 and wake.is_set()
