"""The emulated BMC failing on demand: refused power-ons retried, hung ones given up, no Pod lost or stuck."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from joulie_bench.bench_test import _burst
from joulie_bench.bmcfaults import BmcFaults
from joulie_bench.cli import parse_nodes
from joulie_bench.sim import run
from joulie_controller.api import SuspendSettings

T0 = datetime(2026, 1, 1, tzinfo=UTC)
JOBS = _burst(0, 12, "early") + _burst(3 * 3600, 30, "late")


def test_the_answers_are_drawn_from_the_seed() -> None:
    def answers(seed: int) -> list[str]:
        f = BmcFaults(0.3, 0.1, seed)
        return [f.power_on(f"n{i % 3}", T0) for i in range(40)]

    assert answers(5) == answers(5) != answers(6)
    assert {"ok", "refused", "hung"} <= set(answers(5))
    with pytest.raises(ValueError, match="--bmc-failure-rate: 1.5 is not a share between 0 and 1"):
        BmcFaults(1.5)


def test_the_shared_draw_gives_the_answers_the_benchmark_recorded_before_it_was_shared() -> None:
    """The benchmark draws through the live emulator's PowerOnFaults; its runs of 2026-12-05/06 were drawn
    by its own copy: ``random.Random(f"bmc-faults-{seed}")``, refused below the failure rate, hung below
    the failure plus hang rate. The same answers, or the recorded results would no longer replay."""
    import random

    for seed, fail, hang in ((1011, 0.1, 0.0), (1012, 0.1, 0.0), (3, 0.5, 0.0), (5, 0.3, 0.1)):
        rng = random.Random(f"bmc-faults-{seed}")
        before = []
        for _ in range(200):
            x = rng.random()
            before.append("refused" if x < fail else "hung" if x < fail + hang else "ok")
        f = BmcFaults(fail, hang, seed)
        assert [f.power_on(f"n{i % 4}", T0) for i in range(200)] == before
    with pytest.raises(ValueError, match="more than every power-on"):
        BmcFaults(0.7, 0.5)


@pytest.mark.parametrize("arm", ["S", "SF"])
def test_refused_power_ons_are_retried_and_every_pod_is_bound_within_the_resume_timeout(arm: str) -> None:
    nodes = parse_nodes("intel-xeon-2s-rapl*4")
    faults = BmcFaults(failure_rate=0.5, seed=3)
    r = run(JOBS, nodes, arm, seed=3, dt_s=10, suspend_after_s=600, faults=faults)
    assert r.jobs_completed == r.jobs_total == 42  # none lost
    assert faults.refused_count >= 1 and r.boots >= 1  # refusals happened, and resumes still came through
    assert f"BMC: {faults.refused_count} of {faults.power_ons} power-ons refused" in faults.summary()
    limit_s = SuspendSettings().resume_timeout_s + 60.0 + 10.0  # the resume timeout plus one reconcile (and a tick)
    assert max(r.waits_s) <= limit_s, max(r.waits_s)


def test_a_node_whose_bmc_hangs_is_given_up_and_the_pods_run_elsewhere() -> None:
    nodes = parse_nodes("intel-xeon-2s-rapl*4")
    faults = BmcFaults(hang_rate=1.0, seed=1)  # every power-on accepted, no node ever comes back
    r = run(JOBS, nodes, "S", seed=1, dt_s=10, suspend_after_s=600, faults=faults)
    assert faults.hung and r.boots == 0
    assert r.jobs_completed == r.jobs_total == 42  # on the floor's node: none stuck behind a hung one
