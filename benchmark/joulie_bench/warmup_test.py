"""The warm-up (``--warmup``): a unit is measured from the policy's own steady state, not from every
node on at t = 0, and only the unit's own jobs and the time after the warm-up are reported."""

from __future__ import annotations

import pytest

from joulie_bench.cli import parse_nodes
from joulie_bench.sim import run
from joulie_bench.warmup import WARMUP_PREFIX, with_warmup
from joulie_workload.gen import GenOptions, generate

NODES = parse_nodes("intel-xeon-2s-rapl*3")


def test_the_units_tail_is_replayed_before_it_and_the_unit_shifted_after_it() -> None:
    jobs = generate(GenOptions(jobs=20, seed=3, mean_interarrival_s=60, gpu_ratio=0, eco_ratio=0))
    last = max(j.submit_s for j in jobs)
    out = with_warmup(jobs, 300.0)
    lead = [j for j in out if j.job_id.startswith(WARMUP_PREFIX)]
    tail = [j for j in jobs if j.submit_s > last - 300.0]
    assert [j.job_id for j in lead] == [WARMUP_PREFIX + j.job_id for j in sorted(tail, key=lambda j: j.submit_s)]
    assert all(0.0 < j.submit_s <= 300.0 for j in lead)
    own = {j.job_id: j.submit_s for j in out if not j.job_id.startswith(WARMUP_PREFIX)}
    assert own == {j.job_id: j.submit_s + 300.0 for j in jobs}
    assert with_warmup(jobs, 0.0) == list(jobs)
    with pytest.raises(ValueError, match="--warmup"):
        with_warmup(jobs, -1.0)


def test_a_suspend_arm_measured_after_a_warm_up_starts_with_its_idle_nodes_already_off() -> None:
    # Three CPU servers and a light trace: one server's work, so S keeps two off once SUSPEND_AFTER has run.
    jobs = generate(GenOptions(jobs=12, seed=4, mean_interarrival_s=200, gpu_ratio=0, eco_ratio=0, perf_ratio=0))
    cold = {p: run(jobs, NODES, p, 4, dt_s=10.0) for p in ("A", "S")}
    warm = {p: run(jobs, NODES, p, 4, dt_s=10.0, warmup_s=1800.0) for p in ("A", "S")}
    for r in (*cold.values(), *warm.values()):
        assert (r.jobs_total, r.jobs_completed) == (12, 12)  # the unit's jobs only, warm-up jobs not reported
    saving = {
        k: 1 - rs["S"].facility_energy_kwh / rs["A"].facility_energy_kwh for k, rs in (("cold", cold), ("warm", warm))
    }
    # Cold, S pays for every node on during its first SUSPEND_AFTER; after the warm-up it does not.
    assert saving["warm"] > saving["cold"] + 0.02, saving
    span_h = warm["S"].end_s / 3600 - 0.5
    assert warm["S"].node_hours_off > cold["S"].node_hours_off
    assert warm["S"].node_hours_off <= 3 * span_h  # time off counted after the warm-up only
