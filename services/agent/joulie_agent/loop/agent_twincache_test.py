"""The NodeTwin watch as the reconcile's cache: steady ticks make no GET; a down watch falls back to GETs."""

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.fixtures import testtrees
from joulie_agent.fixtures.twins import twin_object
from joulie_agent.kube.agentkube import AgentKube
from joulie_agent.kube.twincache import TwinSpecCache
from joulie_agent.loop.agent import Agent
from joulie_agent.settings import Settings
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_api.kube import NODE_TWIN, decode
from joulie_api.names import object_name_for_node
from joulie_common.clock import FakeClock

TWIN = object_name_for_node("n1")


def twin(watts: float, generation: int) -> dict[str, Any]:
    return twin_object("n1", watts, generation)


class CountingClient:
    """JoulieClient as the agent uses it, counting the NodeTwin GETs; the API server holds `stored`."""

    def __init__(self, stored: dict[str, Any]) -> None:
        self.stored, self.gets = stored, 0
        body = json.dumps({"items": [{"metadata": {"name": "n1", "labels": {}}, "status": {"allocatable": {}}}]})
        self.core = SimpleNamespace(list_node=lambda **_: SimpleNamespace(data=body.encode()))

    def get(self, resource: Any, name: str) -> Any:
        self.gets += 1
        return decode(NODE_TWIN, self.stored) if self.stored else None

    def apply(self, *_: Any) -> None:
        pass

    def apply_status(self, *_: Any) -> None:
        pass


def agent_with_cache(
    tmp_path: Path, stored: dict[str, Any], resync_s: float = 600
) -> tuple[Agent, CountingClient, TwinSpecCache, FakeClock]:
    testtrees.rapl_node(tmp_path / "n1")
    clock, client = FakeClock(), CountingClient(stored)
    cache = TwinSpecCache(clock.monotonic, resync_s)
    kube = AgentKube(client, clock, twins=cache)  # type: ignore[arg-type]
    settings = Settings(mode="pool", root=str(tmp_path / "{node}"), twin_resync_s=resync_s)
    return Agent(settings, kube, load_catalog(), clock, AgentMetrics()), client, cache, clock


def test_steady_ticks_read_the_watch_and_make_no_get(tmp_path: Path) -> None:
    agent, client, cache, clock = agent_with_cache(tmp_path, twin(120, 1))
    cache.watch_event({"type": "ADDED", "object": twin(120, 1)})
    for _ in range(30):  # 10 minutes of 20 s ticks, with a status write (same generation) now and then
        assert agent.tick() == 0
        clock.advance(20)
        cache.watch_event({"type": "MODIFIED", "object": twin(120, 1)})
    assert client.gets == 0
    assert testtrees.pl1(tmp_path / "n1", "intel-rapl:0") == "120000000"


def test_a_spec_change_by_watch_is_enforced_on_the_next_tick(tmp_path: Path) -> None:
    agent, client, cache, clock = agent_with_cache(tmp_path, twin(120, 1))
    cache.watch_event({"type": "ADDED", "object": twin(120, 1)})
    assert agent.tick() == 0
    cache.watch_event({"type": "MODIFIED", "object": twin(150, 2)})
    clock.advance(1)
    assert agent.tick() == 0
    assert testtrees.pl1(tmp_path / "n1", "intel-rapl:0") == "150000000"
    cache.watch_event({"type": "DELETED", "object": twin(150, 2)})  # no twin: no intent, caps relaxed
    assert agent.tick() == 0
    assert testtrees.pl1(tmp_path / "n1", "intel-rapl:0") == "165000000"
    assert client.gets == 0


def test_a_down_watch_falls_back_to_get_and_recovers(tmp_path: Path) -> None:
    agent, client, cache, clock = agent_with_cache(tmp_path, twin(120, 1))
    assert agent.tick() == 0 and client.gets == 1  # nothing from the watch yet: GET
    cache.watch_event({"type": "ADDED", "object": twin(120, 1)})
    assert agent.tick() == 0 and client.gets == 1
    cache.watch_down()  # e.g. the API server restarted
    client.stored = twin(140, 2)  # changed while the watch was down
    for _ in range(3):
        clock.advance(20)
        assert agent.tick() == 0
    assert client.gets == 4
    assert testtrees.pl1(tmp_path / "n1", "intel-rapl:0") == "140000000"
    cache.watch_event({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "200"}}})  # streams again
    for _ in range(3):
        clock.advance(20)
        assert agent.tick() == 0
    assert client.gets == 4


def test_an_entry_older_than_the_resync_is_read_again(tmp_path: Path) -> None:
    agent, client, cache, clock = agent_with_cache(tmp_path, twin(120, 1), resync_s=60)
    cache.watch_event({"type": "ADDED", "object": twin(120, 1)})
    for _ in range(9):  # 3 minutes without an event: one GET a minute
        assert agent.tick() == 0
        clock.advance(20)
    assert client.gets == 2


def test_a_spec_out_of_bounds_by_watch_is_refused_and_the_last_cap_held(tmp_path: Path) -> None:
    agent, client, cache, clock = agent_with_cache(tmp_path, twin(120, 1))
    cache.watch_event({"type": "ADDED", "object": twin(120, 1)})
    assert agent.tick() == 0
    cache.watch_event({"type": "MODIFIED", "object": twin(1e30, 2)})
    assert agent.tick() == 1 and agent.tick() == 1  # refused, twice from the one cached error
    assert testtrees.pl1(tmp_path / "n1", "intel-rapl:0") == "120000000"
    assert client.gets == 0
