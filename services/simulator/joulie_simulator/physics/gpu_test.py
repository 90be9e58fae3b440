"""A board's operating point under a power limit and an SM clock lock, with serving phases
(``physics.gpu.board_operating_point``): properties for any board, any phases, any setting."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulie_hwprofiles.schema import GpuPhysics, builtin_profile
from joulie_simulator.physics import gpu as physics_gpu
from joulie_simulator.physics.gpu import Phase, board_operating_point, natural_board_power_w
from joulie_simulator.physics.speed import throughput

H100 = builtin_profile("nvidia-h100-sxm-8gpu").physics.gpu or pytest.fail("the H100 profile has GPU physics")

boards = st.builds(
    GpuPhysics, source=st.just("assumed:test"), idle_w=st.floats(0, 150), natural_max_w=st.floats(200, 1000),
    clock_power_exponent=st.floats(1.0, 3.5), fixed_dynamic_frac=st.floats(0, 0.5), min_clock_ratio=st.floats(0.05, 0.5),
    vmin_clock_ratio=st.floats(0.2, 0.95),
)
phase = st.builds(Phase, share=st.floats(0.01, 1.0), compute_share=st.floats(0, 1), draw=st.floats(0, 1))
mixes = st.lists(phase, min_size=1, max_size=3).map(tuple)
limits = st.floats(0, 1200)
locks = st.floats(0.01, 1.5)


@settings(max_examples=300, deadline=None)
@given(g=boards, u=st.floats(0, 1), c=st.floats(0, 1), limit=limits)
def test_one_phase_and_no_lock_is_exactly_capped_board_and_throughput(g: GpuPhysics, u: float, c: float, limit: float) -> None:
    """The interface: (Phase(1.0, c, u),) with lock_ratio 1 gives today's numbers bit for bit (goldens)."""
    op = board_operating_point(g, (Phase(1.0, c, u),), limit)
    power, r = physics_gpu.capped_board(g, u, limit)
    assert (op.power_w, op.clock_ratios, op.throughput) == (power, (r,), throughput(r, c))


@settings(max_examples=300, deadline=None)
@given(g=boards, work=mixes, a=limits, b=limits, lock=locks)
def test_a_lower_cap_never_raises_throughput_nor_any_phases_clock_or_power(
    g: GpuPhysics, work: tuple[Phase, ...], a: float, b: float, lock: float
) -> None:
    lo, hi = board_operating_point(g, work, min(a, b), lock), board_operating_point(g, work, max(a, b), lock)
    assert lo.throughput <= hi.throughput + 1e-12
    assert all(x <= y + 1e-12 for x, y in zip(lo.clock_ratios, hi.clock_ratios, strict=True))
    assert all(x <= y + 1e-9 for x, y in zip(lo.phase_powers_w, hi.phase_powers_w, strict=True))
    if len(work) == 1:
        assert lo.power_w <= hi.power_w + 1e-9


@settings(max_examples=300, deadline=None)
@given(g=boards, work=mixes, limit=limits, a=locks, b=locks)
def test_a_lower_lock_never_raises_throughput_nor_any_phases_clock_or_power(
    g: GpuPhysics, work: tuple[Phase, ...], limit: float, a: float, b: float
) -> None:
    lo, hi = board_operating_point(g, work, limit, min(a, b)), board_operating_point(g, work, limit, max(a, b))
    assert lo.throughput <= hi.throughput + 1e-12
    assert all(x <= y + 1e-12 for x, y in zip(lo.clock_ratios, hi.clock_ratios, strict=True))
    assert all(x <= y + 1e-9 for x, y in zip(lo.phase_powers_w, hi.phase_powers_w, strict=True))
    if len(work) == 1:
        assert lo.power_w <= hi.power_w + 1e-9


@settings(max_examples=300, deadline=None)
@given(g=boards, work=mixes, limit=limits, lock=locks)
def test_power_and_throughput_stay_within_their_bounds(g: GpuPhysics, work: tuple[Phase, ...], limit: float, lock: float) -> None:
    """Power within [idle, the highest phase's natural draw] (one phase: its natural draw); throughput in (0, 1]."""
    op = board_operating_point(g, work, limit, lock)
    top = max(physics_gpu.natural_power_w(g, p.draw) for p in work)
    assert g.idle_w - 1e-9 <= op.power_w <= top + 1e-9
    assert 0.0 < op.throughput <= 1.0 + 1e-12
    free = board_operating_point(g, work, 1e9)
    assert free.throughput == pytest.approx(1.0) and free.power_w == pytest.approx(natural_board_power_w(g, work))


@settings(max_examples=300, deadline=None)
@given(g=boards, work=mixes, limit=limits, above=st.floats(0, 0.5))
def test_a_lock_at_or_above_the_clock_the_work_runs_at_changes_nothing(
    g: GpuPhysics, work: tuple[Phase, ...], limit: float, above: float
) -> None:
    free = board_operating_point(g, work, limit)
    locked = board_operating_point(g, work, limit, max(free.clock_ratios) + above)
    assert locked == free


@settings(max_examples=300, deadline=None)
@given(g=boards, work=mixes, limit=limits, lock=locks)
def test_cap_and_lock_together_run_each_phase_at_the_lower_of_the_two_clocks(
    g: GpuPhysics, work: tuple[Phase, ...], limit: float, lock: float
) -> None:
    both = board_operating_point(g, work, limit, lock)
    capped = board_operating_point(g, work, limit)
    locked = board_operating_point(g, work, 1e9, lock)
    for i in range(len(work)):
        assert both.clock_ratios[i] == min(capped.clock_ratios[i], locked.clock_ratios[i])
        lower = capped if capped.clock_ratios[i] <= locked.clock_ratios[i] else locked
        assert both.phase_powers_w[i] == pytest.approx(lower.phase_powers_w[i])


def test_a_cap_throttles_the_prefill_bursts_and_leaves_a_low_draw_decode_alone() -> None:
    """Aggregated serving on an H100 SXM (prefill 15.5 % of the time, u 0.95, c 0.90; decode at a
    small batch, u 0.12, c 0.14) under 450 W: prefill's clock falls, decode's stays at the maximum;
    a 1200 MHz lock slows both."""
    work = (Phase(0.155, 0.90, 0.95), Phase(0.845, 0.143, 0.12))
    capped = board_operating_point(H100, work, 450.0)
    assert capped.clock_ratios[0] < 0.85 and capped.clock_ratios[1] == 1.0
    assert 0.9 < capped.throughput < 1.0
    locked = board_operating_point(H100, work, 700.0, 1200.0 / 1980.0)
    assert locked.clock_ratios == (1200.0 / 1980.0,) * 2 and locked.throughput < capped.throughput


def test_slowing_a_short_burst_can_raise_the_boards_mean_power() -> None:
    """Why the mix's power is not monotone in the cap: a compute-bound burst (5 % of the time) beside
    an idle-like phase, capped deep, takes far longer at a draw still above the other phase's, so the
    board spends more of its time there: the mean power rises though every phase's power falls."""
    work = (Phase(0.05, 1.0, 1.0), Phase(0.95, 0.0, 0.0))
    mid, deep = board_operating_point(H100, work, 450.0), board_operating_point(H100, work, 250.0)
    assert deep.power_w > mid.power_w and all(d <= m for d, m in zip(deep.phase_powers_w, mid.phase_powers_w, strict=True))
    assert deep.throughput < mid.throughput


def test_an_empty_mix_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one phase"):
        board_operating_point(H100, (), 700.0)
