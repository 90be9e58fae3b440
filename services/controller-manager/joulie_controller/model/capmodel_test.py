"""The controller's cap model: what it picks for each workload kind, and the limits it respects."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulie_controller.model import capmodel
from joulie_controller.model.capmodel import COMPUTE_BOUND, KIND_PRIORS, Work, choose_cap


def _one(kind: str, share: float = 1.0) -> list[Work]:
    return [Work("job-1", kind, KIND_PRIORS[kind], share)]


def test_memory_bound_inference_is_capped_deeper_than_training_and_both_within_tau() -> None:
    # H100 NVL: 400 W max, 200 W min, 310 W default; one job on one board, nothing else on the node.
    inf = choose_cap("gpu", _one("gpu-inference"), 400, 200, 0.0, 0.03, devices=8, ref_w=310)
    train = choose_cap("gpu", _one("gpu-training"), 400, 200, 0.0, 0.03, devices=8, ref_w=310)
    assert inf.capped and inf.pct_of_max < train.pct_of_max < 77.5
    for c in (inf, train):
        assert 0 < c.predicted_slowdown <= 0.03 and c.predicted_saving > 0
        assert c.driver == f"job-1 ({'gpu-inference' if c is inf else 'gpu-training'})"


def test_uncapped_means_the_default_limit_never_more() -> None:
    c = choose_cap("gpu", [Work("p", "performance", COMPUTE_BOUND, 1.0)], 400, 200, 0.0, 0.03, devices=8, ref_w=310)
    assert (c.pct_of_max, c.capped) == (77.5, False)
    assert "is not capped" in c.driver


def test_compute_bound_cpu_work_is_not_capped_and_a_zero_budget_caps_nothing() -> None:
    assert not choose_cap("cpu", _one("cpu-compute", 1.0), 165, 50, 76.0, 0.03, devices=2).capped
    assert not choose_cap("gpu", _one("gpu-inference"), 400, 200, 0.0, 0.0, devices=8, ref_w=310).capped


def test_a_busy_memory_bound_package_is_capped() -> None:
    c = choose_cap("cpu", _one("cpu-memory", 1.0), 165, 50, 76.0, 0.03, devices=2)
    assert c.capped and 50 <= c.pct_of_max < 100 and c.predicted_slowdown <= 0.03


def test_the_most_sensitive_work_on_a_shared_package_binds_the_cap() -> None:
    alone = choose_cap("cpu", _one("cpu-memory", 0.8), 165, 50, 0.0, 0.03, devices=2)
    shared = choose_cap("cpu", [*_one("cpu-memory", 0.8), Work("job-2", "cpu-compute", KIND_PRIORS["cpu-compute"], 0.2)],
                        165, 50, 0.0, 0.03, devices=2)
    assert shared.pct_of_max >= alone.pct_of_max
    assert not shared.capped or shared.driver.startswith("job-2")


@settings(deadline=None)  # no wall-clock gate: a loaded machine is not a failure
@given(st.sampled_from(sorted(KIND_PRIORS)), st.floats(0.0, 0.2), st.floats(0.0, 2000.0), st.floats(0.05, 1.0))
def test_the_choice_never_breaks_the_budget_or_the_range(kind: str, tau: float, other_w: float, share: float) -> None:
    prior = KIND_PRIORS[kind]
    device, max_w, min_w, ref = ("gpu", 400.0, 200.0, 310.0) if prior.device == "gpu" else ("cpu", 165.0, 50.0, 165.0)
    c = choose_cap(device, [Work("j", kind, prior, share)], max_w, min_w, other_w, tau, devices=2, ref_w=ref)
    assert min_w / max_w * 100 - 1e-9 <= c.pct_of_max <= ref / max_w * 100 + 1e-9
    assert c.predicted_slowdown <= tau + 1e-9
    assert c.predicted_saving >= 0.0


@settings(deadline=None)  # no wall-clock gate: a loaded machine is not a failure
@given(st.floats(0.0, 1.0), st.floats(50.0, 400.0), st.floats(50.0, 400.0))
def test_a_lower_limit_never_gives_more_power_or_speed(draw: float, a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    p_lo, r_lo = capmodel.gpu_board(lo, 400.0, draw)
    p_hi, r_hi = capmodel.gpu_board(hi, 400.0, draw)
    assert p_lo <= p_hi + 1e-9 and r_lo <= r_hi + 1e-9


def test_no_work_or_no_range_gives_the_reason() -> None:
    assert choose_cap("gpu", [], 400, 200, 0, 0.03, ref_w=310).driver == "no work on the device"
    assert choose_cap("cpu", _one("cpu-memory"), 0, 0, 0, 0.03).driver == "no cap range"
    assert capmodel.throughput(0.5, 1.0) == pytest.approx(0.5)
