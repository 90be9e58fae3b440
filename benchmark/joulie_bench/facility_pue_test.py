"""One PUE for the project: the benchmark imports the simulator's facility model (issue 22); that
model still gives the reference PUE the benchmark used before it (joulie-node-sim.md §3.1.4, load
against the nameplate), so earlier results stay comparable."""

from __future__ import annotations

import itertools
import math

from joulie_bench import sim
from joulie_bench.nodes import BenchNode
from joulie_hwprofiles.schema import builtin_profile, builtin_profile_names
from joulie_simulator.api import node_nameplate_w, pue


def reference_pue(it_w: float, nameplate_w: float, t_s: float) -> float:
    """The benchmark's own formula until it imported the facility model."""
    temp = 22.0 + 8.0 * math.sin(2 * math.pi * t_s / 86400.0)
    load = it_w / nameplate_w if nameplate_w > 0 else 0.0
    return min(3.0, max(1.0, 1.08 + 0.006 * (temp - 15) + 0.04 * load + 0.015 * load * (temp - 15) / 15))


def test_the_benchmark_uses_the_facility_model() -> None:
    assert sim.pue is pue


def test_the_facility_pue_equals_the_benchmarks_reference_to_1e_9() -> None:
    its = [0.0, 1.0, 350.0, 4_000.0, 25_000.0, 60_000.0, 120_000.0]
    nameplates = [0.0, 10_000.0, 60_000.0, 100_000.0]
    times = [0.0, 1.5, 3_600.0, 21_600.0, 43_200.0, 64_800.0, 86_399.0, 200_000.0, 1e6]
    worst = max(abs(pue(i, n, t) - reference_pue(i, n, t)) for i, n, t in itertools.product(its, nameplates, times))
    assert worst <= 1e-9, worst


def test_a_nodes_nameplate_is_the_benchmarks_node_tdp() -> None:
    for name in builtin_profile_names():
        p = builtin_profile(name)
        assert abs(node_nameplate_w(p) - BenchNode(name="n", profile=p).tdp_w) < 1e-9, name
