"""Policies: how many performance nodes, which ones, and the cluster power budget."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulie_controller.model.hardware import HardwareView
from joulie_controller.policies.plan import PolicyNode, performance_set
from joulie_controller.policies.powerbudget import CLUSTER_POWER_BUDGET, cluster_power_budget
from joulie_controller.policies.queueaware import queue_aware, queue_aware_count
from joulie_controller.policies.registry import plan
from joulie_controller.policies.ruleswap import rule_swap
from joulie_controller.policies.static import static_partition
from joulie_controller.settings import PolicySettings, Settings

CPU = HardwareView(cpu_model="epyc-9965", cpu_sockets=2, cpu_max_w_per_socket=500)
H100 = HardwareView(cpu_model="xeon", cpu_sockets=2, cpu_max_w_per_socket=350, gpu_model="h100", gpu_count=8,
                    gpu_max_w=700)


def cpu_nodes(n: int, current: str = "unknown") -> list[PolicyNode]:
    return [PolicyNode(f"n{i}", CPU, current) for i in range(n)]


def test_static_partition_rounds_half_up() -> None:
    assert len(static_partition(cpu_nodes(5), 0.6).performance) == 3
    assert len(static_partition(cpu_nodes(5), 0.5).performance) == 3  # 2.5 → 3, not banker's 2
    assert len(static_partition(cpu_nodes(4), 0.0).performance) == 1  # the family floor
    assert len(static_partition(cpu_nodes(4), 7.0).performance) == 4


@pytest.mark.parametrize(("nodes", "base", "pods", "per", "expected"), [
    (5, 0.6, 0, 10, 3), (5, 0.6, 40, 10, 4), (3, 0.34, 2, 2, 1), (5, 0.0, 7, 0, 5)])
def test_queue_aware_counts(nodes: int, base: float, pods: int, per: int, expected: int) -> None:
    s = Settings(policy=PolicySettings(queue_hp_base_frac=base, queue_perf_per_hp_node=per))
    assert len(queue_aware(cpu_nodes(nodes), pods, s).performance) == expected


def test_queue_aware_bounds() -> None:
    assert queue_aware_count(10, 100, Settings(policy=PolicySettings(queue_hp_max=3))) == 3
    assert queue_aware_count(10, 0, Settings(policy=PolicySettings(queue_hp_base_frac=0, queue_hp_min=2))) == 2
    assert queue_aware_count(10, 1000, Settings(policy=PolicySettings(queue_hp_max=0))) == 10  # ≤0 means "all nodes"


def test_every_family_keeps_a_performance_node_and_slots_split_by_size() -> None:
    nodes = [PolicyNode(f"cpu{i}", CPU, "unknown") for i in range(2)] + [
        PolicyNode(f"gpu{i}", H100, "unknown") for i in range(8)]
    perf = static_partition(nodes, 0.5).performance
    assert sum(n.startswith("cpu") for n in perf) == 1
    assert sum(n.startswith("gpu") for n in perf) == 4


def test_documented_sainte_lague_split() -> None:
    sizes = {"h100-nvl": 1450, "h100-sxm": 730, "l40s": 850, "mi300x": 240, "w7900": 730, "cpu-highcore": 250,
             "cpu-highfreq": 250, "cpu-intensive": 500}
    expected = {"h100-nvl": 290, "h100-sxm": 146, "l40s": 170, "mi300x": 48, "w7900": 146, "cpu-highcore": 50,
                "cpu-highfreq": 50, "cpu-intensive": 100}
    nodes = [PolicyNode(f"{fam}-{i}", HardwareView(cpu_model=fam), "unknown")
             for fam, size in sizes.items() for i in range(size)]
    perf = performance_set(nodes, 1000)
    got = {fam: sum(p.startswith(f"{fam}-") for p in perf) for fam in sizes}
    assert got == expected


def test_current_performance_nodes_are_kept() -> None:
    nodes = [PolicyNode("a", CPU, "eco"), PolicyNode("b", CPU, "eco"), PolicyNode("c", CPU, "performance")]
    assert performance_set(nodes, 1) == {"c"}


def test_unknown_hardware_is_its_own_family() -> None:
    nodes = [PolicyNode("x", HardwareView(), "unknown"), PolicyNode("y", HardwareView(), "unknown")]
    assert performance_set(nodes, 0) == {"x", "y"}


families = st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=40)


@settings(deadline=None)  # no wall-clock gate: a loaded machine is not a failure
@given(families, st.integers(0, 45), st.randoms())
def test_performance_set_is_house_monotone_and_order_free(fams: list[str], hp: int, rnd: random.Random) -> None:
    nodes = [PolicyNode(f"n{i:02d}", HardwareView(cpu_model=f), "unknown") for i, f in enumerate(fams)]
    shuffled = nodes[:]
    rnd.shuffle(shuffled)
    one, more = performance_set(nodes, hp), performance_set(nodes, hp + 1)
    assert performance_set(shuffled, hp) == one
    assert one <= more and len(more - one) <= 1
    # Sticky: a second reconcile with the new labels in place moves nothing.
    relabelled = [PolicyNode(n.name, n.hardware, "performance" if n.name in one else "eco") for n in nodes]
    assert performance_set(relabelled, hp) == one


def test_rule_swap_alternates() -> None:
    nodes = cpu_nodes(3)
    assert rule_swap(nodes, 0, 60).performance == {"n1", "n2"}
    assert rule_swap(nodes, 61, 60).performance == {"n0", "n2"}
    assert rule_swap(nodes[:1], 0, 60).performance == frozenset()
    assert rule_swap(nodes[:1], 60, 60).performance == {"n0"}
    assert rule_swap(nodes, 61, 0).performance == {"n0", "n2"}  # interval ≤0 means 60 s


def test_cluster_budget_drops_performance_slots_then_lowers_eco_caps() -> None:
    # 4 CPU nodes of 1000 W TDP; eco at 60 % = 600 W.
    nodes = cpu_nodes(4)
    roomy = cluster_power_budget(nodes, 0, Settings(policy=PolicySettings(power_budget_w=10_000,
                                                                          queue_hp_base_frac=1.0)))
    assert len(roomy.performance) == 4 and not roomy.eco_cap_pct
    # 3000 W: 1 perf (1000) + 3 eco (1800) = 2800 fits; 2 perf would be 3200.
    tight = cluster_power_budget(nodes, 0, Settings(policy=PolicySettings(power_budget_w=3000, queue_hp_base_frac=1.0)))
    assert len(tight.performance) == 1 and not tight.eco_cap_pct
    # 2200 W: floor of 1 perf (1000), eco must fit 1200 W over 3000 W TDP → 40 %.
    tighter = cluster_power_budget(nodes, 0, Settings(policy=PolicySettings(power_budget_w=2200,
                                                                            queue_hp_base_frac=1.0)))
    assert len(tighter.performance) == 1
    assert set(tighter.eco_cap_pct.values()) == {40.0}
    assert tighter.policy_name == CLUSTER_POWER_BUDGET and not tighter.notes


def test_cluster_budget_says_when_it_cannot_be_met() -> None:
    out = plan("cluster_power_budget", cpu_nodes(4), 0, 0,
               Settings(policy=PolicySettings(type="cluster_power_budget", power_budget_w=500)))
    assert set(out.eco_cap_pct.values()) == {30.0}
    assert any("cannot be met" in n for n in out.notes)


def _plan_w(nodes: list[PolicyNode], perf: frozenset[str], eco_pct: float) -> float:
    return sum(n.hardware.budget().capped_w(100, 100) if n.name in perf else
               n.hardware.budget().capped_w(eco_pct, eco_pct) for n in nodes)


@settings(deadline=None)  # no wall-clock gate: a loaded machine is not a failure
@given(st.lists(st.sampled_from([CPU, H100]), min_size=1, max_size=20), st.floats(1000, 200_000))
def test_budget_plan_keeps_the_most_performance_nodes_that_fit(hws: list[HardwareView], budget: float) -> None:
    nodes = [PolicyNode(f"n{i:02d}", hw, "unknown") for i, hw in enumerate(hws)]
    out = cluster_power_budget(nodes, 0, Settings(policy=PolicySettings(power_budget_w=budget, queue_hp_base_frac=1.0)))
    if out.eco_cap_pct or out.notes:  # slots alone could not fit: only the one-per-family floor is left
        assert out.performance == performance_set(nodes, 0)
        return
    assert _plan_w(nodes, out.performance, 60) <= budget
    if len(out.performance) < len(nodes):
        assert _plan_w(nodes, performance_set(nodes, len(out.performance) + 1), 60) > budget
