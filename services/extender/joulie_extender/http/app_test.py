"""The HTTP contract as kube-scheduler sees it, through the ASGI app (no network)."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from joulie_common.clock import FakeClock
from joulie_extender.cache.store import StateCache
from joulie_extender.http.app import create_app
from joulie_extender.rules.powerest import HardwareInfo
from joulie_extender.rules.scoring import TwinView
from joulie_extender.settings import Settings

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}, "status": {"allocatable": {"cpu": "32"}}}


def pod(cls: str | None = None, cpu: str = "1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "default"}
    if cls:
        meta["annotations"] = {"joulie.io/workload-class": cls}
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}


@pytest.fixture
def cache() -> StateCache:
    c = StateCache()
    fresh = NOW - timedelta(seconds=10)
    c.put_twin("eco-1", TwinView("eco-1", "eco", 90.0, 10.0, last_updated=fresh))
    c.put_twin("perf-1", TwinView("perf-1", "performance", 90.0, 10.0, last_updated=fresh))
    c.put_twin("perf-busy", TwinView("perf-busy", "performance", 5.0, 90.0, last_updated=fresh))
    c.put_twin("drain-1", TwinView("drain-1", "performance", 90.0, 10.0, last_updated=fresh, draining=True))
    c.put_twin("eco-stale", TwinView("eco-stale", "eco", 90.0, 10.0, last_updated=NOW - timedelta(minutes=6)))
    c.put_hardware("perf-1", "perf-1", HardwareInfo(cpu_max_watts_total=500, cpu_total_cores=32))
    return c


@pytest.fixture
def client(cache: StateCache) -> TestClient:
    return TestClient(create_app(cache, Settings(max_body_bytes=64 * 1024), clock=FakeClock(t=0.0, start=NOW)))


ALL = ["eco-1", "perf-1", "perf-busy", "drain-1", "eco-stale", "no-twin"]


def test_filter_with_node_names_rejects_eco_and_draining_for_performance_pods(client: TestClient) -> None:
    r = client.post("/filter", json={"Pod": pod("performance"), "Nodes": None, "NodeNames": ALL})
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
    assert body["NodeNames"] == ["perf-1", "perf-busy", "eco-stale", "no-twin"]
    assert set(body["FailedNodes"]) == {"eco-1", "drain-1"}
    assert "eco" in body["FailedNodes"]["eco-1"] and "draining" in body["FailedNodes"]["drain-1"]
    assert body["Nodes"] is None and body["Error"] == ""


def test_filter_with_full_nodes_echoes_the_passing_node_objects(client: TestClient) -> None:
    nodes = [node(n) for n in ALL]
    r = client.post("/filter", json={"Pod": pod("performance"), "Nodes": {"items": nodes}})
    body = r.json()
    assert body["NodeNames"] is None
    assert body["Nodes"]["items"] == [n for n in nodes if n["metadata"]["name"] not in ("eco-1", "drain-1")]


def test_standard_pods_pass_every_node(client: TestClient) -> None:
    r = client.post("/filter", json={"Pod": pod(), "NodeNames": ALL})
    assert r.json()["NodeNames"] == ALL and r.json()["FailedNodes"] == {}


def test_legacy_lowercase_keys_are_accepted(client: TestClient) -> None:
    r = client.post("/filter", json={"pod": pod("performance"), "nodenames": ["eco-1", "perf-1"]})
    assert r.json()["NodeNames"] == ["perf-1"]
    r = client.post("/prioritize", json={"pod": pod(), "nodes": {"items": [node("perf-1")]}})
    assert [h["Host"] for h in r.json()] == ["perf-1"]


def test_prioritize_scores_0_to_10_with_neutral_for_missing_and_stale(client: TestClient) -> None:
    r = client.post("/prioritize", json={"Pod": pod("performance"), "NodeNames": ALL})
    assert r.status_code == 200
    scores = {h["Host"]: h["Score"] for h in r.json()}
    assert set(r.json()[0]) == {"Host", "Score"}
    assert set(scores) == set(ALL)
    assert all(isinstance(s, int) and 0 <= s <= 10 for s in scores.values())
    assert scores["no-twin"] == 5 and scores["eco-stale"] == 5
    assert scores["perf-1"] > scores["perf-busy"]


def test_a_pod_with_unreadable_resources_gets_neutral_scores_and_is_counted(client: TestClient) -> None:
    r = client.post("/prioritize", json={"Pod": pod(cpu="lots"), "NodeNames": ["perf-1", "eco-1"]})
    assert r.status_code == 200
    assert {h["Score"] for h in r.json()} == {5}
    assert 'joulie_scheduler_internal_errors_total{endpoint="prioritize"} 1.0' in client.get("/metrics").text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"", "empty body"),
        (b"{", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[]", "expected a JSON object"),
        (b'{"Nodes": null}', "Pod: expected a v1.Pod object, got null"),
        (b'{"Pod": "x"}', "Pod: expected a v1.Pod object, got string"),
        (b'{"Pod": {}, "Nodes": []}', "Nodes: expected a v1.NodeList object"),
        (b'{"Pod": {}, "Nodes": {"items": [{"metadata": {}}]}}', "Nodes.items[0].metadata.name"),
        (b'{"Pod": {}, "NodeNames": [1]}', "NodeNames[0]"),
        pytest.param(b"[" * 20000 + b"]" * 20000, "not valid JSON", id="deeply-nested"),
        # Python's own limit would answer with a sys.set_int_max_str_digits() hint (fault probe, issue 23).
        pytest.param(b'{"Pod": {"x": ' + b"9" * 5000 + b"}}", "an integer of 5000 digits (at most 64)", id="huge-integer"),
    ],
)
@pytest.mark.parametrize("endpoint", ["/filter", "/prioritize"])
def test_bad_bodies_get_400_naming_the_problem(client: TestClient, endpoint: str, body: bytes, message: str) -> None:
    r = client.post(endpoint, content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert message in r.json()["error"]
    assert "sys." not in r.json()["error"]  # never an interpreter hint


def test_oversized_body_is_refused_with_413(client: TestClient) -> None:
    big = b'{"Pod": {}, "NodeNames": ["' + b"n" * 70000 + b'"]}'
    r = client.post("/filter", content=big)
    assert r.status_code == 413
    assert "exceeds the limit of 65536 bytes" in r.json()["error"]

    def chunks() -> Any:  # no Content-Length: the limit holds while streaming
        yield big[:40000]
        yield big[40000:]

    r = client.post("/prioritize", content=chunks())
    assert r.status_code == 413 and "exceeds the limit" in r.json()["error"]
    text = client.get("/metrics").text
    assert 'joulie_scheduler_refused_requests_total{endpoint="filter",reason="body-too-large"} 1.0' in text


def test_debug_endpoints_are_off_unless_asked(cache: StateCache, client: TestClient) -> None:
    for path in ("/debug/scoring", "/docs", "/openapi.json", "/redoc"):
        assert client.get(path).status_code == 404, path
    assert client.get("/healthz").text == "ok"
    on = TestClient(create_app(cache, Settings(debug_endpoints=True), clock=FakeClock(t=0.0, start=NOW)))
    assert on.get("/openapi.json").status_code == 200 and on.get("/docs").status_code == 200


def test_health_debug_and_metrics(cache: StateCache) -> None:
    client = TestClient(create_app(cache, Settings(debug_endpoints=True), clock=FakeClock(t=0.0, start=NOW)))
    assert client.get("/healthz").text == "ok"
    client.post("/prioritize", json={"Pod": pod("performance"), "NodeNames": ["perf-1"]})
    dbg = client.get("/debug/scoring").json()
    assert dbg["scoreRange"] == [0, 10] and dbg["neutralScore"] == 5
    by_node = {n["nodeName"]: n for n in dbg["nodes"]}
    assert by_node["eco-stale"]["stale"] is True and by_node["perf-1"]["stale"] is False
    assert by_node["perf-1"]["cpuMaxWattsTotal"] == 500
    assert by_node["drain-1"]["schedulableClass"] == "draining"
    text = client.get("/metrics").text
    assert 'joulie_scheduler_prioritize_requests_total{workload_class="performance"} 1.0' in text
    assert 'joulie_scheduler_final_node_score{node="perf-1",workload_class="performance"}' in text
    assert 'joulie_scheduler_stale_twin_data{node="eco-stale"} 1.0' in text


def test_unknown_workload_class_is_one_metric_label(client: TestClient) -> None:
    client.post("/filter", json={"Pod": pod("turbo-x"), "NodeNames": ["eco-1"]})
    assert 'joulie_scheduler_filter_requests_total{workload_class="other"} 1.0' in client.get("/metrics").text


def test_eco_label_without_a_twin_rejects_performance_pods_in_both_wire_modes(cache: StateCache, client: TestClient) -> None:
    # nodeCacheCapable: true sends names only, so the label comes from the cache's Node watch.
    cache.put_profile_label("no-twin", "eco")
    cache.put_profile_label("eco-stale", "eco")
    r = client.post("/filter", json={"Pod": pod("performance"), "NodeNames": ALL})
    assert set(r.json()["FailedNodes"]) == {"eco-1", "drain-1", "no-twin", "eco-stale"}
    assert "joulie.io/power-profile=eco" in r.json()["FailedNodes"]["no-twin"]
    # Full Node objects: their own labels decide, not the cache's copy.
    nodes = [node(n) for n in ALL]
    nodes[-1]["metadata"]["labels"]["joulie.io/power-profile"] = "eco"
    r = client.post("/filter", json={"Pod": pod("performance"), "Nodes": {"items": nodes}})
    assert set(r.json()["FailedNodes"]) == {"eco-1", "drain-1", "no-twin"}
    # Standard pods still pass.
    assert client.post("/filter", json={"Pod": pod(), "NodeNames": ALL}).json()["FailedNodes"] == {}
