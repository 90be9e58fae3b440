"""The facility model as a user of the simulated cluster notices it: the ambient's daily swing, PUE
rising with the outdoor temperature and with load, a hot rack breathing warmer air, PSU load."""

from __future__ import annotations

import math

import pytest

from joulie_hwprofiles.schema import builtin_profile, builtin_profile_names
from joulie_simulator.facility import (
    AmbientProfile,
    ChillerCopCooling,
    FacilityParams,
    NodeFacilityInput,
    ambient_c,
    cooling_model,
    evaluate,
    node_nameplate_w,
    pue,
    topology,
)

HOUR = 3600.0
RACKED = {
    "gpu-0": {"joulie.io/rack": "r1", "joulie.io/cooling-zone": "hall-a"},
    "gpu-1": {"joulie.io/rack": "r1"},
    "cpu-0": {"joulie.io/rack": "r2", "joulie.io/cooling-zone": "hall-b"},
    "loose": {},
}


def _nodes(gpu_w: float = 3000.0, cpu_w: float = 500.0) -> list[NodeFacilityInput]:
    return [NodeFacilityInput("gpu-0", gpu_w, 5000.0), NodeFacilityInput("gpu-1", gpu_w, 5000.0),
            NodeFacilityInput("cpu-0", cpu_w, 1000.0), NodeFacilityInput("loose", 100.0, 400.0)]


def test_the_default_ambient_is_the_benchmarks_day_and_a_control_can_shift_or_pin_it() -> None:
    day = AmbientProfile()
    assert [round(ambient_c(day, h * HOUR), 9) for h in (0, 6, 12, 18, 24)] == [22.0, 30.0, 22.0, 14.0, 22.0]
    assert ambient_c(day, 6 * HOUR, offset_c=5.0) == pytest.approx(35.0)
    assert ambient_c(day, 6 * HOUR, offset_c=5.0, fixed_c=40.0) == 40.0
    flat = AmbientProfile(base_c=18.0, amplitude_c=0.0)
    assert ambient_c(flat, 7 * HOUR) == 18.0
    with pytest.raises(ValueError, match="period_s"):
        AmbientProfile(period_s=0)


def test_pue_rises_with_the_outdoor_temperature_and_with_load() -> None:
    topo = topology(RACKED)
    params = FacilityParams()
    cool = evaluate(params, topo, _nodes(), 18 * HOUR)  # 14 degC
    warm = evaluate(params, topo, _nodes(), 6 * HOUR)   # 30 degC
    assert cool.pue is not None and warm.pue is not None
    assert warm.ambient_c == pytest.approx(30.0) and warm.pue > cool.pue + 0.1
    assert warm.cooling_w > cool.cooling_w
    light = evaluate(params, topo, _nodes(gpu_w=600.0, cpu_w=100.0), 6 * HOUR)
    assert light.pue is not None and warm.pue > light.pue
    heat_wave = evaluate(params, topo, _nodes(), 6 * HOUR, offset_c=8.0)
    assert heat_wave.pue is not None and heat_wave.pue > warm.pue
    # PUE is (IT + cooling + other) / IT, and the facility power is that sum.
    assert warm.pue == pytest.approx(warm.facility_w / warm.it_w)
    assert warm.it_w == pytest.approx(6600.0) and warm.nameplate_w == pytest.approx(11400.0)


def test_pue_is_undefined_without_it_power_and_other_load_adds_to_it() -> None:
    topo = topology({"a": {}})
    idle = evaluate(FacilityParams(), topo, [NodeFacilityInput("a", 0.0, 1000.0)], 0.0)
    assert idle.pue is None and idle.cooling_w == 0.0
    lit = evaluate(FacilityParams(other_w=100.0), topo, [NodeFacilityInput("a", 1000.0, 1000.0)], 0.0)
    base = evaluate(FacilityParams(), topo, [NodeFacilityInput("a", 1000.0, 1000.0)], 0.0)
    assert lit.pue is not None and base.pue is not None and lit.pue == pytest.approx(base.pue + 0.1)


def test_a_rack_inlet_is_above_its_zones_supply_air_by_its_heat() -> None:
    topo = topology(RACKED)
    got = evaluate(FacilityParams(zone_offset_c={"hall-b": -2.0}), topo, _nodes(), 0.0)  # 22 degC outside
    r1, r2 = got.racks["r1"], got.racks["r2"]
    assert (r1.zone, r2.zone) == ("hall-a", "hall-b")
    assert r1.inlet_c == pytest.approx(22.0 + 0.3 * 6.0)  # 6 kW of GPUs recirculate 1.8 degC
    assert r2.inlet_c == pytest.approx(20.0 + 0.3 * 0.5)
    assert got.zone_supply_c == {"hall-a": pytest.approx(22.0), "hall-b": pytest.approx(20.0)}
    assert got.node_inlet_c["gpu-1"] == r1.inlet_c and got.node_inlet_c["loose"] == pytest.approx(22.0)
    hotter = evaluate(FacilityParams(), topo, _nodes(gpu_w=4500.0), 0.0)
    assert hotter.racks["r1"].inlet_c > r1.inlet_c > got.ambient_c


def test_rack_psu_load_is_rack_it_power_over_its_psu_capacity() -> None:
    got = evaluate(FacilityParams(psu_capacity_factor=1.25), topology(RACKED), _nodes(), 0.0)
    r1 = got.racks["r1"]
    assert r1.psu_capacity_w == pytest.approx(12500.0) and r1.psu_load == pytest.approx(6000.0 / 12500.0)
    assert got.racks["r2"].psu_load == pytest.approx(0.4)


def test_racks_and_zones_come_from_node_labels_and_a_rack_in_two_zones_is_refused() -> None:
    topo = topology(RACKED)
    assert topo.racks == ["r1", "r2"] and topo.zones == ["hall-a", "hall-b"]
    assert topo.zone_of_node["gpu-1"] == "hall-a"  # from its rack
    assert "loose" not in topo.rack_of
    with pytest.raises(ValueError, match=r"node b: label joulie.io/cooling-zone='z2' but rack 'r' is in zone 'z1'"):
        topology({"a": {"joulie.io/rack": "r", "joulie.io/cooling-zone": "z1"},
                  "b": {"joulie.io/rack": "r", "joulie.io/cooling-zone": "z2"}})


def test_the_chiller_model_is_pluggable_and_its_pue_also_rises_with_ambient() -> None:
    params = FacilityParams(cooling=cooling_model("chiller"))
    topo = topology(RACKED)
    cold, hot = (evaluate(params, topo, _nodes(), t) for t in (18 * HOUR, 6 * HOUR))
    assert hot.cooling_model == "chiller" and cold.pue is not None and hot.pue is not None
    assert hot.pue > cold.pue > 1.0
    chiller = ChillerCopCooling()
    assert chiller.cop(35.0) == pytest.approx(2.8)  # the rating point
    assert 1 + chiller.overhead(1.0, 1.0, 35.0) == pytest.approx(1 + 1 / 2.8 + 0.05)
    with pytest.raises(ValueError, match="cooling model 'ice': expected one of chiller, reference"):
        cooling_model("ice")


@pytest.mark.parametrize("it_w", [0.0, 1.0, 2500.0, 9000.0, 12000.0])
@pytest.mark.parametrize("hour", [0.0, 3.3, 6.0, 13.0, 18.0, 23.9])
def test_pue_is_the_evaluated_facility_ratio(it_w: float, hour: float) -> None:
    got = evaluate(FacilityParams(), topology({"a": {}}), [NodeFacilityInput("a", it_w, 10000.0)], hour * HOUR)
    if it_w == 0:
        assert got.pue is None and 1.0 <= pue(0.0, 10000.0, hour * HOUR) < 1.2
    else:
        assert got.pue is not None and math.isclose(pue(it_w, 10000.0, hour * HOUR), got.pue, abs_tol=1e-12)


def test_pue_is_clamped_to_the_references_range() -> None:
    assert pue(1.0, 1.0, 0.0) <= 3.0
    hot = FacilityParams(ambient=AmbientProfile(base_c=400.0, amplitude_c=0.0))
    got = evaluate(hot, topology({"a": {}}), [NodeFacilityInput("a", 100.0, 100.0)], 0.0)
    assert got.pue == pytest.approx(3.0)


def test_a_nodes_nameplate_is_its_packages_dram_platform_and_gpus_at_their_maximum() -> None:
    sxm4 = builtin_profile("nvidia-h100-sxm-4gpu")
    assert node_nameplate_w(sxm4) == pytest.approx(2 * 270 + 2 * 8 + 300 + 4 * 700)
    epyc = builtin_profile("amd-epyc-9534-2s-energy-only")  # no RAPL constraint: the physics maximum
    assert node_nameplate_w(epyc) == pytest.approx(2 * 280 + 2 * 10 + 70)
    assert all(node_nameplate_w(builtin_profile(n)) > 0 for n in builtin_profile_names())
