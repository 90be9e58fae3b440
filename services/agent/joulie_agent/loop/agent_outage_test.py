"""Issue 23, defect 2: through an API server outage the agent keeps enforcing its last intent,
relaxes every cap once SPEC_READ_TIMEOUT has passed (as the README says), logs one line per state
change and picks the intent up again when the API server is back."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.enforce.node import CPUOutcome, GPUOutcome
from joulie_agent.fixtures import testtrees
from joulie_agent.kube.agentkube import NodeSeen
from joulie_agent.loop.agent import Agent
from joulie_agent.settings import Settings
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_api.generated.nodehardware import NodeHardwareStatus
from joulie_api.generated.nodetwin import CPUCapSpec, NodeTwinSpec
from joulie_api.kube import KubeWriteError
from joulie_common.clock import FakeClock

PL1 = "sys/class/powercap/intel-rapl:{}/constraint_0_power_limit_uw"


class FlakyKube:
    """The agent's API calls against a server that can be taken down."""

    def __init__(self, spec: NodeTwinSpec) -> None:
        self.up = True
        self.spec = spec
        self.calls = 0
        self.statuses: list[tuple[CPUOutcome, GPUOutcome]] = []
        self.client: Any = self
        self.core: Any = self

    def _answer(self) -> None:
        self.calls += 1
        if not self.up:
            raise ConnectionRefusedError(111, "Connection refused")

    def read_node(self, name: str) -> NodeSeen:
        self._answer()
        return NodeSeen(name, {}, {}, {})

    def publish_hardware(self, node: str, status: NodeHardwareStatus) -> bool:
        self._answer()
        return True

    def read_spec(self, node: str) -> tuple[bool, NodeTwinSpec | None]:
        self._answer()
        return True, self.spec

    def write_control_status(self, node: str, cpu: CPUOutcome, gpu: GPUOutcome) -> bool:
        self._answer()
        self.statuses.append((cpu, gpu))
        return True

    def renew_lease(self, node: str) -> bool:
        self._answer()
        return True

    def forget_lease(self, node: str) -> None:
        pass


def _pl1(root: Path, zone: int) -> int:
    return int((root / PL1.format(zone)).read_text())


def test_through_an_api_outage_the_last_intent_is_enforced_then_relaxed_as_documented(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    testtrees.rapl_node(tmp_path, sockets=2)
    clock = FakeClock()
    kube = FlakyKube(NodeTwinSpec(node_name="n1", profile="eco", cpu=CPUCapSpec(package_power_cap_watts=120)))
    settings = Settings(node_name="n1", root=str(tmp_path), metrics_addr="", spec_read_timeout_s=300)
    agent = Agent(settings, kube, load_catalog(), clock, AgentMetrics())  # type: ignore[arg-type]
    assert agent.tick() == 0 and _pl1(tmp_path, 0) == 120_000_000

    kube.up = False
    calls_before = kube.calls
    with caplog.at_level(logging.INFO):
        for t in range(20, 360, 20):  # a six-minute outage, a tick every 20 s
            clock.advance(20)
            if t == 100:  # a cap changed out of band during the outage is put back
                testtrees.write(tmp_path / PL1.format(1), "165000000")
            assert agent.tick() == 1  # not reconciled with the cluster, counted (quietly)
            if t < 300:
                assert _pl1(tmp_path, 0) == _pl1(tmp_path, 1) == 120_000_000, t
        # past SPEC_READ_TIMEOUT every cap is relaxed to what the agent found
        assert _pl1(tmp_path, 0) == _pl1(tmp_path, 1) == 165_000_000
        outage_calls = kube.calls - calls_before
        kube.up = True
        clock.advance(21)
        assert agent.tick() == 0
    assert _pl1(tmp_path, 0) == 120_000_000
    assert outage_calls <= 17  # one try at most per tick (then backing off), not 3 calls a tick
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 5, lines
    assert lines[0].startswith("API server failing (ConnectionRefusedError:")
    assert lines[1] == "node n1: RAPL cap drift: intel-rapl:1 PL1 reads 165.0W, intent 120.0W; re-applied"
    assert "relaxing all caps" in lines[2] and "works again" in lines[3] and "readable again" in lines[4]
    assert "Traceback" not in caplog.text


class ConflictingKube(FlakyKube):
    """Every write answered 409 Conflict while ``conflicts`` lasts, reads answered (as the chaos
    API proxy's conflict storm does)."""

    def __init__(self, spec: NodeTwinSpec) -> None:
        super().__init__(spec)
        self.conflicts = 0

    def _conflict(self, what: str, node: str) -> None:
        if self.conflicts:
            self.conflicts -= 1
            raise KubeWriteError(what, "NodeTwin", node, "joulie-agent", 409,
                                 "Operation cannot be fulfilled: the object has been modified")

    def publish_hardware(self, node: str, status: NodeHardwareStatus) -> bool:
        self._conflict("apply", node)
        return super().publish_hardware(node, status)

    def write_control_status(self, node: str, cpu: CPUOutcome, gpu: GPUOutcome) -> bool:
        self._conflict("apply status of", node)
        return super().write_control_status(node, cpu, gpu)


def test_a_conflict_storm_on_the_status_write_logs_two_lines_not_an_error_per_tick(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Issue 23, api-conflict-storm: the agent logged ERROR "reconcile failed ... (HTTP 409)" every
    # tick, though the caps kept being enforced (enforcement runs before the status write).
    testtrees.rapl_node(tmp_path, sockets=2)
    clock = FakeClock()
    kube = ConflictingKube(NodeTwinSpec(node_name="n1", profile="eco", cpu=CPUCapSpec(package_power_cap_watts=120)))
    settings = Settings(node_name="n1", root=str(tmp_path), metrics_addr="")
    agent = Agent(settings, kube, load_catalog(), clock, AgentMetrics())  # type: ignore[arg-type]
    kube.conflicts = 1_000
    with caplog.at_level(logging.INFO):
        for _ in range(12):  # two minutes of ticks
            clock.advance(10)
            agent.tick()
            assert _pl1(tmp_path, 0) == _pl1(tmp_path, 1) == 120_000_000
        kube.conflicts = 0
        clock.advance(30)
        assert agent.tick() == 0
    assert kube.statuses  # written once the storm is over
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert lines[0].startswith("API server writes failing (KubeWriteError: apply NodeTwin/")
    assert "(HTTP 409)" in lines[0] and lines[1].startswith("API server writes works again after ")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_node_that_keeps_failing_the_same_way_is_logged_once(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    testtrees.rapl_node(tmp_path, sockets=2)
    clock = FakeClock()
    kube = FlakyKube(NodeTwinSpec(node_name="n1", profile="eco"))
    settings = Settings(node_name="n1", root=str(tmp_path), metrics_addr="")
    agent = Agent(settings, kube, load_catalog(), clock, AgentMetrics())  # type: ignore[arg-type]
    refused = KubeWriteError("apply status of", "NodeTwin", "n1", "joulie-agent", 422, "spec.x: invalid")

    def refuse(node: str, cpu: CPUOutcome, gpu: GPUOutcome) -> bool:
        raise refused

    kube.write_control_status = refuse  # type: ignore[method-assign]
    with caplog.at_level(logging.INFO):
        for _ in range(5):
            clock.advance(10)
            assert agent.tick() == 1
        del kube.write_control_status
        clock.advance(10)
        assert agent.tick() == 0
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert lines[0].startswith("node n1: reconcile failed") and "HTTP 422" in lines[0]
    assert lines[1] == "node n1: reconcile works again"


class RefusingWatch:
    """The NodeTwin watch's stream (``twinwatch.open_stream``): 429 ``refusals`` times, then one event."""

    refusals = 0
    streams = 0

    def __init__(self, stop: Any) -> None:
        self.stop_event = stop

    def stream(self, *_: Any, **__: Any) -> Any:
        from kubernetes.client.exceptions import ApiException

        RefusingWatch.streams += 1
        if RefusingWatch.streams <= RefusingWatch.refusals:
            err = ApiException(status=429, reason="Too Many Requests")
            err.headers = {"Retry-After": "1", "Content-Type": "application/json", "Audit-Id": "x"}
            raise err
        self.stop_event.set()
        yield b'{"type": "MODIFIED", "object": {"metadata": {"name": "n1", "generation": 1}}}'


class NoWaitEvent(threading.Event):
    """A stop event whose waits return at once (the watch's backoff, without sleeping)."""

    def wait(self, timeout: float | None = None) -> bool:
        return self.is_set()


def test_a_throttled_nodetwin_watch_logs_once_when_it_fails_and_once_when_it_streams_again(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # Issue 23, api-throttle: a multi-line warning (every response header) per retry.
    from joulie_agent.kube import twinwatch
    from joulie_agent.kube.twinwatch import TwinWatcher

    stop, wake = NoWaitEvent(), threading.Event()
    RefusingWatch.refusals, RefusingWatch.streams = 8, 0
    monkeypatch.setattr(twinwatch, "open_stream", RefusingWatch(stop).stream)
    with caplog.at_level(logging.INFO):
        TwinWatcher(k8s.ApiClient(), wake, stop)._run()
    assert wake.is_set() and RefusingWatch.streams == 9
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert lines[0].startswith("NodeTwin watch failing (ApiException: HTTP 429 Too Many Requests)")
    assert lines[1].startswith("NodeTwin watch works again") and all("\n" not in line for line in lines)


class RecordingKube(FlakyKube):
    def __init__(self, spec: NodeTwinSpec) -> None:
        super().__init__(spec)
        self.published: list[NodeHardwareStatus] = []

    def publish_hardware(self, node: str, status: NodeHardwareStatus) -> bool:
        self.published.append(status)
        return super().publish_hardware(node, status)


def test_gpus_that_did_not_answer_discovery_get_control_within_half_a_minute(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Agent Pods starting at once on a busy node: the first nvidia-smi failed, and the NodeHardware
    # kept no GPU control until the rediscovery five minutes later.
    testtrees.cpuinfo(tmp_path)
    testtrees.write(tmp_path / "dev" / "nvidiactl", "")
    gpus = testtrees.fake_nvidia_smi(tmp_path, n=4)
    testtrees.write(gpus.state / "fail", "")
    clock = FakeClock()
    kube = RecordingKube(NodeTwinSpec(node_name="n1", profile="performance"))
    settings = Settings(node_name="n1", root=str(tmp_path), metrics_addr="", tool_path=str(gpus.bin_dir))
    agent = Agent(settings, kube, load_catalog(), clock, AgentMetrics())  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger="joulie_agent.enforce.node"):
        agent.tick()
        assert kube.published[-1].capabilities is not None and not kube.published[-1].capabilities.gpu_control
        (gpus.state / "fail").unlink()
        clock.advance(20)
        agent.tick()  # not yet: the retry is every 30 s
        assert not kube.published[-1].capabilities.gpu_control
        clock.advance(20)
        agent.tick()
    hw = kube.published[-1]
    assert hw.capabilities is not None and hw.capabilities.gpu_control
    assert hw.gpu is not None and hw.gpu.count == 4
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert "GPU inventory failed at discovery" in lines[0] and "exit 9" in lines[0]
    assert lines[1] == "node n1: GPU inventory answers again; NodeHardware rediscovered with 4 GPUs"
