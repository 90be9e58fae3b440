"""Per-GPU telemetry (``physics.gpusignals``): what a board running a job reports, as NVML and DCGM would."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.physics.gpu import Phase, board_operating_point
from joulie_simulator.physics.gpusignals import (
    QUIET,
    ActivityTraits,
    TelemetryNoise,
    board_signals,
    draw_traits,
    mean_compute_share,
)

H100 = builtin_profile("nvidia-h100-sxm-8gpu")
G = H100.physics.gpu or pytest.fail("the H100 profile has GPU physics")
TOP_MHZ = (H100.gpus or pytest.fail("the H100 profile has GPUs")).sm_clock_max_mhz
MAX_W = H100.gpus.max_w if H100.gpus else 700.0
TRAITS = ActivityTraits()
TRAINING = (Phase(1.0, 0.55, 0.85),)
DECODE = (Phase(1.0, 0.15, 0.45),)
SERVING = (Phase(0.15, 0.9, 0.95), Phase(0.85, 0.14, 0.45))


def _quiet(phases: tuple[Phase, ...], limit_w: float = MAX_W, lock: float = 1.0):  # type: ignore[no-untyped-def]
    return board_signals(G, TOP_MHZ, phases, limit_w, lock, TRAITS)


def test_a_memory_bound_job_shows_more_dram_and_less_tensor_activity_than_a_compute_bound_one() -> None:
    mem, comp = _quiet((Phase(1.0, 0.2, 0.7),)), _quiet((Phase(1.0, 0.9, 0.7),))
    assert mem.dram_active > comp.dram_active + 0.3
    assert comp.tensor_active > mem.tensor_active + 0.2
    assert mem.clock_ratio == comp.clock_ratio == 1.0  # uncapped: both at the top clock
    assert mem.sm_active == comp.sm_active == pytest.approx(TRAITS.busy * TRAITS.sm_fill)


def test_a_clock_lock_shows_in_the_clock_and_shifts_busy_time_toward_compute() -> None:
    free, locked = _quiet(TRAINING), _quiet(TRAINING, lock=0.6)
    assert locked.clock_ratio == pytest.approx(0.6)
    assert locked.sm_clock_mhz == pytest.approx(0.6 * TOP_MHZ) and locked.sm_clock_limit_mhz == TOP_MHZ
    # The compute-bound part takes longer at a lower clock: more tensor time, less DRAM time per busy second.
    assert locked.tensor_active > free.tensor_active and locked.dram_active < free.dram_active
    assert locked.power_w < free.power_w


def test_a_cap_throttles_the_prefill_bursts_and_the_reported_clock_is_their_time_weighted_mean() -> None:
    cap_w = 0.6 * MAX_W
    s = _quiet(SERVING, limit_w=cap_w)
    op = board_operating_point(G, SERVING, cap_w)
    assert op.clock_ratios[0] < 1.0 == op.clock_ratios[1]  # the decode steps draw less than the cap
    assert op.clock_ratios[0] < s.clock_ratio < 1.0
    assert s.power_w == pytest.approx(op.power_w)
    # A decode-only board under the same cap is not slowed at all.
    assert _quiet(DECODE, limit_w=cap_w).clock_ratio == 1.0


def test_the_power_reported_is_the_boards_own_where_the_emulator_gives_it() -> None:
    assert board_signals(G, TOP_MHZ, TRAINING, MAX_W, 1.0, TRAITS, power_w=412.0).power_w == 412.0


def test_each_job_has_its_own_activity_constants_spread_around_the_published_values() -> None:
    assert draw_traits(7, "job-1") == draw_traits(7, "job-1")  # the same job in every arm
    assert draw_traits(7, "job-1") != draw_traits(7, "job-2") != draw_traits(8, "job-2")
    drawn = [draw_traits(1, f"job-{i}") for i in range(400)]
    mb = [t.dram_memory_bound for t in drawn]
    cb = [t.dram_compute_bound for t in drawn]
    assert 0.72 < statistics.fmean(mb) < 0.78 and 0.05 < statistics.stdev(mb) < 0.09
    assert min(mb) >= 0.55 and max(mb) <= 0.92
    assert 0.12 < statistics.fmean(cb) < 0.18 and min(cb) >= 0.03 and max(cb) <= 0.35
    assert all(0.8 <= t.busy <= 1.0 and 0.6 <= t.sm_fill <= 1.0 and 0.2 <= t.tensor_use <= 0.9 for t in drawn)


def test_noisy_samples_scatter_around_the_quiet_ones_by_the_documented_sd_and_stay_in_range() -> None:
    rng = np.random.default_rng(3)
    noise = TelemetryNoise(phase_share=0.0)
    quiet = _quiet(TRAINING, limit_w=0.7 * MAX_W)
    got = [board_signals(G, TOP_MHZ, TRAINING, 0.7 * MAX_W, 1.0, TRAITS, rng, noise) for _ in range(2000)]
    power = [s.power_w for s in got]
    assert statistics.fmean(power) == pytest.approx(quiet.power_w, rel=0.005)
    expected_sd = float(np.hypot(noise.power_frac * quiet.power_w, noise.power_w))
    assert statistics.stdev(power) == pytest.approx(expected_sd, rel=0.1)
    dram = [s.dram_active for s in got]
    assert statistics.fmean(dram) == pytest.approx(quiet.dram_active, abs=0.003)
    assert statistics.stdev(dram) == pytest.approx(noise.activity, rel=0.1)
    for s in got:
        assert 0.0 <= s.utilization <= 1.0 and 0.0 <= s.sm_active <= 1.0 and 0.0 <= s.dram_active <= 1.0
        assert 0.0 < s.clock_ratio <= 1.0


def test_a_serving_jobs_phase_mix_varies_from_sample_to_sample_and_doubling_the_noise_doubles_the_scatter() -> None:
    def scatter(noise: TelemetryNoise) -> float:
        rng = np.random.default_rng(5)
        return statistics.stdev(
            board_signals(G, TOP_MHZ, SERVING, MAX_W, 1.0, TRAITS, rng, noise).tensor_active for _ in range(1500)
        )

    only_mix = TelemetryNoise(0.0, 0.0, 0.0, 0.0, 0.15)
    assert scatter(only_mix) > 0.005
    assert scatter(only_mix.scaled(2.0)) == pytest.approx(2 * scatter(only_mix), rel=0.2)
    assert board_signals(G, TOP_MHZ, SERVING, MAX_W, 1.0, TRAITS, np.random.default_rng(5), QUIET) == _quiet(SERVING)


def test_the_truth_an_estimate_is_compared_with_is_the_share_weighted_compute_share() -> None:
    assert mean_compute_share(SERVING) == pytest.approx(0.15 * 0.9 + 0.85 * 0.14)
    assert mean_compute_share(TRAINING) == 0.55



def test_a_repeated_operating_point_reads_as_one_computed_afresh_and_another_physics_is_its_own() -> None:
    from joulie_simulator.physics import gpusignals

    def samples() -> list[tuple[float, ...]]:
        rng = np.random.default_rng(7)
        out: list[tuple[float, ...]] = []
        for phases, limit, lock in ((TRAINING, MAX_W, 1.0), (DECODE, 300.0, 0.8), (SERVING, 400.0, 1.0), (TRAINING, MAX_W, 1.0)):
            s = board_signals(G, TOP_MHZ, phases, limit, lock, TRAITS, rng, TelemetryNoise(), power_w=500.0)
            q = board_signals(G, TOP_MHZ, phases, limit, lock, TRAITS)
            out.append((s.power_w, s.sm_clock_mhz, s.sm_active, s.tensor_active, s.dram_active, q.sm_clock_mhz, q.power_w))
        return out

    gpusignals._OPERATING.clear()
    fresh = samples()
    assert samples() == fresh  # the second pass reads its points from the memo: the same floats
    gpusignals._OPERATING.clear()
    board_signals(G, TOP_MHZ, SERVING, 400.0, 1.0, TRAITS, np.random.default_rng(1), TelemetryNoise())
    assert not gpusignals._OPERATING  # a jittered mix is drawn anew each sample: nothing kept
    # Another physics (a variant drawing half the power) under the same phases and limit is its own point.
    half = G.model_copy(update={"natural_max_w": G.natural_max_w * 0.5})
    assert board_signals(half, TOP_MHZ, TRAINING, MAX_W, 1.0, TRAITS).power_w < fresh[0][6]
