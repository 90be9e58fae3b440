"""Issue 36: an absurd NodeTwin cap (``packagePowerCapWatts: 1e305`` broke the agent's reconcile,
``1e30`` silently uncapped) is refused: the agent keeps the last cap it accepted and says why in
controlStatus. Such a value only reaches the agent past a CRD without the maximum (an upgrade in
progress, a hand-installed CRD): the current CRD refuses it at the API server."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.fixtures import testtrees
from joulie_agent.loop.agent import Agent
from joulie_agent.loop.agent_outage_test import PL1, FlakyKube
from joulie_agent.settings import Settings
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_api.generated.nodetwin import CPUCapSpec, NodeTwinSpec
from joulie_api.kube import NODE_TWIN, decode
from joulie_common.clock import FakeClock


class RawKube(FlakyKube):
    """The twin as the API server stores it, decoded the way the agent's client decodes it."""

    def __init__(self, spec: NodeTwinSpec) -> None:
        super().__init__(spec)
        self.raw: dict[str, Any] | None = None

    def read_spec(self, node: str) -> tuple[bool, NodeTwinSpec | None]:
        if self.raw is None:
            return super().read_spec(node)
        return True, decode(NODE_TWIN, {"metadata": {"name": node}, "spec": self.raw}).spec


@pytest.mark.parametrize("watts", [1e30, 1e305, 5.0])
def test_an_out_of_range_cpu_cap_is_refused_the_last_cap_held_and_the_reason_reported(
        tmp_path: Path, watts: float, caplog: pytest.LogCaptureFixture) -> None:
    testtrees.rapl_node(tmp_path, sockets=2)
    kube = RawKube(NodeTwinSpec(node_name="n1", profile="eco", cpu=CPUCapSpec(package_power_cap_watts=120)))
    agent = Agent(Settings(node_name="n1", root=str(tmp_path), metrics_addr=""), kube,  # type: ignore[arg-type]
                  load_catalog(), FakeClock(), AgentMetrics())
    assert agent.tick() == 0
    kube.raw = {"nodeName": "n1", "profile": "eco", "cpu": {"packagePowerCapWatts": watts}}
    with caplog.at_level(logging.WARNING):
        assert agent.tick() == 1  # never raises, never uncaps; counted as a node not reconciled
        assert agent.tick() == 1
    assert len(caplog.records) == 1 and "refused" in caplog.records[0].getMessage()  # once, not per tick
    assert (tmp_path / PL1.format(0)).read_text() == (tmp_path / PL1.format(1)).read_text() == "120000000"
    cpu, _gpu = kube.statuses[-1]
    assert cpu.result == "blocked"
    assert "packagePowerCapWatts" in cpu.message and "refused" in cpu.message
    assert "120.0W" in cpu.message  # what the node holds instead


def test_the_crd_bounds_every_numeric_spec_field() -> None:
    import yaml

    for crd in ("joulie.io_nodetwins.yaml", "joulie.io_nodehardwares.yaml"):
        doc = yaml.safe_load((Path(__file__).parents[4] / "charts/joulie/crds" / crd).read_text())
        spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        unbounded: list[str] = []

        def walk(node: dict[str, Any], path: str, unbounded: list[str] = unbounded) -> None:
            if node.get("type") in ("number", "integer") and ("minimum" not in node or "maximum" not in node):
                unbounded.append(path)
            for key, child in (node.get("properties") or {}).items():
                walk(child, f"{path}.{key}")
            if isinstance(node.get("items"), dict):
                walk(node["items"], f"{path}[]")

        walk(spec, "spec")
        assert unbounded == [], f"{crd}: numeric spec fields without both bounds: {unbounded}"


def test_a_cap_back_within_bounds_is_enforced_again(tmp_path: Path) -> None:
    testtrees.rapl_node(tmp_path, sockets=2)
    kube = RawKube(NodeTwinSpec(node_name="n1", profile="eco", cpu=CPUCapSpec(package_power_cap_watts=120)))
    agent = Agent(Settings(node_name="n1", root=str(tmp_path), metrics_addr=""), kube,  # type: ignore[arg-type]
                  load_catalog(), FakeClock(), AgentMetrics())
    kube.raw = {"nodeName": "n1", "profile": "eco", "cpu": {"packagePowerCapWatts": 1e30}}
    assert agent.tick() == 1
    kube.raw = {"nodeName": "n1", "profile": "eco", "cpu": {"packagePowerCapWatts": 100}}
    assert agent.tick() == 0
    assert (tmp_path / PL1.format(0)).read_text() == "100000000"
    assert kube.statuses[-1][0].result == "applied"
