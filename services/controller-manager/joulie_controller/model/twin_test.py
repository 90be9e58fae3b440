"""The twin model: reference vectors, and properties over any input (ranges, monotonicity, neutrality)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulie_controller.model.twin import (
    NEUTRAL_COOLING_STRESS,
    NEUTRAL_HEADROOM,
    HardwareBudget,
    PowerTrend,
    TwinInput,
    ambient_multiplier,
    compute,
    psu_stress_score,
    scores,
)

EPYC_H100 = HardwareBudget(cpu_max_w_per_socket=360, cpu_sockets=2, gpu_max_w_per_gpu=400, gpu_count=4)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_documented_worked_example_eco_node() -> None:
    out = compute(TwinInput(EPYC_H100, "eco", cpu_cap_pct=60, gpu_cap_pct=60, measured_node_power_w=1160, ambient_c=25))
    assert (out.cpu_tdp_w, out.gpu_tdp_w, out.node_tdp_w) == (720, 1600, 2320)
    assert out.node_capped_w == pytest.approx(1392)
    assert out.cooling_stress_score == pytest.approx(55.6, abs=0.05)
    assert out.headroom_score == pytest.approx(16.7, abs=0.05)
    assert out.estimated_pue == pytest.approx(1.24, abs=0.005)
    over = compute(TwinInput(EPYC_H100, "eco", cpu_cap_pct=60, gpu_cap_pct=60, measured_node_power_w=1600))
    assert over.headroom_score == pytest.approx(-14.9, abs=0.05)


def test_eight_gpu_node_vector() -> None:
    hw = HardwareBudget(350, 2, 700, 8)
    out = compute(TwinInput(hw, "eco", cpu_cap_pct=60, gpu_cap_pct=40, measured_node_power_w=1500))
    assert (out.cpu_tdp_w, out.gpu_tdp_w, out.node_tdp_w) == (700, 5600, 6300)
    assert (out.cpu_capped_w, out.gpu_capped_w, out.node_capped_w) == pytest.approx((420, 2240, 2660))
    assert out.headroom_score == pytest.approx(43.6, abs=0.05)


@pytest.mark.parametrize(("ambient", "cooling"), [(20.0, 50.0), (45.0, 100.0), (None, 50.0), (30.0, 62.5)])
def test_cooling_stress_follows_ambient(ambient: float | None, cooling: float) -> None:
    out = compute(TwinInput(HardwareBudget(350, 2), "performance", measured_node_power_w=350, ambient_c=ambient))
    assert out.cooling_stress_score == pytest.approx(cooling)


@pytest.mark.parametrize(("ambient", "mult"), [(None, 1.0), (15, 0.909), (20, 1.0), (25, 1.111), (30, 1.25),
                                               (40, 1.667), (45, 2.0), (60, 2.0), (0, 0.714)])
def test_ambient_multiplier_table(ambient: float | None, mult: float) -> None:
    assert ambient_multiplier(ambient) == pytest.approx(mult, abs=0.001)


def test_psu_stress_prefers_rack_and_saturates() -> None:
    assert psu_stress_score(0, 1e9) == 100
    assert psu_stress_score(0, 30_000) == pytest.approx(60)
    assert psu_stress_score(10_000, 40_000) == pytest.approx(20)
    assert psu_stress_score(0, 0) == 0


def test_unknown_hardware_and_missing_power_are_neutral() -> None:
    unknown = compute(TwinInput(HardwareBudget(), "performance", measured_node_power_w=500))
    assert (unknown.headroom_score, unknown.cooling_stress_score) == (NEUTRAL_HEADROOM, NEUTRAL_COOLING_STRESS)
    unmeasured = compute(TwinInput(EPYC_H100, "performance", measured_node_power_w=None))
    assert (unmeasured.headroom_score, unmeasured.cooling_stress_score) == (NEUTRAL_HEADROOM, NEUTRAL_COOLING_STRESS)


@pytest.mark.parametrize("bad", [float("nan"), -5.0, float("inf")])
def test_garbage_power_sample_counts_as_no_data(bad: float) -> None:
    out = compute(TwinInput(EPYC_H100, "performance", measured_node_power_w=bad))
    assert (out.headroom_score, out.cooling_stress_score) == (NEUTRAL_HEADROOM, NEUTRAL_COOLING_STRESS)


def test_caps_of_zero_or_less_mean_uncapped() -> None:
    out = compute(TwinInput(EPYC_H100, "eco", cpu_cap_pct=0, gpu_cap_pct=-3))
    assert (out.cpu_pct, out.gpu_pct) == (100, 100)
    assert out.node_capped_w == out.node_tdp_w


@pytest.mark.parametrize(("profile", "draining", "cls"), [("eco", False, "eco"), ("performance", False, "performance"),
                                                          ("eco", True, "draining"), ("turbo", False, "unknown")])
def test_schedulable_class(profile: str, draining: bool, cls: str) -> None:
    assert compute(TwinInput(EPYC_H100, profile, draining=draining)).schedulable_class == cls


def test_trend_over_five_minutes() -> None:
    trend = PowerTrend()
    assert trend.add(T0, 100) == 0
    assert trend.add(T0 + timedelta(seconds=3), 200) == 0  # under 0.1 min apart
    assert trend.add(T0 + timedelta(minutes=2), 300) == pytest.approx(100)
    # The first samples fall out of the window: slope between minute 2 and minute 6.
    assert trend.add(T0 + timedelta(minutes=6), 100) == pytest.approx(-50)


watts = st.floats(min_value=0, max_value=20_000, allow_nan=False)
pct = st.floats(min_value=-10, max_value=150, allow_nan=False)
hardware = st.builds(HardwareBudget, st.floats(0, 1000), st.integers(0, 4), st.floats(0, 1500), st.integers(0, 16))
ambients = st.one_of(st.none(), st.floats(-20, 70, allow_nan=False))


@settings(deadline=None)  # no wall-clock gate: a loaded machine is not a failure
@given(hardware, pct, pct, st.one_of(st.none(), watts), ambients, watts, watts)
def test_scores_stay_in_their_ranges(hw: HardwareBudget, cpu: float, gpu: float, measured: float | None,
                                     ambient: float | None, rack: float, cluster: float) -> None:
    out = compute(TwinInput(hw, "eco", cpu_cap_pct=cpu, gpu_cap_pct=gpu, measured_node_power_w=measured,
                            ambient_c=ambient, rack_power_w=rack, cluster_power_w=cluster))
    assert out.headroom_score <= 100
    assert 0 <= out.cooling_stress_score <= 100
    assert 0 <= out.psu_stress_score <= 100
    assert 1.05 <= out.estimated_pue <= 1.40
    assert 0 < out.cpu_pct <= 100 and 0 < out.gpu_pct <= 100
    assert out.node_capped_w <= out.node_tdp_w + 1e-9


@settings(deadline=None)  # no wall-clock gate: a loaded machine is not a failure
@given(hardware, pct, pct, st.one_of(st.none(), watts, st.sampled_from((float("nan"), -1.0))), ambients, watts, watts)
def test_the_scores_alone_are_the_whole_models_scores(hw: HardwareBudget, cpu: float, gpu: float,
                                                     measured: float | None, ambient: float | None, rack: float,
                                                     cluster: float) -> None:
    inp = TwinInput(hw, "eco", cpu_cap_pct=cpu, gpu_cap_pct=gpu, measured_node_power_w=measured, ambient_c=ambient,
                    rack_power_w=rack, cluster_power_w=cluster)
    out = compute(inp)
    assert scores(inp) == (out.headroom_score, out.cooling_stress_score, out.psu_stress_score, out.estimated_pue)


@settings(deadline=None)  # no wall-clock gate: a loaded machine is not a failure
@given(hardware, watts, watts, ambients)
def test_more_power_never_means_more_headroom_or_less_stress(hw: HardwareBudget, a: float, b: float,
                                                             ambient: float | None) -> None:
    lo, hi = sorted((a, b))
    low = compute(TwinInput(hw, "performance", measured_node_power_w=lo, ambient_c=ambient))
    high = compute(TwinInput(hw, "performance", measured_node_power_w=hi, ambient_c=ambient))
    assert high.headroom_score <= low.headroom_score
    assert high.cooling_stress_score >= low.cooling_stress_score


@settings(deadline=None)  # no wall-clock gate: a loaded machine is not a failure
@given(hardware, watts, st.floats(0, 70), st.floats(0, 70))
def test_warmer_air_never_lowers_cooling_stress(hw: HardwareBudget, power: float, t1: float, t2: float) -> None:
    cool, warm = sorted((t1, t2))
    a = compute(TwinInput(hw, "eco", measured_node_power_w=power, ambient_c=cool))
    b = compute(TwinInput(hw, "eco", measured_node_power_w=power, ambient_c=warm))
    assert b.cooling_stress_score >= a.cooling_stress_score


@settings(deadline=None)  # no wall-clock gate: a loaded machine is not a failure
@given(hardware, pct, pct, pct)
def test_a_tighter_cap_never_raises_the_budget(hw: HardwareBudget, cpu: float, lower: float, gpu: float) -> None:
    if lower <= 0 or cpu <= 0:
        return
    tight, loose = sorted((cpu, lower))
    assert hw.capped_w(tight, gpu) <= hw.capped_w(loose, gpu) + 1e-9
