"""Measured power from a Prometheus that goes away and comes back (issue 23, prometheus-kill):
no data while it is down, while it answers empty and until its rate window is covered again;
never a partial window's low number, never 0 W; one log line per change."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest

from joulie_controller.settings import FacilitySettings, PrometheusSettings, Settings
from joulie_controller.telemetry.prometheus import PowerReader

SETTINGS = Settings(prometheus=PrometheusSettings(power_source="prometheus", url="http://prom:9090", rate_window="12s",
                                                  power_scope="host"))


class FakePrometheus:
    """Answers instant queries with ``watts`` for node n1 (None: an empty vector), or refuses."""

    def __init__(self) -> None:
        self.up = True
        self.started = "2026-12-03T21:00:00Z"
        self.watts: float | None = 300.0
        self.queries = 0

    def handle(self, request: httpx.Request) -> httpx.Response:
        if not self.up:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        if request.url.path == "/api/v1/status/runtimeinfo":
            return httpx.Response(200, json={"status": "success", "data": {"startTime": self.started}})
        self.queries += 1
        query = request.url.params["query"]
        result: list[dict[str, Any]] = []
        if self.watts is not None and "energy" in query:
            result = [{"metric": {"k8s_node_name": "n1"}, "value": [1.0, json.dumps(self.watts)]}]
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": result}})


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def reader(prom: FakePrometheus, clock: Clock) -> PowerReader:
    return PowerReader(SETTINGS, httpx.Client(transport=httpx.MockTransport(prom.handle)), clock)


def watts(r: PowerReader) -> float | None:
    m = r.read().measurements.get("n1")
    return None if m is None else m.power_w


def test_an_empty_answer_is_no_data_not_0_w() -> None:
    prom, clock = FakePrometheus(), Clock()
    prom.watts = None  # a fresh TSDB: the counter has fewer than two samples in the window
    reading = reader(prom, clock).read()
    assert reading.measurements == {} and reading.error is None


def test_after_a_restart_power_is_no_data_until_the_rate_window_is_covered(caplog: pytest.LogCaptureFixture) -> None:
    prom, clock = FakePrometheus(), Clock()
    r = reader(prom, clock)
    with caplog.at_level(logging.INFO, logger="joulie_controller.telemetry.prometheus"):
        assert watts(r) == 300.0
        # SIGKILL and a restart between two ticks: the new Prometheus' window is mostly a gap.
        prom.started, prom.watts = "2026-12-03T21:05:00Z", 0.0
        clock.t += 3
        assert watts(r) is None
        prom.watts = 55.0  # climbing back as the window fills
        clock.t += 6
        assert watts(r) is None
        prom.watts = 300.0
        clock.t += 6  # one whole window (12 s) since the restart was seen
        assert watts(r) == 300.0
    lines = [rec.getMessage() for rec in caplog.records]
    assert len(lines) == 2, lines
    assert lines[0].startswith("Prometheus restarted or was unreachable: every node neutral for 12 s more")
    assert lines[1] == "Prometheus rate window covered again: measured power in use"


def test_while_down_and_for_a_window_after_no_data_and_one_log_line_per_change(
        caplog: pytest.LogCaptureFixture) -> None:
    prom, clock = FakePrometheus(), Clock()
    r = reader(prom, clock)
    with caplog.at_level(logging.INFO, logger="joulie_controller.telemetry.prometheus"):
        assert watts(r) == 300.0
        prom.up = False
        for _ in range(20):  # a minute down, a tick every 3 s
            clock.t += 3
            assert watts(r) is None
        prom.up, prom.watts = True, 210.0  # back, with the outage as a gap in its window
        answered_s: float | None = None
        seen = []
        for _ in range(20):
            clock.t += 3
            if answered_s is not None and clock.t - answered_s >= 12:
                prom.watts = 300.0  # its window covered again
            before = prom.queries
            seen.append(watts(r))
            if answered_s is None and prom.queries > before:
                answered_s = clock.t  # the first answer: its window holds the outage until 12 s from now
    assert seen[-1] == 300.0 and 210.0 not in seen, seen  # the partial window's 210 W is never used
    lines = [rec.getMessage() for rec in caplog.records]
    assert len(lines) == 4, lines
    assert lines[0].startswith("Prometheus (measured power; every node neutral meanwhile) failing (PrometheusError: "
                               "query to http://prom:9090 failed: ConnectError")
    assert lines[1].startswith("Prometheus (measured power; every node neutral meanwhile) works again after ")
    assert lines[2].startswith("Prometheus restarted or was unreachable: every node neutral for ")
    assert lines[3] == "Prometheus rate window covered again: measured power in use"


def test_facility_queries_failing_are_logged_once_per_change(caplog: pytest.LogCaptureFixture) -> None:
    # Issue 23, prometheus-kill: a warning per facility query per poll while Prometheus was down.
    from joulie_controller.telemetry.prometheus import FacilityReader

    prom = FakePrometheus()
    settings = Settings(prometheus=PrometheusSettings(url="http://prom:9090"), facility=FacilitySettings(enabled=True))
    facility = FacilityReader(settings, httpx.Client(transport=httpx.MockTransport(prom.handle)))
    with caplog.at_level(logging.INFO, logger="joulie_controller.telemetry.prometheus"):
        facility.read()
        answered = [r.getMessage() for r in caplog.records]
        prom.up = False
        for _ in range(5):
            facility.read()
        prom.up = True
        facility.read()
    lines = [r.getMessage() for r in caplog.records][len(answered):]
    assert len(lines) == 2, lines
    assert lines[0].startswith("facility metrics: facility ambient: query failed: ") and "ConnectError" in lines[0]
    assert answered == [] and lines[1] == "facility metrics: every query answers again"



def test_the_host_reading_carries_its_own_component_sum_for_the_plausibility_check() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/status/runtimeinfo":
            return httpx.Response(200, json={"status": "success", "data": {"startTime": "2026-12-03T21:00:00Z"}})
        query = request.url.params["query"]
        by_node: dict[str, float] = {}
        if "hw_host_energy" in query:
            by_node = {"n1": 500.0}
        elif "hw_energy" in query:
            by_node = {"n1": 420.0, "n2": 300.0}
        result = [{"metric": {"k8s_node_name": n}, "value": [1.0, json.dumps(w)]} for n, w in by_node.items()]
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "vector", "result": result}})

    s = Settings(prometheus=PrometheusSettings(power_source="prometheus", url="http://prom:9090", rate_window="12s",
                                               power_scope="auto"))
    clock = Clock()
    r = PowerReader(s, httpx.Client(transport=httpx.MockTransport(handle)), clock)
    r.read()
    clock.t = 13.0  # past the rate window since start-up
    got = r.read().measurements
    assert (got["n1"].power_w, got["n1"].components_w) == (500.0, 420.0)
    assert (got["n2"].power_w, got["n2"].components_w) == (300.0, None)  # no host series: the components are it


class FakeGpuPrometheus:
    """Per-GPU range queries: two Pods on node n1 (4 boards, 700 W each), each signal's samples by board."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.alloc = {"gpu-0": "train", "gpu-1": "train", "gpu-2": "serve"}
        self.power = {"gpu-0": 400.0, "gpu-1": 410.0, "gpu-2": 150.0}
        self.sm_active = {"gpu-0": 0.8, "gpu-1": 0.7, "gpu-2": 0.3}

    def _matrix(self, by_board: dict[str, Any], **labels: str) -> list[dict[str, Any]]:
        return [{"metric": {"k8s_node_name": "n1", "hw_id": b, **labels, **extra},
                 "values": [[self.now - 5, json.dumps(v)]]} for b, (v, extra) in by_board.items()]

    def handle(self, request: httpx.Request) -> httpx.Response:
        query = request.url.params["query"]
        result: list[dict[str, Any]] = []
        if query.startswith("hw_gpu_allocation"):
            result = self._matrix({b: (1, {"k8s_namespace_name": "ml", "k8s_pod_name": p}) for b, p in self.alloc.items()})
        elif query.startswith("hw_power"):
            result = self._matrix({b: (w, {}) for b, w in self.power.items()})
        elif query.startswith("hw_gpu_sm_active"):
            result = self._matrix({b: (r, {}) for b, r in self.sm_active.items()})
        return httpx.Response(200, json={"status": "success", "data": {"resultType": "matrix", "result": result}})


def test_a_gpu_series_the_hardware_refutes_holds_its_pods_estimate_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from joulie_controller.readings.gpuplausibility import NodeGpus
    from joulie_controller.telemetry.prometheus import GpuSignalReader

    now = 1_000_000.0
    prom = FakeGpuPrometheus(now)
    r = GpuSignalReader(SETTINGS, httpx.Client(transport=httpx.MockTransport(prom.handle)), wall=lambda: now)
    hw = {"n1": NodeGpus(4, 700.0)}
    assert set(r.read(hw)) == {"ml/train", "ml/serve"} and r.refuted == {}
    for forge in ({"power": {"gpu-1": 50_000.0}}, {"sm_active": {"gpu-1": 7.0}}, {"alloc": {"gpu-9": "train"}}):
        prom = FakeGpuPrometheus(now)
        for attr, boards in forge.items():
            getattr(prom, attr).update(boards)
        r = GpuSignalReader(SETTINGS, httpx.Client(transport=httpx.MockTransport(prom.handle)), wall=lambda: now)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            got = r.read(hw)
            assert "ml/train" not in got, forge  # its estimate is held, not moved by the forged board
            assert [s.power_w for s in got["ml/serve"]] == [150.0]  # the honest Pod keeps its sample
            r.read(hw)
        lines = [rec.getMessage() for rec in caplog.records if "implausible" in rec.getMessage()]
        assert len(lines) == 1 and "held: ml/train" in lines[0], lines
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        prom.alloc.pop("gpu-9")
        assert set(r.read(hw)) == {"ml/train", "ml/serve"}
    assert any("plausible again" in rec.getMessage() for rec in caplog.records)
