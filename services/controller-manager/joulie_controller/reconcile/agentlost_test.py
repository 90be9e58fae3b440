"""The budget does not shed on a node whose agent is lost (issue 36: a frozen agent's node kept being
lowered, spec 50 % while its hardware sat at 30 % and controlStatus still said applied): no agent
applies a cap there, so the watts must come from the nodes that can still give them."""

from __future__ import annotations

from dataclasses import replace

from joulie_api.generated.nodetwin import AgentLiveness, NodeTwinStatus
from joulie_controller.readings.values import Measurement
from joulie_controller.reconcile.forgedpower_test import BUDGET, _snap
from joulie_controller.reconcile.reconcile_test import tick
from joulie_controller.reconcile.snapshot import Memory, Snapshot, TickResult


def _second_tick(lost: bool) -> TickResult:
    mem = Memory()
    _, snap = tick(_snap(None), BUDGET, mem)
    if lost:
        twin = snap.twins["node-1"]
        status = (twin.status or NodeTwinStatus()).model_copy(update={"agent": AgentLiveness(state="agent-lost")})
        snap = replace(snap, twins={**snap.twins, "node-1": twin.model_copy(update={"status": status})})
    over: Snapshot = replace(
        snap,
        now=snap.now.replace(second=8),
        measurements={f"node-{i}": Measurement(450.0, components_w=410.0) for i in range(4)},
    )
    result, _ = tick(over, BUDGET, mem)  # 1800 W against the 1500 W budget
    return result


def test_the_budget_sheds_on_the_nodes_whose_agents_can_apply_it() -> None:
    alive, lost = _second_tick(lost=False), _second_tick(lost=True)
    assert alive.plan is not None and lost.plan is not None
    # node-0 is kept performance (one per hardware family); node-1's agent is lost in the second run.
    assert "budget:" in alive.plan.node_caps["node-1"].reason  # control: lowered by the budget when alive
    assert "budget:" not in lost.plan.node_caps["node-1"].reason
    assert all("budget:" in lost.plan.node_caps[f"node-{i}"].reason for i in (2, 3))
    assert any("not shed on node-1 (agent-lost" in line for line in lost.log)
