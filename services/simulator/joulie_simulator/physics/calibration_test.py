"""The device models against published measurements (docs/physics-calibration.md), and the shape
every model curve must have whatever its parameters."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulie_hwprofiles.schema import GpuPhysics, builtin_profile
from joulie_simulator.physics import calibration as cal
from joulie_simulator.physics import calibration_serving as cs
from joulie_simulator.physics import cpu as physics_cpu
from joulie_simulator.physics import gpu as physics_gpu
from joulie_simulator.physics.calibration import GPU_POINTS, ZEUS_SWEEPS, CapSweep, GpuPoint, energy_optimal_cap, rms_pp
from joulie_simulator.physics.calibration_serving import A7_DECODE, A7_PREFILL
from joulie_simulator.physics.curve import kinds_for, point, sweep_pcts
from joulie_simulator.physics.speed import throughput

XEON = builtin_profile("intel-xeon-2s-rapl")
H100 = builtin_profile("nvidia-h100-sxm-8gpu")
XEON_CF = XEON.cpufreq or pytest.fail("the Xeon profile has cpufreq")


@pytest.mark.parametrize("p", GPU_POINTS, ids=lambda p: p.name)
def test_gpu_capping_matches_the_published_measurement(p: GpuPoint) -> None:
    time_pct, energy_pct = p.model()
    assert time_pct == pytest.approx(p.measured_time_pct, abs=p.tol_time_pp)
    assert energy_pct == pytest.approx(p.measured_energy_pct, abs=p.tol_energy_pp)


def test_rapl_runs_at_the_best_clock_that_meets_the_limit() -> None:
    """Zhang & Hoffmann (UChicago TR-2014-11) measure RAPL at 90/86/<65 % of the best performance
    *any configuration* reaches under the same limit; the model takes RAPL to be that best at the
    DVFS level (it picks the highest clock meeting the limit), so at every limit no clock that
    meets it does better."""
    cpu, u, busy, lo = XEON.physics.cpu, 0.9, 1.0, 1000 / 3100
    for cap_w in (150.0, 120.0, 90.0, 70.0):
        power, r = physics_cpu.capped_package(cpu, u, busy, lo, cap_w)
        assert power <= cap_w + 1e-9
        better = [x / 1000 for x in range(int(lo * 1000), 1001) if x / 1000 > r + 1e-3]
        assert all(physics_cpu.package_power_w(cpu, u, x) > cap_w for x in better)


@pytest.mark.parametrize("cap_pct", [90.0, 80.0, 70.0, 60.0, 50.0])
def test_compute_bound_cpu_work_slows_about_in_proportion_to_the_package_limit(cap_pct: float) -> None:
    """Zhang & Hoffmann: compute-bound codes slow almost in proportion to the limit, memory-bound
    ones much less. Proportion: the limit over the package's uncapped draw (tolerance 8 pp)."""
    comp, mem = point(XEON, "cpu-compute", cap_pct), point(XEON, "cpu-memory", cap_pct)
    assert comp.throughput <= min(1.0, comp.cap_w / comp.uncapped_power_w) + 0.08
    if mem.cap_w < mem.uncapped_power_w:
        assert mem.throughput >= comp.throughput + 0.1


def test_a_package_limit_saves_energy_with_little_loss_on_memory_bound_work() -> None:
    """Jelvani, Martin & Nagarakatte 2025 (arXiv 2506.16046, dual Xeon Scalable, SPEC CPU 2017): a
    package limit improves energy efficiency by up to 25 % with little performance loss. Model:
    some limit saves >= 10 % package energy per work for <= 10 % throughput, and no limit saves
    more than 30 % (25 % + 5 pp tolerance)."""
    pts = [point(XEON, k, pct) for k in ("cpu-compute", "cpu-memory") for pct in sweep_pcts(XEON, k)]
    assert any(p.energy_per_work <= 0.90 and p.throughput >= 0.90 for p in pts)
    assert min(p.energy_per_work for p in pts) >= 0.70


@pytest.mark.parametrize("profile", ["nvidia-h100-sxm-8gpu", "nvidia-h100-nvl-8gpu", "amd-instinct-mi300x-8gpu", "intel-xeon-2s-rapl"])
def test_throughput_and_power_never_rise_as_the_cap_falls(profile: str) -> None:
    prof = builtin_profile(profile)
    for kind in kinds_for(prof):
        pts = [point(prof, kind, pct) for pct in sweep_pcts(prof, kind, step_pct=2.5)]
        for hi, lo in itertools.pairwise(pts):
            assert lo.throughput <= hi.throughput + 1e-12 and lo.power_w <= hi.power_w + 1e-9, (kind, hi.cap_pct, lo.cap_pct)


@pytest.mark.parametrize("kind", ["gpu-inference", "cpu-memory"])
def test_memory_bound_work_has_its_energy_optimum_below_full_power(kind: str) -> None:
    prof = H100 if kind.startswith("gpu") else XEON
    pts = [point(prof, kind, pct) for pct in sweep_pcts(prof, kind)]
    best = min(pts, key=lambda p: p.energy_per_work)
    assert best.cap_pct < 100.0 and best.energy_per_work < 0.95


def test_a_cap_above_the_natural_draw_changes_nothing() -> None:
    """Above every phase's draw (aggregated serving: its prefill bursts draw 668 W of 700) nothing
    changes; at 90 % (630 W) the mean draw (470 W) is below the cap, but the bursts are throttled."""
    p = point(H100, "gpu-inference", 97.0)
    assert (p.throughput, p.power_w, p.energy_per_work) == (1.0, p.uncapped_power_w, 1.0)
    decode = point(H100, "gpu-inference-decode", 90.0)
    assert (decode.throughput, decode.power_w, decode.energy_per_work) == (1.0, decode.uncapped_power_w, 1.0)
    bursts = point(H100, "gpu-inference", 90.0)
    assert bursts.uncapped_power_w < bursts.cap_w and bursts.throughput < 1.0
    assert bursts.phase_clock_ratios[0] < 1.0 == bursts.phase_clock_ratios[1]


def test_a_cap_below_the_device_minimum_is_clamped_and_says_so() -> None:
    p = point(H100, "gpu-training", 10.0)
    assert p.clamped and p.cap_w == 200.0 and p.min_cap_pct == pytest.approx(200 / 7)
    assert not point(H100, "gpu-training", 50.0).clamped


boards = st.builds(
    GpuPhysics, source=st.just("assumed:test"), idle_w=st.floats(0, 150), natural_max_w=st.floats(200, 1000),
    clock_power_exponent=st.floats(1.0, 3.5), fixed_dynamic_frac=st.floats(0, 0.5), min_clock_ratio=st.floats(0.1, 0.5),
    vmin_clock_ratio=st.floats(0.2, 0.9),
)


@settings(max_examples=200, deadline=None)
@given(g=boards, u=st.floats(0.05, 1), c=st.floats(0, 1), a=st.floats(0, 1200), b=st.floats(0, 1200))
def test_any_board_loses_neither_speed_nor_watts_to_a_higher_limit(g: GpuPhysics, u: float, c: float, a: float, b: float) -> None:
    lo_w, hi_w = min(a, b), max(a, b)
    p_lo, r_lo = physics_gpu.capped_board(g, u, lo_w)
    p_hi, r_hi = physics_gpu.capped_board(g, u, hi_w)
    assert r_lo <= r_hi + 1e-12 and p_lo <= p_hi + 1e-9
    assert throughput(r_lo, c) <= throughput(r_hi, c) + 1e-12
    assert p_hi <= physics_gpu.natural_power_w(g, u) + 1e-9


@settings(max_examples=200, deadline=None)
@given(u=st.floats(0.05, 1), c=st.floats(0, 1), a=st.floats(0, 200), b=st.floats(0, 200))
def test_a_package_loses_neither_speed_nor_watts_to_a_higher_limit(u: float, c: float, a: float, b: float) -> None:
    cpu, lo_r = XEON.physics.cpu, 1000 / 3100
    busy = physics_cpu.busy_khz(cpu, XEON_CF, 3.9e6, u) / 3.1e6
    p_lo, r_lo = physics_cpu.capped_package(cpu, u, busy, lo_r, min(a, b))
    p_hi, r_hi = physics_cpu.capped_package(cpu, u, busy, lo_r, max(a, b))
    assert r_lo <= r_hi + 1e-12 and p_lo <= p_hi + 1e-9
    assert throughput(r_lo / busy, c) <= throughput(r_hi / busy, c) + 1e-12


@settings(max_examples=100, deadline=None)
@given(r=st.floats(0.05, 1), c1=st.floats(0, 1), c2=st.floats(0, 1))
def test_more_compute_bound_work_feels_a_slower_clock_more(r: float, c1: float, c2: float) -> None:
    lo, hi = min(c1, c2), max(c1, c2)
    assert throughput(r, hi) <= throughput(r, lo) + 1e-12
    assert throughput(r, 1.0) == pytest.approx(r) and throughput(r, 0.0) == 1.0


# Issue 34: deep-cap training against two generations' sweeps, serving under caps and clock locks.


def _v100_a40() -> tuple[tuple[CapSweep, ...], tuple[CapSweep, ...]]:
    return (tuple(s for s in ZEUS_SWEEPS if s.board is cal.V100_PCIE_BOARD),
            tuple(s for s in ZEUS_SWEEPS if s.board is cal.A40_BOARD))


@pytest.mark.parametrize(("cap_w", "tol_time_pp", "tol_energy_pp"), [(150, 5.0, 5.0), (125, 5.0, 5.0)])
def test_v100_resnet50_at_deep_caps_matches_the_zeus_sweep(cap_w: int, tol_time_pp: float, tol_energy_pp: float) -> None:
    """B1 (fitted, with the nine other sweeps): V100 250 W, ResNet-50, 150 W: +18 % time, -23 % energy;
    125 W: +44 %, -20 %. Before the refit the model gave +13 % / -23 % and +22 % / -31 %."""
    s = cal.sweep(cal.V100_PCIE_BOARD, "resnet50")
    (mt, me), (dt, de) = s.model(cap_w), s.measured(cap_w)
    assert mt == pytest.approx(dt, abs=tol_time_pp) and me == pytest.approx(de, abs=tol_energy_pp)


@pytest.mark.parametrize(("cap_w", "tol_time_pp", "tol_energy_pp"), [(200, 5.0, 10.0), (100, 10.0, 25.0)])
def test_a40_resnet50_a_second_generation_within_its_bands(cap_w: int, tol_time_pp: float, tol_energy_pp: float) -> None:
    """B1 (fitted), Ampere: A40 300 W, ResNet-50, 200 W: +7 % / -19 %; 100 W: +176 % / +42 % (the board
    cannot go below about 120 W). The energy bands are wide: at 200 W the A40 averages 178 W, 11 %
    below the limit (bursty draw the one-phase training model does not have), and at 100 W the
    model's floor draws less than the board's."""
    s = cal.sweep(cal.A40_BOARD, "resnet50")
    (mt, me), (dt, de) = s.model(cap_w), s.measured(cap_w)
    assert mt == pytest.approx(dt, abs=tol_time_pp) and me == pytest.approx(de, abs=tol_energy_pp)


def test_the_a40_at_half_its_tdp_is_the_known_gap() -> None:
    """At 150 W (50 % TDP) the A40 slows ResNet-50 by 64 % for +1 % energy; one shape for two
    generations gives +20-30 % and about -20 %: optimistic by about 40 pp (docs: known gaps). The
    bound keeps the gap from growing unnoticed."""
    (mt, me), (dt, de) = (s := cal.sweep(cal.A40_BOARD, "resnet50")).model(150), s.measured(150)
    assert 20.0 <= mt <= 30.0 and dt - mt <= 45.0 and de - me <= 25.0


def test_the_refit_brings_both_generations_closer_than_the_old_shape() -> None:
    """Root-mean-square gap over every capped run of the ten Zeus sweeps (time and energy, pp):
    V100 17.2 -> <= 12, A40 67.7 -> <= 31."""
    v100, a40 = _v100_a40()
    assert rms_pp(v100) <= 12.0 < rms_pp(v100, old=True)
    assert rms_pp(a40) <= 31.0 < rms_pp(a40, old=True)
    assert rms_pp(a40, old=True) >= 60.0


def test_the_energy_optimal_limit_is_the_measured_one_within_a_step_on_most_sweeps() -> None:
    """B1: the energy-optimal limit per sweep (V100 ResNet-50 150 W, A40 ResNet-50 200 W, ...); the
    model's is the measured one or the next 25 W step on at least 8 of the 10 sweeps."""
    near = [abs(energy_optimal_cap(s, True) - energy_optimal_cap(s, False)) <= 25 for s in ZEUS_SWEEPS]
    assert sum(near) >= 8, near
    assert energy_optimal_cap(cal.sweep(cal.V100_PCIE_BOARD, "resnet50"), True) == 150


@pytest.mark.parametrize("cap_w", sorted(A7_PREFILL))
def test_prefill_under_a_cap_follows_the_rtx3090_sweep(cap_w: int) -> None:
    """A7 (check, a second deep-cap source, Ampere): RTX 3090 prefill tokens/s at 300 ... 100 W over
    350 W = 0.94 / 0.85 / 0.60 / 0.26 / 0.14; the model (prefill c 0.90 at the board's 350 W) within 6 pp."""
    assert cs.a7_throughput("prefill", cap_w) == pytest.approx(A7_PREFILL[cap_w], abs=0.06)


@pytest.mark.parametrize("cap_w", [300, 250, 200, 150])
def test_decode_under_a_cap_stays_flat_until_a_deep_cap(cap_w: int) -> None:
    """A7 (check): RTX 3090 decode tokens/s 0.99 / 0.97 / 0.94 / 0.86 of 350 W's at 300 ... 150 W; the
    model (decode at its mean c and draw: the source does not report the decode's draw) within
    12 pp. Its collapse at 100 W (0.17) is not reproduced (the model gives 0.75: docs, known gaps)."""
    assert cs.a7_throughput("decode", cap_w) == pytest.approx(A7_DECODE[cap_w], abs=0.12)
    assert cs.a7_throughput("decode", 100) > 0.5


@pytest.mark.parametrize("draw_w", cs.A1_DECODE_DRAWS_W)
@pytest.mark.parametrize("cap_w", [300.0, 450.0, 700.0])
def test_a_cap_above_decodes_draw_never_binds(draw_w: float, cap_w: float) -> None:
    """A1 (check): H200 decode draws 137-300 W and no cap ever triggers: exactly no change."""
    ch = cs.a1_decode_cap(draw_w, cap_w)
    assert (ch.throughput, ch.energy_per_work) == (1.0, 1.0) and ch.power_w == pytest.approx(draw_w)


def test_a_clock_lock_recovers_up_to_a_third_of_decode_energy_at_little_throughput_loss() -> None:
    """A1 (check): a lock recovers "up to 32 %" of decode energy at "minimal" throughput loss. Model
    (H200, the best supported lock keeping >= 95 % throughput): at 300 W the saving spans 32 % across
    decode's c (its mean: about 25 %; its 5th percentile: about 41 %); at 137 W it is smaller."""
    hi_mean = 1.0 - cs.a1_decode_lock(300.0, cs.DECODE_C, 0.95)[1].energy_per_work
    hi_low_c = 1.0 - cs.a1_decode_lock(300.0, cs.DECODE_C_P5, 0.95)[1].energy_per_work
    lo_mean = 1.0 - cs.a1_decode_lock(137.0, cs.DECODE_C, 0.95)[1].energy_per_work
    assert 0.20 <= hi_mean <= cs.A1_LOCK_SAVING_PCT / 100 <= hi_low_c <= 0.45
    assert 0.05 <= lo_mean < hi_mean


def test_a100_locks_slow_decode_sub_linearly_and_prefills_energy_is_u_shaped() -> None:
    """A4 (check): A100, 1410 -> 1005 MHz (-28.7 %): time rises sub-linearly; energy is U-shaped with
    its minimum inside 1005-1410 MHz. Model: decode +6 % (< 40 %), prefill +36 % (< 40 %); prefill's
    minimum at about 1095 MHz; decode's lies below 1005 MHz (about 525 MHz: docs, known gaps)."""
    pre, dec = dict(cs.a4_lock_curve("prefill")), dict(cs.a4_lock_curve("decode"))
    linear = cs.A4_HIGH_MHZ / cs.A4_LOW_MHZ
    assert 1.0 < 1.0 / dec[cs.A4_LOW_MHZ].throughput < 1.0 / pre[cs.A4_LOW_MHZ].throughput < linear
    low = cs.energy_minimum_mhz(cs.a4_lock_curve("prefill"))
    assert cs.A4_LOW_MHZ < low < cs.A4_HIGH_MHZ
    assert pre[low].energy_per_work < min(pre[cs.A4_LOW_MHZ].energy_per_work, pre[cs.A4_HIGH_MHZ].energy_per_work)
    assert cs.energy_minimum_mhz(cs.a4_lock_curve("decode")) < cs.A4_LOW_MHZ


def test_every_nvidia_profile_uses_the_calibrated_shape_and_its_lowest_supported_clock() -> None:
    for name in ("nvidia-h100-sxm-8gpu", "nvidia-h100-sxm-4gpu", "nvidia-h100-nvl-8gpu", "nvidia-l40s-4gpu"):
        prof = builtin_profile(name)
        g, spec = prof.physics.gpu, prof.gpus
        assert g is not None and spec is not None
        assert (g.clock_power_exponent, g.fixed_dynamic_frac, g.vmin_clock_ratio) == (cal.K, cal.FIXED, cal.VMIN_CLOCK)
        assert g.min_clock_ratio == pytest.approx(spec.sm_clock_min_mhz / spec.sm_clock_max_mhz, abs=5e-4)


@pytest.mark.parametrize(("kind", "low", "high"), [("gpu-training", 0.03, 0.10), ("gpu-inference", 0.08, 0.18)])
def test_a_max_q_like_setting_saves_what_the_vendor_states(kind: str, low: float, high: float) -> None:
    """B3 (prediction, not a fit): NVIDIA's Max-Q profiles (a limit plus clocks) save "up to 15 %" of
    energy at >= 97 % performance (B200). The model's best limit-and-lock on an H100 SXM at >= 97 %
    throughput: training about 6 %, aggregated serving about 12 %."""
    m = cs.max_q(H100, kind)
    assert m.change.throughput >= 0.97 and low <= 1.0 - m.change.energy_per_work <= high
