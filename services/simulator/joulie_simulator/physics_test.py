import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from joulie_hwprofiles.schema import CpuPhysics, GpuPhysics, builtin_profile
from joulie_simulator import physics
from joulie_simulator.model import Load, initial_state
from joulie_simulator.writes import apply_write

CPU = CpuPhysics(idle_pkg_w=40, max_pkg_w=165, alpha_util=1.15, beta_freq=1.35)
GPU = GpuPhysics(idle_w=58.6, natural_max_w=400)


@pytest.mark.parametrize(
    ("util", "scale", "watts"),
    [(0.0, 1.0, 40.0), (1.0, 1.0, 165.0), (0.5, 1.0, 40 + 125 * 0.5**1.15), (1.0, 0.5, 40 + 125 * 0.5**1.35)],
)
def test_package_power_follows_the_documented_formula(util: float, scale: float, watts: float) -> None:
    assert physics.cpu_power_w(CPU, util, scale) == pytest.approx(watts)


def test_a_cap_lowers_frequency_until_power_meets_it() -> None:
    power, scale = physics.capped_package(CPU, 1.0, 1.0, 120.0, min_scale=1000 / 3900)
    assert power == pytest.approx(120.0)
    assert physics.cpu_power_w(CPU, 1.0, scale) == pytest.approx(120.0)
    assert scale < 1.0


def test_a_cap_below_the_lowest_frequency_is_not_met() -> None:
    min_scale = 1000 / 3900
    power, scale = physics.capped_package(CPU, 1.0, 1.0, 41.0, min_scale)
    assert scale == min_scale
    assert power == pytest.approx(physics.cpu_power_w(CPU, 1.0, min_scale)) and power > 41.0


@given(util=st.floats(0, 1), cap=st.floats(1, 400), scale=st.floats(0.3, 1))
def test_capped_power_never_exceeds_natural_nor_the_cap_above_the_floor(util: float, cap: float, scale: float) -> None:
    power, eff = physics.capped_package(CPU, util, scale, cap, 0.3)
    assert power <= physics.cpu_power_w(CPU, util, scale) + 1e-9
    assert power <= max(cap, physics.cpu_power_w(CPU, util, 0.3)) + 1e-9
    assert 0.3 - 1e-12 <= eff <= scale + 1e-12


@given(util=st.floats(0, 1), limit=st.floats(0, 800))
def test_a_gpu_board_stays_between_idle_and_its_limit(util: float, limit: float) -> None:
    p = physics.gpu_board_power_w(GPU, util, limit)
    assert p >= GPU.idle_w - 1e-9
    assert p <= max(limit, GPU.idle_w) + 1e-9


def test_settling_is_first_order_and_reaches_the_target_after_tau() -> None:
    assert physics.settle(100, 200, 0.25, 1.0) == pytest.approx(125)
    assert physics.settle(100, 200, 1.0, 1.0) == 200
    assert physics.settle(100, 200, 0.1, 0) == 200


@pytest.mark.parametrize(("unit_nj", "range_uj"), [(61035, 262143328850), (15300, 65712999613), (15258, 65532610987)])
def test_max_energy_range_is_the_32_bit_register_in_microjoules(unit_nj: int, range_uj: int) -> None:
    assert physics.max_energy_range_uj(unit_nj) == range_uj


def test_an_energy_counter_wraps_at_its_range_and_a_reader_counts_the_wrap() -> None:
    rng = 1000
    before = physics.energy_counter_uj(990, 0.0, rng)
    after = physics.energy_counter_uj(990, 20e-6, rng)
    assert (before, after) == (990, 9)
    assert physics.counter_delta_uj(before, after, rng) == 19  # one µJ is lost at each wrap, as on hardware


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_host_energy_never_goes_back_and_integrates_host_power(utils: list[float]) -> None:
    p = builtin_profile("nvidia-h100-nvl-8gpu")
    s = initial_state(p, "n")
    energy = 0.0
    for u in utils:
        s = replace(s, load=Load(cpu_util=u, gpu_util=(u,) * 8))
        prev = s.host_energy_j
        s = physics.step_node(p, s, 0.5)
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
        s = physics.step_node(p, s, 0.1)
    for sock in s.sockets:
        assert sock.power_w <= 120 * 1.01
        assert sock.eff_khz < 3_900_000
    assert s.host_power_w > 1.5 * 120  # the cap is per socket, not per node


def test_the_cap_settles_with_the_pl1_time_window() -> None:
    p = builtin_profile("intel-xeon-2s-rapl")
    s = physics.step_node(p, replace(initial_state(p, "n"), load=Load(cpu_util=1.0)), 5.0)
    assert s.sockets[0].power_w == pytest.approx(165)
    s, _ = apply_write(p, s, ("zone_limit", 0, 0), b"100000000")
    s = physics.step_node(p, s, 0.25)
    assert 100 < s.sockets[0].power_w < 165  # one quarter of the 0.999 s window later: partway
    assert math.isclose(s.sockets[1].power_w, 165, rel_tol=1e-6)


def test_a_gpu_limit_holds_board_power_after_settling() -> None:
    p = builtin_profile("nvidia-h100-nvl-8gpu")
    s = replace(initial_state(p, "n"), load=Load(gpu_util=(1.0,) * 8))
    s, out = apply_write(p, s, ("nvml_limit", 3, 0), b"250000")
    assert out.ok
    for _ in range(10):
        s = physics.step_node(p, s, 0.1)
    assert s.gpus[3].power_w <= 250 * 1.01
    assert s.gpus[2].power_w == pytest.approx(400)


def test_dvfs_lowers_an_energy_only_epyc() -> None:
    p = builtin_profile("amd-epyc-2s-energy-only")
    s = replace(initial_state(p, "n"), load=Load(cpu_util=1.0))
    s = physics.step_node(p, s, 1.0)
    full = s.sockets[0].power_w
    for i in range(len(s.pol_max_khz)):
        s, _ = apply_write(p, s, ("pol_max", i, 0), b"1500000")
    for _ in range(10):
        s = physics.step_node(p, s, 0.5)
    assert s.sockets[0].power_w < full
    assert s.sockets[0].eff_khz == pytest.approx(1_500_000)


def test_with_persistence_mode_off_an_idle_board_forgets_its_limit_but_a_busy_one_keeps_it() -> None:
    p = builtin_profile("nvidia-h100-sxm-8gpu")
    s = replace(initial_state(p, "n"), load=Load(gpu_util=(0.0, 1.0)))
    for i in (0, 1):
        s, _ = apply_write(p, s, ("nvml_limit", i, 0), b"300000")
    s = physics.step_node(p, s, 1.0)
    assert [g.limit_w for g in s.gpus[:2]] == [700, 300]


def test_node_state_fields_are_in_the_order_step_node_builds_them() -> None:
    from dataclasses import fields

    from joulie_simulator.model import NodeState

    assert [f.name for f in fields(NodeState)] == [
        "name", "profile", "tick", "time_s", "load", "zones", "sockets", "pol_min_khz", "pol_max_khz", "pol_governor",
        "pol_epp", "boost", "hsmp_cap_uw", "gpus", "host_power_w", "host_energy_j", "platform_energy_j", "faults",
    ]
