"""The oracle bound of the per-job levers: within the budget, never past it, more for memory-bound work."""

from __future__ import annotations

import pytest

from joulie_bench.leverbound import best_setting, facility_bound, trace_bound
from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.api import Phase
from joulie_workload.gen import GenOptions, generate

H100 = builtin_profile("nvidia-h100-nvl-8gpu")
TRAINING = (Phase(1.0, 0.55, 0.85),)
DECODE = (Phase(1.0, 0.14, 0.45),)


@pytest.mark.parametrize("phases", [TRAINING, DECODE])
def test_the_best_setting_stays_within_the_budget_and_a_larger_budget_saves_more(phases: tuple[Phase, ...]) -> None:
    tight, loose = best_setting(H100, phases, 0.03), best_setting(H100, phases, 0.10)
    assert 0.0 <= tight.slowdown <= 0.03 + 1e-9 and 0.0 <= loose.slowdown <= 0.10 + 1e-9
    assert 0.0 < tight.saving < loose.saving < 0.5
    assert best_setting(H100, phases, 0.0).saving < tight.saving


def test_memory_bound_decode_saves_more_than_training_and_by_a_lock_a_cap_alone_cannot_give() -> None:
    decode = best_setting(H100, DECODE, 0.03)
    assert decode.saving > best_setting(H100, TRAINING, 0.03).saving
    assert decode.lock_ratio < 1.0  # decode draws less than any cap near the default: the lock is the lever


def test_a_traces_bound_weighs_its_jobs_by_their_gpu_energy() -> None:
    jobs = generate(GenOptions(jobs=20, seed=4, kind_shares={"gpu-training": 0.5, "gpu-inference": 0.5}))
    b = trace_bound(H100, jobs, 0.03)
    assert b.jobs == sum(1 for j in jobs if j.requests.gpu > 0) and b.busy_j > 0
    assert min(b.by_kind.values()) <= b.busy_gpu_saving <= max(b.by_kind.values())
    assert facility_bound(b, b.busy_j / 3.6e6) == pytest.approx(b.busy_gpu_saving)
    assert facility_bound(b, 2 * b.busy_j / 3.6e6) == pytest.approx(b.busy_gpu_saving / 2)
