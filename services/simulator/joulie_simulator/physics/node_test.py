import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulie_hwprofiles.schema import CpuPhysics, GpuPhysics, Profile, builtin_profile, builtin_profile_names
from joulie_simulator.emulation.writes import apply_write
from joulie_simulator.physics import cpu as physics_cpu
from joulie_simulator.physics import gpu as physics_gpu
from joulie_simulator.physics import node as node_physics
from joulie_simulator.physics.gpu import Phase
from joulie_simulator.physics.model import Load, NodeState, initial_state

CPU = CpuPhysics(source="assumed:test", idle_pkg_w=40, max_pkg_w=165, freq_power_exponent=1.5, allcore_turbo_khz=3_100_000)
GPU = GpuPhysics(source="assumed:test", idle_w=58.6, natural_max_w=400, clock_power_exponent=2.5, fixed_dynamic_frac=0.15,
                 min_clock_ratio=0.2, vmin_clock_ratio=0.5)


@pytest.mark.parametrize(
    ("util", "ratio", "watts"),
    [(0.0, 1.0, 40.0), (1.0, 1.0, 165.0), (0.5, 1.0, 40 + 125 * 0.5), (1.0, 0.5, 40 + 125 * 0.5**1.5)],
)
def test_package_power_follows_the_documented_formula(util: float, ratio: float, watts: float) -> None:
    assert physics_cpu.package_power_w(CPU, util, ratio) == pytest.approx(watts)


def test_fewer_busy_cores_turbo_higher_and_each_draws_more() -> None:
    cf = builtin_profile("intel-xeon-2s-rapl").cpufreq
    assert cf is not None
    assert physics_cpu.turbo_khz(CPU, cf, 1.0) == 3_100_000 and physics_cpu.turbo_khz(CPU, cf, 0.0) == 3_900_000
    assert physics_cpu.busy_khz(CPU, cf, 2_000_000, 0.5) == 2_000_000  # the governor's target when below turbo
    quarter = physics_cpu.package_power_w(CPU, 0.25, physics_cpu.busy_khz(CPU, cf, math.inf, 0.25) / 3_100_000)
    assert quarter > 40 + 125 * 0.25  # a quarter of the cores at 3.7 GHz draw more than a quarter of TDP's dynamic part


def test_a_cap_lowers_the_busy_clock_until_power_meets_it() -> None:
    power, ratio = physics_cpu.capped_package(CPU, 1.0, 1.0, 1000 / 3100, 120.0)
    assert power == pytest.approx(120.0)
    assert physics_cpu.package_power_w(CPU, 1.0, ratio) == pytest.approx(120.0)
    assert ratio < 1.0


def test_a_cap_below_the_lowest_clock_is_not_met() -> None:
    lo = 1000 / 3100
    power, ratio = physics_cpu.capped_package(CPU, 1.0, 1.0, lo, 41.0)
    assert ratio == lo
    assert power == pytest.approx(physics_cpu.package_power_w(CPU, 1.0, lo)) and power > 41.0


@settings(deadline=None)  # no wall-clock gate: a loaded machine is not a failure
@given(util=st.floats(0, 1), cap=st.floats(1, 400), busy=st.floats(0.4, 1.2))
def test_capped_power_never_exceeds_natural_nor_the_cap_above_the_floor(util: float, cap: float, busy: float) -> None:
    power, eff = physics_cpu.capped_package(CPU, util, busy, 0.3, cap)
    assert power <= physics_cpu.package_power_w(CPU, util, busy) + 1e-9
    assert power <= max(cap, physics_cpu.package_power_w(CPU, util, 0.3)) + 1e-9
    assert 0.3 - 1e-12 <= eff <= busy + 1e-12


@settings(deadline=None)  # no wall-clock gate: a loaded machine is not a failure
@given(util=st.floats(0, 1), limit=st.floats(0, 800))
def test_a_gpu_board_stays_between_idle_and_its_limit_above_the_lowest_clock(util: float, limit: float) -> None:
    p = node_physics.gpu_board_power_w(GPU, util, limit)
    floor = physics_gpu.power_at_clock_w(GPU, util, GPU.min_clock_ratio)
    assert p >= GPU.idle_w - 1e-9
    assert p <= max(limit, floor) + 1e-9
    assert p <= physics_gpu.natural_power_w(GPU, util) + 1e-9


def test_a_gpu_limit_is_met_by_the_clock_it_leaves() -> None:
    power, r = physics_gpu.capped_board(GPU, 1.0, 250.0)
    assert power == pytest.approx(250.0) and 0.2 < r < 1.0
    assert physics_gpu.power_at_clock_w(GPU, 1.0, r) == pytest.approx(250.0)
    assert physics_gpu.capped_board(GPU, 0.5, 400.0) == (physics_gpu.natural_power_w(GPU, 0.5), 1.0)


def test_settling_is_first_order_and_reaches_the_target_after_tau() -> None:
    assert node_physics.settle(100, 200, 0.25, 1.0) == pytest.approx(125)
    assert node_physics.settle(100, 200, 1.0, 1.0) == 200
    assert node_physics.settle(100, 200, 0.1, 0) == 200


@pytest.mark.parametrize(("unit_nj", "range_uj"), [(61035, 262143328850), (15300, 65712999613), (15258, 65532610987)])
def test_max_energy_range_is_the_32_bit_register_in_microjoules(unit_nj: int, range_uj: int) -> None:
    assert node_physics.max_energy_range_uj(unit_nj) == range_uj


def test_an_energy_counter_wraps_at_its_range_and_a_reader_counts_the_wrap() -> None:
    rng = 1000
    before = node_physics.energy_counter_uj(990, 0.0, rng)
    after = node_physics.energy_counter_uj(990, 20e-6, rng)
    assert (before, after) == (990, 9)
    assert node_physics.counter_delta_uj(before, after, rng) == 19  # one µJ is lost at each wrap, as on hardware


@settings(deadline=None)  # no wall-clock gate: a loaded machine is not a failure
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_host_energy_never_goes_back_and_integrates_host_power(utils: list[float]) -> None:
    p = builtin_profile("nvidia-h100-nvl-8gpu")
    s = initial_state(p, "n")
    energy = 0.0
    for u in utils:
        s = replace(s, load=Load(cpu_util=u, gpu_util=(u,) * 8))
        prev = s.host_energy_j
        s = node_physics.step_node(p, s, 0.5)
        assert s.host_energy_j >= prev
        energy += s.host_power_w * 0.5
    assert s.host_energy_j == pytest.approx(energy)


def test_a_120_w_package_cap_holds_each_socket_and_the_node_is_above_twice_it() -> None:
    p = builtin_profile("intel-xeon-2s-rapl")
    s = replace(initial_state(p, "n"), load=Load(cpu_util=1.0))
    for zi, z in enumerate(s.zones):
        if z.kind == "package":
            s, out = apply_write(p, s, ("zone_limit", zi, 0), b"120000000\n")
            assert out.ok
    for _ in range(50):
        s = node_physics.step_node(p, s, 0.1)
    for sock in s.sockets:
        assert sock.power_w <= 120 * 1.01
        assert sock.eff_khz < 3_900_000
    assert s.host_power_w > 1.5 * 120  # the cap is per socket, not per node


def test_the_cap_settles_with_the_pl1_time_window() -> None:
    p = builtin_profile("intel-xeon-2s-rapl")
    s = node_physics.step_node(p, replace(initial_state(p, "n"), load=Load(cpu_util=1.0)), 5.0)
    assert s.sockets[0].power_w == pytest.approx(165)
    s, _ = apply_write(p, s, ("zone_limit", 0, 0), b"100000000")
    s = node_physics.step_node(p, s, 0.25)
    assert 100 < s.sockets[0].power_w < 165  # one quarter of the 0.999 s window later: partway
    assert math.isclose(s.sockets[1].power_w, 165, rel_tol=1e-6)


def test_a_gpu_limit_holds_board_power_after_settling() -> None:
    p = builtin_profile("nvidia-h100-nvl-8gpu")
    s = replace(initial_state(p, "n"), load=Load(gpu_util=(1.0,) * 8))
    s, out = apply_write(p, s, ("nvml_limit", 3, 0), b"250000")
    assert out.ok
    for _ in range(10):
        s = node_physics.step_node(p, s, 0.1)
    assert s.gpus[3].power_w <= 250 * 1.01
    assert s.gpus[2].power_w == pytest.approx(310)  # held at the 310 W limit the board boots with


def test_dvfs_lowers_an_energy_only_epyc() -> None:
    p = builtin_profile("amd-epyc-2s-energy-only")
    s = replace(initial_state(p, "n"), load=Load(cpu_util=1.0))
    s = node_physics.step_node(p, s, 1.0)
    full = s.sockets[0].power_w
    for i in range(len(s.pol_max_khz)):
        s, _ = apply_write(p, s, ("pol_max", i, 0), b"1500000")
    for _ in range(10):
        s = node_physics.step_node(p, s, 0.5)
    assert s.sockets[0].power_w < full
    assert s.sockets[0].eff_khz == pytest.approx(1_500_000)


def test_with_persistence_mode_off_an_idle_board_forgets_its_limit_but_a_busy_one_keeps_it() -> None:
    p = builtin_profile("nvidia-h100-sxm-8gpu")
    s = replace(initial_state(p, "n"), load=Load(gpu_util=(0.0, 1.0)))
    for i in (0, 1):
        s, _ = apply_write(p, s, ("nvml_limit", i, 0), b"300000")
    s = node_physics.step_node(p, s, 1.0)
    assert [g.limit_w for g in s.gpus[:2]] == [700, 300]


def test_node_state_fields_are_in_the_order_step_node_builds_them() -> None:
    from dataclasses import fields

    from joulie_simulator.physics.model import NodeState

    assert [f.name for f in fields(NodeState)] == [
        "name", "profile", "tick", "time_s", "load", "zones", "sockets", "pol_min_khz", "pol_max_khz", "pol_governor",
        "pol_epp", "boost", "hsmp_cap_uw", "gpus", "host_power_w", "host_energy_j", "platform_energy_j", "faults",
    ]


def test_a_clock_lock_lowers_a_busy_boards_power_and_a_phase_mix_draws_its_operating_point() -> None:
    """Issue 34: board power runs through physics.gpu.board_operating_point: a lock at 60 % of the
    1785 MHz maximum draws P(0.6); a board whose load carries phases draws their stretch-weighted mean."""
    p = builtin_profile("nvidia-h100-nvl-8gpu")
    g = p.physics.gpu
    assert g is not None
    mix = (Phase(0.2, 0.9, 0.95), Phase(0.8, 0.14, 0.3))
    st = initial_state(p, "n")
    st = replace(st, load=Load(gpu_util=(1.0, 1.0, 0.43), gpu_phases=((), (), mix)),
                 gpus=tuple(replace(b, lock_max_mhz=1071.0) if b.index == 0 else b for b in st.gpus))
    st = node_physics.step_node(p, st, 1.0)
    assert st.gpus[0].lock_max_mhz == 1071.0
    assert st.gpus[0].power_w == pytest.approx(physics_gpu.power_at_clock_w(g, 1.0, 0.6))
    assert st.gpus[1].power_w == pytest.approx(310.0)
    assert st.gpus[2].power_w == pytest.approx(physics_gpu.board_operating_point(g, mix, 310.0).power_w)


def test_with_persistence_mode_off_an_idle_board_forgets_its_clock_lock_too() -> None:
    p = builtin_profile("nvidia-h100-sxm-8gpu")
    st = initial_state(p, "n")
    st = replace(st, load=Load(gpu_util=(0.0, 1.0)), gpus=tuple(replace(b, lock_max_mhz=990.0) for b in st.gpus))
    st = node_physics.step_node(p, st, 1.0)
    assert [b.lock_max_mhz for b in st.gpus[:2]] == [None, 990.0]


def test_gpu_truth_keeps_its_positional_order() -> None:
    from dataclasses import fields

    from joulie_simulator.physics.model import GpuTruth

    # step_gpus builds GpuTruth positionally up to the lock; the tools' readings come after, set by the emulator.
    assert [f.name for f in fields(GpuTruth)][7:] == ["lock_max_mhz", "signals"]


def _capped_under_load(name: str) -> tuple[Profile, NodeState]:
    """A node of ``name`` under load with a package limit and a board limit written, where it has them."""
    p = builtin_profile(name)
    s = replace(initial_state(p, "n"), load=Load(cpu_util=0.7, gpu_util=(0.9, 0.4) + (0.0,) * 6))
    can_limit = p.powercap is not None and p.powercap.package is not None and p.powercap.package.constraints
    for zi, z in enumerate(s.zones):
        if z.kind == "package" and can_limit:
            s, _ = apply_write(p, s, ("zone_limit", zi, 0), b"110000000\n")
    if p.gpus is not None:
        s, _ = apply_write(p, s, ("nvml_limit" if p.gpus.vendor == "nvidia" else "amdgpu_cap", 0, 0), b"250000")
    return p, s


@pytest.mark.parametrize("name", builtin_profile_names())
def test_a_settled_node_steps_to_exactly_its_ledgers_moved_for_any_tick_length(name: str) -> None:
    p, s = _capped_under_load(name)
    for _ in range(2000):  # settling is first order: it arrives (SETTLED_WITHIN), never only approaches
        new = node_physics.step_node(p, s, 0.25)
        if node_physics.steady(s, new, 0.25):
            break
        s = new
    else:
        pytest.fail(f"{name}: not steady after 2000 ticks of 0.25 s")
    for dt in (0.01, 0.25, 1.0, 1.7, 30.0):
        stepped = node_physics.step_node(p, new, dt)
        assert node_physics.advance_ledgers(p, new, dt) == stepped
        assert node_physics.steady(new, stepped, dt)
        assert stepped.host_energy_j > new.host_energy_j


def test_a_node_still_settling_is_not_steady() -> None:
    p, s = _capped_under_load("intel-xeon-2s-rapl")  # a fresh 110 W limit: the packages are still above it
    new = node_physics.step_node(p, s, 0.1)
    assert not node_physics.steady(s, new, 0.1)
    assert not node_physics.steady(new, new, node_physics.STEADY_MIN_DT_S / 2)  # too short a tick to tell


def test_settle_arrives_at_its_target_instead_of_only_approaching_it() -> None:
    x = 100.0
    for _ in range(120):  # 3e-8 W away by then: without arriving, never exactly there
        x = node_physics.settle(x, 200.0, 0.5, 3.0)
    assert x == 200.0
    assert node_physics.settle(199.0, 200.0, 0.5, 3.0) < 200.0  # a watt away is not there yet
