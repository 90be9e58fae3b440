"""GPU tool starts per NVIDIA and AMD Node per minute in steady state (issue 39: 1000 Nodes, agents ≤ 0.3 core).

Without NVML (a pool agent, an emulated node, a daemonset without the library) each GPU tool call is
a process start; on the emulated nodes a Python program (15 ms of CPU for nvidia-smi or dcgmi, 24 ms for
amd-smi: services/fakesmi README "Start-up cost"). The agent's own code paths
run here on fake time with a counting stand-in (``fixtures.toolcount``): the reconcile every
RECONCILE_INTERVAL (20 s), the power export every POWER_EXPORT_INTERVAL (10 s), a cap (and a clock
lock) already applied. A count that goes back up fails here.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, cast

import pytest

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.fixtures import testtrees
from joulie_agent.fixtures.toolcount import CountingTools
from joulie_agent.kube.agentkube import AgentKube, NodeSeen
from joulie_agent.loop import agent as agent_module
from joulie_agent.loop.agent import Agent
from joulie_agent.settings import Settings
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_agent.telemetry.otlpexport import PowerExporter
from joulie_agent.telemetry.otlpexport_test import FakeExporter
from joulie_api.generated.nodetwin import GPUCapSpec, GPUClockLock, GPUPowerCap, NodeTwinSpec
from joulie_common.clock import FakeClock

NODE = "gpu-0"
WARM_UP_S = 180
MEASURED_MIN = 30  # six rediscoveries (REDISCOVER_S 300 s) inside


AMD_LABELS = {"feature.node.kubernetes.io/pci-0300_1002.present": "true"}  # NFD: an AMD display controller


class OneNodeKube:
    """The API server for one GPU Node whose NodeTwin asks a GPU cap (and maybe a clock lock)."""

    def __init__(self, spec: NodeTwinSpec, vendor: str = "nvidia"):
        self.spec = spec
        self.vendor = vendor

    def list_nodes(self, selector: str) -> list[NodeSeen]:
        if self.vendor == "amd":
            return [NodeSeen(NODE, AMD_LABELS, {"amd.com/gpu": "8"}, {"amd.com/gpu": "8"})]
        return [NodeSeen(NODE, {}, {"nvidia.com/gpu": "8"}, {"nvidia.com/gpu": "8"})]

    def watched_nodes(self) -> None:
        return None

    def publish_hardware(self, node: str, status: object) -> bool:
        return True

    def read_spec(self, node: str) -> tuple[bool, NodeTwinSpec]:
        return True, self.spec

    def write_control_status(self, node: str, cpu: object, gpu: object) -> bool:
        return True

    def renew_lease(self, node: str) -> bool:
        return True

    def forget_lease(self, node: str) -> None:
        pass


class Sim:
    """One GPU Node (8 boards) under a pool agent with the power export on, on fake time."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lock: bool, vendor: str = "nvidia"):
        testtrees.cpuinfo(tmp_path / NODE)
        if vendor == "nvidia":
            testtrees.write(tmp_path / NODE / "dev" / "nvidiactl", "")
        self.tools = CountingTools(vendor=vendor)
        monkeypatch.setattr(agent_module, "make_runner", lambda *_a, **_k: self.tools)
        spec = NodeTwinSpec(node_name=NODE, profile="eco", gpu=GPUCapSpec(
            power_cap=GPUPowerCap(cap_watts_per_gpu=350), clock_lock=GPUClockLock(max_mhz=1500) if lock else None))
        self.clock = FakeClock()
        self.settings = Settings(mode="pool", root=str(tmp_path / "{node}"), pod_resources_socket="none")
        self.exporter = PowerExporter(FakeExporter(), self.settings.power_export_interval_s,
                                      monotonic=self.clock.monotonic)
        self.agent = Agent(self.settings, cast(AgentKube, cast(Any, OneNodeKube(spec, vendor))), load_catalog(), self.clock,
                           AgentMetrics(), exporter=self.exporter)
        self.t = 0

    def run(self, seconds: int) -> Counter[str]:
        """The tool starts over the next ``seconds``: a reconcile every RECONCILE_INTERVAL, an export every 10 s."""
        before = Counter(self.tools.starts)
        for _ in range(0, seconds, 10):
            if self.t % int(self.settings.reconcile_interval_s) == 0:
                assert self.agent.tick() == 0
            self.exporter.export_once()
            self.clock.advance(10)
            self.t += 10
        after = Counter(self.tools.starts)
        after.subtract(before)
        return +after


def per_minute(starts: Counter[str], minutes: int) -> dict[str, float]:
    """{what was run: starts per minute}, the argv shortened to its query."""
    out: dict[str, float] = {}
    for argv, n in starts.items():
        key = argv.removeprefix("nvidia-smi --query-gpu=").removesuffix(" --format=csv,noheader,nounits")
        out[key] = out.get(key, 0.0) + n / minutes
    return out


READING = "index,power.min_limit,power.max_limit,power.limit,power.draw,enforced.power.limit,uuid,utilization.gpu," \
          "clocks.sm,clocks.max.sm,name"
# Before (2026-12-07, the same simulation): 20.0 a minute without a lock, 21.0 with one: per export
# (6 a minute) the power query, the activity query and dcgmi; the cap verification's power query and
# enforced-limit query (0.8 a minute); the rediscovery's power and default-limit queries (0.4). Then
# 12.4 (one nvidia-smi per export) until dcgmi was read at every 2nd export (DCGM_EVERY), 9.4 since.
STEADY = {
    READING: 6.0,  # the export's one nvidia-smi per cycle: draw, activity, and the cap verification's read-back
    "dcgmi dmon -e 1002,1004,1005 -c 1": 3.0,  # DCGM's SM, tensor and DRAM activity, every 2nd export
    "index,power.min_limit,power.max_limit,power.limit,power.draw,name": 0.2,  # rediscovery (REDISCOVER_S)
    "index,power.default_limit": 0.2,  # rediscovery's default limits
}


def test_an_nvidia_node_starts_9_4_gpu_tools_a_minute_in_steady_state_not_20(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sim = Sim(tmp_path, monkeypatch, lock=False)
    sim.run(WARM_UP_S)
    starts = sim.run(MEASURED_MIN * 60)
    assert all(b.limit_w == 350 for b in sim.tools.boards)
    assert per_minute(starts, MEASURED_MIN) == pytest.approx(STEADY)
    assert sum(starts.values()) / MEASURED_MIN == pytest.approx(9.4)


def test_a_clock_lock_adds_its_read_back_once_a_minute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sim = Sim(tmp_path, monkeypatch, lock=True)
    sim.run(WARM_UP_S)
    starts = sim.run(MEASURED_MIN * 60)
    assert all(b.lock is not None and b.limit_w == 350 for b in sim.tools.boards)
    lock_read = "index,pci.bus_id,clocks.max.sm,clocks_event_reasons.applications_clocks_setting"
    assert per_minute(starts, MEASURED_MIN) == pytest.approx({**STEADY, lock_read: 1.0})  # before: 21.0, then 13.4


def test_a_limit_changed_behind_the_agents_back_is_set_again_from_the_exports_reading(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The verification takes the export's reading (no query of its own): drift shows within the export's
    # read period plus a reconcile interval, 30 s (its own read every 60 s took up to 80 s).
    sim = Sim(tmp_path, monkeypatch, lock=False)
    sim.run(WARM_UP_S)
    sim.tools.boards[3].enforced_w = 700.0  # the driver dropped the cap (persistence off, a reset)
    starts = sim.run(30)
    assert starts["nvidia-smi -i 3 -pl 350"] == 1
    assert sim.tools.boards[3].enforced_w is None
    assert set(per_minute(starts, 1)) <= set(STEADY) | {"nvidia-smi -i 3 -pl 350"}



def test_an_amd_node_starts_6_4_gpu_tools_a_minute_in_steady_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One amd-smi limits query per export, shared by the cap verification (no query of its own); the
    # product names once per rediscovery (the export keeps them). No activity reads: no DCGM on AMD.
    sim = Sim(tmp_path, monkeypatch, lock=False, vendor="amd")
    sim.run(WARM_UP_S)
    starts = sim.run(MEASURED_MIN * 60)
    assert all(b.limit_w == 350 for b in sim.tools.boards)
    assert per_minute(starts, MEASURED_MIN) == pytest.approx({
        "amd-smi static --limit --json": 6.2,  # 6 exports, the rediscovery's (REDISCOVER_S) 0.2
        "rocm-smi --showproductname --json": 0.2,  # the rediscovery's product names
    })
