"""A forged power reading does not move caps (issue 36: forged OTLP readings of 50 kW for one node sent
three honest nodes to the 30 % floor within 6 s, one INFO line the only sign). The tick drops a
reading the node's hardware refutes: the node neutral, its twin saying so, logged once."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from joulie_api.generated.nodehardware import NodeHardware
from joulie_controller.model.fsm import PodInfo
from joulie_controller.readings.values import Measurement
from joulie_controller.reconcile.reconcile_test import T0, cluster, tick
from joulie_controller.reconcile.snapshot import Memory, Snapshot, TickResult
from joulie_controller.settings import PolicySettings, Settings

BUDGET = Settings(
    policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0, power_budget_w=1500.0),
    trusted_namespaces=("default",),
)
HONEST_W = 300.0  # each of 4 nodes (2 x 165 W packages): 1200 W against a 1500 W budget


def _hardware(node: str) -> NodeHardware:
    return NodeHardware.model_validate(
        {
            "spec": {"nodeName": node},
            "status": {
                "cpu": {
                    "model": "Xeon 8260",
                    "sockets": 2,
                    "totalCores": 48,
                    "capRange": {"minWattsPerSocket": 50, "maxWattsPerSocket": 165},
                }
            },
        }
    )


def _snap(forged_w: float | None, at_s: float = 0.0) -> Snapshot:
    snap = cluster(4)
    snap = replace(snap, hardware={n.name: _hardware(n.name) for n in snap.nodes})
    # Memory-bound work: what the budget's shed lowers first, had it a reason to.
    pods = [
        PodInfo(
            "default",
            f"stream-{i}",
            node_name=f"node-{i}",
            phase="Running",
            cpu_request=44,
            labels={"joulie.io/workload-kind": "cpu-memory"},
        )
        for i in range(4)
    ]
    readings = {f"node-{i}": Measurement(HONEST_W, components_w=HONEST_W - 40) for i in range(4)}
    if forged_w is not None:
        readings["node-0"] = Measurement(forged_w, components_w=HONEST_W - 40)
    return replace(snap, now=T0 + timedelta(seconds=at_s), pods=pods, measurements=readings)


def _caps(result: TickResult) -> dict[str, tuple[float, float]]:
    assert result.plan is not None
    return {n: (c.cpu_pct, c.gpu_pct) for n, c in result.plan.node_caps.items()}


def _run(forged: list[float | None]) -> list[TickResult]:
    mem, out = Memory(), []
    for i, forged_w in enumerate(forged):
        result, _ = tick(_snap(forged_w, at_s=8.0 * i), BUDGET, mem)
        out.append(result)
    return out


def test_a_forged_50_kw_reading_moves_no_cap_and_the_twin_says_it_was_dropped() -> None:
    honest = _run([None] * 4)
    forged = _run([50_000.0] * 4)
    assert all(r.plan is not None and r.plan.budget_shed_w == 0 for r in forged)
    assert [_caps(r) for r in forged] == [_caps(r) for r in honest]
    first = forged[0]
    status = next(w.status for w in first.writes if w.node == "node-0" and w.status is not None)
    assert status.power_measurement is not None
    assert status.power_measurement.source == "prometheus-implausible"
    assert status.power_measurement.measured_node_power_w is None
    assert first.implausible == {"node-0": "above-ceiling"}
    dropped = [line for r in forged for line in r.log if "implausible" in line]
    assert len(dropped) == 1 and "node-0" in dropped[0] and "50000 W" in dropped[0]


def test_a_forged_0_w_under_honest_components_is_dropped_and_a_plausible_reading_is_used_again() -> None:
    results = _run([0.0, 0.0, None])
    assert results[0].implausible == {"node-0": "below-components"}
    assert results[2].implausible == {}
    assert any("node-0: measured power plausible again (300 W)" in line for line in results[2].log)
