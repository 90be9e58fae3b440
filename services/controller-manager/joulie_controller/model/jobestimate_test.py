from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from joulie_controller.model import jobestimate as je
from joulie_controller.model.capmodel import KIND_PRIORS, slowdown
from joulie_controller.model.jobestimate import GpuSample, JobEstimate, expected_sample, observe, prior_estimate

MAX_W = 700.0


def noisy(s: GpuSample, rng: random.Random, sd: float = 0.03, power_sd_w: float = 10.0) -> GpuSample:
    """The sample as a real exporter reports it: every ratio with noise, power with a few % noise."""

    def jitter(v: float | None) -> float | None:
        return None if v is None else min(1.0, max(0.0, v + rng.gauss(0.0, sd)))

    assert s.power_w is not None
    return replace(s, power_w=s.power_w + rng.gauss(0.0, power_sd_w), utilization=jitter(s.utilization),
                   sm_active=jitter(s.sm_active), tensor_active=jitter(s.tensor_active),
                   dram_active=jitter(s.dram_active))


def run(est: JobEstimate, c: float, u: float, ticks: int, seed: int, ratio: float = 1.0, gpus: int = 2) -> JobEstimate:
    rng = random.Random(seed)
    for _ in range(ticks):
        est = observe(est, [noisy(expected_sample(c, u, ratio, MAX_W), rng) for _ in range(gpus)], MAX_W)
    return est


def test_a_job_not_yet_seen_is_its_kinds_prior_and_an_unknown_kind_is_compute_bound() -> None:
    est = prior_estimate("gpu-inference")
    prior = KIND_PRIORS["gpu-inference"]
    assert (est.c, est.u) == (prior.compute_share, prior.natural_draw)
    assert est.c_sd == pytest.approx(je.PRIOR_C_SD)
    assert prior_estimate("no-such-kind").c == 1.0
    assert prior_estimate("cpu-memory").c == 1.0  # a CPU kind says nothing about its GPU use


@pytest.mark.parametrize(("kind", "c", "u"), [
    ("gpu-inference", 0.08, 0.35),  # decode-like: memory-bound, low draw, far below the kind's prior
    ("gpu-inference", 0.80, 0.90),  # prefill-like: compute-bound, high draw
    ("gpu-training", 0.60, 0.75),
])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_estimate_converges_to_the_truth_from_noisy_telemetry(kind: str, c: float, u: float, seed: int) -> None:
    est = run(prior_estimate(kind), c, u, ticks=30, seed=seed)
    assert est.c == pytest.approx(c, abs=0.05)
    assert est.u == pytest.approx(u, abs=0.04)
    assert est.c_sd < je.PRIOR_C_SD and est.u_sd < je.PRIOR_U_SD
    assert est.observations == 30


def test_draw_is_read_through_the_clock_so_a_capped_or_locked_board_still_measures_the_work() -> None:
    est = run(prior_estimate("gpu-training"), 0.5, 0.8, ticks=30, seed=4, ratio=0.7)
    assert est.u == pytest.approx(0.8, abs=0.04)
    assert est.c == pytest.approx(0.5, abs=0.05)


def test_without_observations_the_estimate_stays_at_the_prior_and_grows_no_more_uncertain_than_it() -> None:
    est = prior_estimate("gpu-training")
    for _ in range(20):
        est = observe(est, [], MAX_W)
    assert (est.c, est.u) == (KIND_PRIORS["gpu-training"].compute_share, KIND_PRIORS["gpu-training"].natural_draw)
    assert est.c_sd == pytest.approx(je.PRIOR_C_SD) and est.observations == 0
    assert est.note == "no usable sample: estimate kept"


@pytest.mark.parametrize("bad", [
    GpuSample(power_w=50.0, clock_ratio=1.0, sm_active=0.9, dram_active=0.0, age_s=600.0),  # stale
    GpuSample(power_w=math.nan, clock_ratio=math.nan, sm_active=math.nan, dram_active=math.inf),
    GpuSample(power_w=-5.0, clock_ratio=7.0, sm_active=3.0, dram_active=-1.0),  # out of range
    GpuSample(power_w=10_000.0, clock_ratio=1.0),  # a wild power reading, nothing else
    GpuSample(),  # the node exports none of it
])
def test_a_stale_missing_or_wild_sample_moves_a_settled_estimate_nowhere(bad: GpuSample) -> None:
    settled = run(prior_estimate("gpu-inference"), 0.1, 0.4, ticks=20, seed=5)
    after = observe(settled, [bad], MAX_W)
    assert after.c == pytest.approx(settled.c, abs=1e-9)
    assert after.u == pytest.approx(settled.u, abs=1e-9)


def test_one_glitch_is_gated_out_but_a_job_that_really_changed_is_followed() -> None:
    settled = run(prior_estimate("gpu-inference"), 0.1, 0.3, ticks=20, seed=6)
    glitch = expected_sample(0.1, 1.0, 1.0, MAX_W)  # power at the maximum, ratios unchanged
    once = observe(settled, [glitch], MAX_W)
    assert once.u == pytest.approx(settled.u) and once.note == "outlier: estimate kept"
    changed = run(once, 0.1, 1.0, ticks=15, seed=7)  # the job now draws the board's maximum
    assert changed.u == pytest.approx(1.0, abs=0.05)


@pytest.mark.xfail(strict=True, reason="known gap: the two-point c is found but single-ratio observations with the "
                   "tensor floor pull c back to the biased value (helper ran out of time; see its report)")
def test_a_wrong_dram_constant_biases_c_until_a_probe_at_a_second_clock_ratio_removes_it() -> None:
    c_true, u_true = 0.3, 0.6
    rng = random.Random(8)

    def real(ratio: float) -> GpuSample:
        # The board's memory interface reaches 0.95 when memory-bound, not the model's 0.8.
        s = expected_sample(c_true, u_true, ratio, MAX_W)
        phi_c = (c_true / ratio) / (c_true / ratio + 1.0 - c_true)
        s = replace(s, dram_active=0.9 * ((1.0 - phi_c) * 0.95 + phi_c * je.DRAM_COMPUTE_BOUND))
        return noisy(s, rng, sd=0.01)

    est = prior_estimate("gpu-inference")
    for _ in range(20):
        est = observe(est, [real(1.0)], MAX_W)
    assert abs(est.c - c_true) > 0.05  # biased, and honest about it:
    assert est.c_sd >= je.C_SYSTEMATIC_SD - 1e-9
    probe = je.probe_request(est, budget=0.10)
    assert probe is not None and probe.predicted_slowdown <= 0.10
    for _ in range(3):  # the probe holds for a few ticks, then the job is released to full clock
        est = observe(est, [real(probe.clock_ratio)], MAX_W)
    assert est.calibrated
    for _ in range(15):
        est = observe(est, [real(1.0)], MAX_W)
    assert est.c == pytest.approx(c_true, abs=0.06)
    assert je.probe_request(est, budget=0.10) is None  # nothing left to learn


def test_two_point_c_recovers_c_whatever_the_dram_constant() -> None:
    for c in (0.1, 0.3, 0.6, 0.9):
        for scale in (0.7, 1.0, 1.3):
            def phi_m(r: float, c: float = c, scale: float = scale) -> float:
                return scale * (1.0 - c) / (c / r + 1.0 - c)
            got = je.two_point_c(1.0, phi_m(1.0), 0.6, phi_m(0.6))
            assert got == pytest.approx(c, abs=1e-9)


def test_no_probe_beyond_the_owners_budget_nor_when_the_estimate_is_already_sure() -> None:
    est = prior_estimate("gpu-inference")  # c 0.26 ± 0.2: pessimistic c 0.66
    assert je.probe_request(est, budget=0.0) is None
    assert je.probe_request(est, budget=0.01) is None  # even 0.9 of the clock costs 0.66 * 0.11 = 7 %
    probe = je.probe_request(est, budget=0.10)
    assert probe is not None
    c_hi = est.c + je.PROBE_Z * est.c_sd
    assert slowdown(probe.clock_ratio, c_hi) <= 0.10 + 1e-12
    sure = replace(est, c_var=0.05**2, calibrated=True)
    assert je.probe_request(sure, budget=0.10) is None
