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
    from kubernetes import client as k8s
    from kubernetes import watch
    from kubernetes.client.exceptions import ApiException

    from joulie_agent.kube.twinwatch import TwinWatcher

    cache = TwinSpecCache(FakeClock().monotonic, 600)
    seen: list[tuple[bool, set[str]]] = []

    def snapshot() -> list[dict[str, Any]]:
        seen.append((cache.up, set(cache.entries)))
        return []

    other = {**twin(90, 1), "metadata": {"name": "not-mine", "generation": 1}}
    steps: list[Any] = [
        [{"type": "ADDED", "object": twin(120, 1)}, {"type": "ADDED", "object": other}],
        snapshot,
        ConnectionResetError("the API server went away"),
        snapshot,
        ApiException(status=410, reason="Gone"),
        snapshot,
        [{"type": "ADDED", "object": twin(130, 2)}],
        snapshot,
    ]
    stop, wake = NoWaitEvent(), threading.Event()

    class Scripted:
        resource_version = ""

        def stream(self, *_: Any, **__: Any) -> Any:
            step = steps.pop(0)
            if not steps:
                stop.set()
            if isinstance(step, Exception):
                raise step
            yield from (step() if callable(step) else step)

        def stop(self) -> None:
            pass

    monkeypatch.setattr(watch, "Watch", Scripted)
    TwinWatcher(k8s.ApiClient(), wake, stop, owned=lambda name: name != "not-mine", cache=cache)._run()
    assert seen == [(True, {TWIN}), (False, {TWIN}), (False, set()), (True, {TWIN})]
    got = cache.lookup(TWIN)
    assert not isinstance(got, Exception) and got is not None and got.spec.cpu is not None
    assert got.spec.cpu.package_power_cap_watts == 130 and wake.is_set()
