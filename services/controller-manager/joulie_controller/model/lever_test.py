"""The GPU lever: a cap, a clock lock or both, the lowest energy per unit of work within each work's
own slowdown budget."""

from __future__ import annotations

import pytest

from joulie_controller.model.capmodel import GPU_MODEL, KindPrior, Work, choose_cap, slowdown
from joulie_controller.model.lever import choose_gpu_lever, evaluate_locked, gpu_board_locked, lock_ratios

# H100 NVL: 400 W maximum, 200 W lowest cap, 310 W default limit; the rest of the node 200 W.
MAX_W, MIN_W, REF_W, OTHER_W = 400.0, 200.0, 310.0, 200.0
DECODE = KindPrior("gpu", 0.1, 0.3)
"""Memory-bound serving: 10 % of its time follows the clock, it draws 30 % of the dynamic range."""
TRAIN = KindPrior("gpu", 0.95, 0.9)


def _energy(works: list[Work], cap_pct: float, lock_pct: float | None) -> float:
    o = evaluate_locked(works, MAX_W, MAX_W * cap_pct / 100.0, (lock_pct or 100.0) / 100.0)
    return (OTHER_W + o.power_w) / o.rate(works)


def test_a_lock_follows_the_device_model_and_the_lower_clock_wins() -> None:
    idle = GPU_MODEL.idle_frac * MAX_W
    power, r = gpu_board_locked(MAX_W, MAX_W, 0.3, 0.5)
    f, k = GPU_MODEL.fixed_dynamic_frac, GPU_MODEL.clock_power_exponent
    assert r == 0.5 and power == pytest.approx(idle + (MAX_W - idle) * 0.3 * (f + (1 - f) * 0.5**k))
    # A cap deeper than the lock sets the clock; a lock deeper than the cap does.
    _, r_cap = gpu_board_locked(220.0, MAX_W, 0.9, 0.95)
    assert r_cap < 0.95
    assert gpu_board_locked(220.0, MAX_W, 0.9, 0.3)[1] == 0.3
    assert lock_ratios()[0] == 1.0 and lock_ratios()[-1] == pytest.approx(GPU_MODEL.min_clock_ratio)
    assert lock_ratios()[1] == 0.975


def test_memory_bound_low_draw_work_gets_a_lock_where_no_cap_binds_and_saves_energy() -> None:
    works = [Work("decode", "gpu-inference", DECODE, 4)]
    cap = choose_cap("gpu", works, MAX_W, MIN_W, OTHER_W, 0.03, 8, REF_W)
    assert not cap.capped  # its draw (161 W) is under the lowest cap the board takes (200 W)
    lever = choose_gpu_lever(works, MAX_W, MIN_W, OTHER_W, 0.03, REF_W)
    assert lever.lever == "lock" and lever.lock_pct is not None and lever.lock_pct < 100.0
    assert 0 < lever.predicted_slowdown <= 0.03
    assert lever.predicted_slowdown == pytest.approx(slowdown(lever.lock_pct / 100.0, 0.1))
    saving = 1 - _energy(works, lever.pct_of_max, lever.lock_pct) / _energy(works, REF_W / MAX_W * 100, None)
    assert saving == pytest.approx(lever.predicted_saving) and saving > 0.05


def test_compute_bound_work_stays_fast() -> None:
    works = [Work("train", "gpu-training", TRAIN, 4), Work("decode", "gpu-inference", DECODE, 4)]
    lever = choose_gpu_lever(works, MAX_W, MIN_W, OTHER_W, 0.1, REF_W)
    assert lever.lever == "none" and lever.lock_pct is None and not lever.capped
    assert "train (gpu-training) is not capped" in lever.driver


def test_an_owners_10_percent_budget_allows_a_deeper_setting_than_3_percent() -> None:
    at3 = choose_gpu_lever([Work("decode", "k", DECODE, 4, tau=0.03)], MAX_W, MIN_W, OTHER_W, 0.03, REF_W)
    at10 = choose_gpu_lever([Work("decode", "k", DECODE, 4, tau=0.10)], MAX_W, MIN_W, OTHER_W, 0.03, REF_W)
    assert at3.lock_pct is not None and at10.lock_pct is not None and at10.lock_pct < at3.lock_pct
    assert at3.predicted_slowdown <= 0.03 < at10.predicted_slowdown <= 0.10
    assert at10.predicted_saving > at3.predicted_saving


def test_each_work_is_held_to_its_own_budget_on_shared_boards() -> None:
    strict = Work("chat", "gpu-inference", KindPrior("gpu", 0.3, 0.5), 4, tau=0.01)
    loose = Work("batch", "gpu-inference", DECODE, 4, tau=0.10)
    lever = choose_gpu_lever([strict, loose], MAX_W, MIN_W, OTHER_W, 0.03, REF_W)
    assert lever.slowdowns[0] <= 0.01 + 1e-9 and lever.slowdowns[1] <= 0.10 + 1e-9
    alone = choose_gpu_lever([loose], MAX_W, MIN_W, OTHER_W, 0.03, REF_W)
    assert alone.lock_pct is not None and (lever.lock_pct or 100.0) > alone.lock_pct  # the strict one holds it up


def test_a_cap_is_still_chosen_where_it_saves_more_than_a_lock() -> None:
    # High-draw, mid compute share: the board sits at its default limit, a cap trims the top of the curve.
    works = [Work("infer", "gpu-inference", KindPrior("gpu", 0.26, 0.7), 8)]
    lever = choose_gpu_lever(works, MAX_W, MIN_W, OTHER_W, 0.03, REF_W)
    cap = choose_cap("gpu", works, MAX_W, MIN_W, OTHER_W, 0.03, 8, REF_W)
    assert lever.lever != "none" and lever.predicted_saving >= cap.predicted_saving - 1e-9
    assert lever.predicted_slowdown <= 0.03 + 1e-9


def test_the_lock_in_force_is_kept_while_it_is_nearly_as_good_and_within_budget() -> None:
    works = [Work("decode", "gpu-inference", DECODE, 4)]
    best = choose_gpu_lever(works, MAX_W, MIN_W, OTHER_W, 0.03, REF_W)
    assert best.lock_pct is not None
    shallower = best.lock_pct + 2.5  # one step up: within budget, a little less saving
    held = choose_gpu_lever(works, MAX_W, MIN_W, OTHER_W, 0.03, REF_W, current_lock_pct=shallower)
    assert held.lock_pct == shallower and held.predicted_saving >= best.predicted_saving - 0.02
    deeper = best.lock_pct - 2.5  # one step down: over the budget, so given up
    assert (
        choose_gpu_lever(works, MAX_W, MIN_W, OTHER_W, 0.03, REF_W, current_lock_pct=deeper).lock_pct == best.lock_pct
    )
    far = best.lock_pct + 5.0  # two steps from the best: moved
    assert choose_gpu_lever(works, MAX_W, MIN_W, OTHER_W, 0.03, REF_W, current_lock_pct=far).lock_pct == best.lock_pct


def test_with_the_nodes_cap_fixed_only_the_groups_lock_is_chosen_and_compute_bound_work_keeps_the_cap() -> None:
    decode = [Work("decode", "gpu-inference", DECODE, 4)]
    fixed = choose_gpu_lever(decode, MAX_W, MIN_W, OTHER_W, 0.03, REF_W, cap_pct=70.0)
    assert fixed.pct_of_max == 70.0 and fixed.capped and fixed.lock_pct is not None
    assert 0 < fixed.predicted_slowdown <= 0.03
    train = choose_gpu_lever([Work("train", "gpu-training", TRAIN, 4)], MAX_W, MIN_W, OTHER_W, 0.03, REF_W, cap_pct=70.0)
    assert train.pct_of_max == 70.0 and train.lock_pct is None and "is not locked" in train.driver
