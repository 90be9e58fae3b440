"""One PUE for the project: the simulator's facility model gives the benchmark's PUE for the same
inputs (issue 22), so the benchmark can import it instead of keeping its own formula."""

from __future__ import annotations

import itertools

from joulie_bench import sim
from joulie_hwprofiles.schema import builtin_profile, builtin_profile_names
from joulie_simulator.facility import node_nameplate_w, pue


def test_the_facility_pue_equals_the_benchmarks_to_1e_9() -> None:
    its = [0.0, 1.0, 350.0, 4_000.0, 25_000.0, 60_000.0, 120_000.0]
    nameplates = [0.0, 10_000.0, 60_000.0, 100_000.0]
    times = [0.0, 1.5, 3_600.0, 21_600.0, 43_200.0, 64_800.0, 86_399.0, 200_000.0, 1e6]
    worst = max(abs(pue(i, n, t) - sim.pue(i, n, t)) for i, n, t in itertools.product(its, nameplates, times))
    assert worst <= 1e-9, worst


def test_a_nodes_nameplate_is_the_benchmarks_node_tdp() -> None:
    for name in builtin_profile_names():
        p = builtin_profile(name)
        assert abs(node_nameplate_w(p) - sim.BenchNode(name="n", profile=p).tdp_w) < 1e-9, name
