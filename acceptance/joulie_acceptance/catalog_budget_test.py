"""A node whose CPU cap range comes only from the hardware catalog (issue 21) is counted by the
controller: the EPYC 9534 energy-only profile (energy counters and DVFS, no RAPL constraint) is
discovered by the real agent on the real emulator, its NodeHardware is read by the controller's
hardware view, and the twin's headroom and the cluster_power_budget policy count its 2 x 300 W.

Run with -s to see the NodeHardware status as the agent publishes it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from joulie_acceptance.harness import Bench
from joulie_api.generated.nodehardware import NodeHardware, NodeHardwareSpec
from joulie_controller.api import (
    CapSettings,
    HardwareView,
    PolicyNode,
    PolicySettings,
    Settings,
    TwinInput,
    cluster_power_budget,
    compute_twin,
    from_node_hardware,
    headroom_score,
)
from joulie_hwprofiles.schema import builtin_profile

EPYC = "amd-epyc-9534-2s-energy-only"
XEON = "intel-xeon-6530-2s-rapl"


def discovered(tmp_path: Path, profile: str, node: str) -> tuple[dict[str, object], HardwareView]:
    """The agent's NodeHardware status for ``profile`` and the controller's view of it."""
    with Bench(tmp_path / node, builtin_profile(profile), node=node) as b:
        b.advance(1)
        b.reconcile()
        status = b.hardware
    doc = status.model_dump(by_alias=True, exclude_none=True, mode="json")
    print(f"{profile} ({node}): NodeHardware status = {json.dumps(doc, indent=2, sort_keys=True)}")
    nhw = NodeHardware(metadata={"name": node}, spec=NodeHardwareSpec(node_name=node), status=status)
    return doc, from_node_hardware(nhw)


def test_an_epyc_with_a_catalog_cap_range_gets_headroom_and_a_place_in_the_power_budget(tmp_path: Path) -> None:
    doc, epyc = discovered(tmp_path, EPYC, "epyc-0")
    _, xeon = discovered(tmp_path, XEON, "xeon-0")
    # What the agent says: the range is the datasheet's (AMD EPYC 9534 cTDP 240-300 W), and says so.
    assert doc["cpu"]["capRange"] == {"type": "package", "minWattsPerSocket": 240.0, "maxWattsPerSocket": 300.0}  # type: ignore[index]
    assert doc["inventoryResolution"]["catalogFacts"] == ["cpu.capRange"]  # type: ignore[index]
    assert doc["cpu"]["controlAvailable"] is True and doc["cpu"]["driverFamily"] == "acpi-cpufreq"  # type: ignore[index]
    # The controller's view: 2 sockets x 300 W.
    assert (epyc.cpu_sockets, epyc.cpu_min_w_per_socket, epyc.cpu_max_w_per_socket) == (2, 240.0, 300.0)
    assert epyc.budget().node_tdp_w == 600.0 and xeon.budget().node_tdp_w == 540.0

    # Headroom: at a 60 % eco cap the twin budgets 360 W, and a measured 180 W leaves half of it.
    out = compute_twin(TwinInput(epyc.budget(), "eco", cpu_cap_pct=60.0, measured_node_power_w=180.0))
    assert (out.node_tdp_w, out.node_capped_w) == (600.0, 360.0)
    assert out.headroom_score == pytest.approx(headroom_score(360.0, 180.0)) and out.headroom_score > 0

    # The budget: two EPYCs and a Xeon, all wanting performance (600 + 600 + 540 W) under 1500 W. The
    # policy keeps one performance node per family (an EPYC and the Xeon: 1140 W) and lowers the other
    # EPYC's eco cap to what is left of the budget: 360 W of its 600 W, 60 %. Only a counted EPYC gives that.
    nodes = [PolicyNode("epyc-0", epyc, "performance"), PolicyNode("epyc-1", epyc, "performance"),
             PolicyNode("xeon-0", xeon, "performance")]
    s = Settings(policy=PolicySettings(type="cluster_power_budget", power_budget_w=1500.0, budget_min_cap_pct=10.0),
                 caps=CapSettings(cpu_eco_pct=100.0))
    plan = cluster_power_budget(nodes, perf_pods=10, s=s)
    print(f"cluster_power_budget 1500 W: performance {sorted(plan.performance)}, eco caps {dict(plan.eco_cap_pct)}, "
          f"notes {plan.notes}")
    assert plan.notes == ()  # no "node(s) with unknown hardware are not counted"
    assert "xeon-0" in plan.performance and len(plan.performance) == 2
    (eco_node,) = {"epyc-0", "epyc-1"} - plan.performance
    assert dict(plan.eco_cap_pct) == {eco_node: 60.0}
    # Without the catalog range the EPYCs count 0 W: the eco one keeps its 100 % ("it fits") and the
    # plan says they are left out.
    blind = [PolicyNode(n.name, HardwareView(cpu_model=epyc.cpu_model, cpu_sockets=2), "performance")
             for n in nodes[:2]] + [nodes[2]]
    blind_plan = cluster_power_budget(blind, perf_pods=10, s=s)
    assert blind_plan.performance == plan.performance and not blind_plan.eco_cap_pct
    assert blind_plan.notes == ("2 node(s) with unknown hardware are not counted in the budget: epyc-0, epyc-1",)
