"""Measured power from counters and meters (issue 21): sources, wrap-around, resets, integration."""

import pytest

from joulie_agent.discovery import powercap
from joulie_agent.power.powerexport import (
    Component,
    CounterSource,
    EnergyAccumulator,
    HostEnergy,
    HwmonEnergy,
    node_sample,
    plan_sources,
)
from joulie_telemetry.vocabulary import HOST_SOURCE_BMC, HOST_SOURCE_SUM, HW_CPU, HW_MEMORY

RANGE_UJ = 262_143_328_850


def z(zone_id: str, name: str, energy_uj: int | None = 0) -> powercap.Zone:
    m = powercap.ZONE_DIR_RE.match(zone_id)
    assert m
    return powercap.Zone(zone_id, m.group("ctype"), 2 if m.group("sub") else 1, name, energy_uj=energy_uj,
                         max_energy_range_uj=RANGE_UJ)


def test_rapl_packages_and_dram_are_planned_with_semconv_ids() -> None:
    zones = [z("intel-rapl:0", "package-0"), z("intel-rapl:0:0", "dram"), z("intel-rapl:1", "package-1"),
             z("intel-rapl:1:0", "dram"), z("intel-rapl:2", "psys"), z("intel-rapl-mmio:0", "package-0")]
    plan = plan_sources(zones, [], gpu_count=0)
    assert [(c.hw_type, c.hw_id, c.path_key) for c in plan.counters] == [
        (HW_CPU, "package-0", "intel-rapl:0"), (HW_CPU, "package-1", "intel-rapl:1"),
        (HW_MEMORY, "dram-0", "intel-rapl:0:0"), (HW_MEMORY, "dram-1", "intel-rapl:1:0")]
    assert not plan.gpus and not plan.empty


def test_amd_energy_sockets_count_only_without_rapl_packages() -> None:
    hwmon = [HwmonEnergy("hwmon2/energy1_input", "Ecore000"), HwmonEnergy("hwmon2/energy65_input", "Esocket0"),
             HwmonEnergy("hwmon2/energy66_input", "Esocket1")]
    plan = plan_sources([], hwmon, gpu_count=0)
    assert [(c.hw_id, c.path_key) for c in plan.counters] == [
        ("package-0", "hwmon2/energy65_input"), ("package-1", "hwmon2/energy66_input")]
    with_rapl = plan_sources([z("intel-rapl:0", "package-0")], hwmon, gpu_count=0)
    assert [c.hw_id for c in with_rapl.counters] == ["package-0"] and with_rapl.counters[0].path_key == "intel-rapl:0"


def test_a_node_without_counters_or_gpus_plans_nothing() -> None:
    assert plan_sources([z("intel-rapl:0", "package-0", energy_uj=None)], [], 0).empty
    assert not plan_sources([], [], gpu_count=2).empty


def test_counter_energy_and_power_from_deltas_with_one_wrap() -> None:
    acc = EnergyAccumulator()
    src = CounterSource(HW_CPU, "package-0", "intel-rapl:0", RANGE_UJ)
    first = acc.counter(src, RANGE_UJ - 500_000_000, t_s=0.0)
    assert (first.energy_j, first.power_w) == (0.0, None)
    # 10 s later the counter wrapped: 500 J before the wrap + 1000 J after = 1500 J -> 150 W.
    c = acc.counter(src, 1_000_000_000, t_s=10.0)
    assert c.energy_j == pytest.approx(1500.0) and c.power_w == pytest.approx(150.0)
    c = acc.counter(src, 2_000_000_000, t_s=20.0)
    assert c.energy_j == pytest.approx(2500.0) and c.power_w == pytest.approx(100.0)


def test_a_counter_reset_without_range_adds_nothing_and_rebases() -> None:
    acc = EnergyAccumulator()
    src = CounterSource(HW_CPU, "package-0", "hwmon2/energy65_input", None)
    acc.counter(src, 5_000_000_000, 0.0)
    acc.counter(src, 6_000_000_000, 10.0)
    reset = acc.counter(src, 100, 20.0)
    assert reset.energy_j == pytest.approx(1000.0)
    after = acc.counter(src, 1_000_000_100, 30.0)
    assert after.energy_j == pytest.approx(2000.0) and after.power_w == pytest.approx(100.0)


def test_gpu_power_is_integrated_with_trapezoids() -> None:
    acc = EnergyAccumulator()
    assert acc.meter("gpu", "gpu-0", 100.0, 0.0).energy_j == 0.0
    assert acc.meter("gpu", "gpu-0", 300.0, 10.0).energy_j == pytest.approx(2000.0)
    assert acc.meter("gpu", "gpu-0", 300.0, 20.0).energy_j == pytest.approx(5000.0)


def test_host_is_the_sum_and_power_waits_for_every_component() -> None:
    acc = EnergyAccumulator()
    pkg = CounterSource(HW_CPU, "package-0", "intel-rapl:0", RANGE_UJ)
    s = node_sample([acc.counter(pkg, 0, 0.0), acc.meter("gpu", "gpu-0", 200.0, 0.0)])
    assert s.host_energy_j == 0.0 and s.host_power_w is None
    s = node_sample([acc.counter(pkg, 1_000_000_000, 10.0), acc.meter("gpu", "gpu-0", 200.0, 10.0)])
    assert s.host_energy_j == pytest.approx(3000.0) and s.host_power_w == pytest.approx(300.0)


def test_components_no_longer_read_are_forgotten() -> None:
    acc = EnergyAccumulator()
    acc.meter("gpu", "gpu-0", 1.0, 0.0)
    acc.meter("gpu", "gpu-1", 1.0, 0.0)
    acc.forget_except({("gpu", "gpu-0")})
    assert acc.meter("gpu", "gpu-1", 1.0, 10.0).energy_j == 0.0  # started over


def _gpu(energy_j: float, power_w: float | None = 100.0) -> Component:
    return Component("gpu", "gpu-0", energy_j, power_w)


def test_host_from_the_bmc_integrates_its_readings_and_says_so() -> None:
    h = HostEnergy()
    s = h.update([_gpu(0.0)], 500.0, 0.0)
    assert (s.host_source, s.host_power_w, s.host_energy_j) == (HOST_SOURCE_BMC, 500.0, 0.0)
    s = h.update([_gpu(1000.0)], 700.0, 10.0)
    assert s.host_energy_j == pytest.approx(6000.0)  # trapezoid (500 + 700) / 2 * 10 s, not the GPU's 1000 J
    assert dict(s.host_energy_by_source_j) == {HOST_SOURCE_BMC: pytest.approx(6000.0)}


def test_a_bmc_that_fails_and_comes_back_books_each_interval_to_one_source_and_no_counter_goes_back() -> None:
    h = HostEnergy()
    h.update([_gpu(0.0)], 500.0, 0.0)
    h.update([_gpu(1000.0)], 500.0, 10.0)                    # bmc: +5000
    down = h.update([_gpu(2000.0, 100.0)], None, 20.0)       # sum: the GPU's +1000 J
    assert (down.host_source, down.host_power_w) == (HOST_SOURCE_SUM, 100.0) and down.host_energy_j == pytest.approx(1000.0)
    assert dict(down.host_energy_by_source_j) == {HOST_SOURCE_BMC: pytest.approx(5000.0), HOST_SOURCE_SUM: pytest.approx(1000.0)}
    back = h.update([_gpu(3000.0)], 600.0, 30.0)             # bmc again: its one reading over the interval, +6000
    assert back.host_source == HOST_SOURCE_BMC and back.host_energy_j == pytest.approx(11000.0)
    assert dict(back.host_energy_by_source_j)[HOST_SOURCE_SUM] == pytest.approx(1000.0)  # frozen, not reset
    total = sum(j for _, j in back.host_energy_by_source_j)
    assert total == pytest.approx(5000 + 1000 + 6000)  # every interval counted once


def test_the_sum_never_goes_back_when_a_component_restarts_from_zero() -> None:
    h = HostEnergy()
    h.update([_gpu(0.0)], None, 0.0)
    assert h.update([_gpu(1000.0)], None, 10.0).host_energy_j == pytest.approx(1000.0)
    assert h.update([_gpu(0.0)], None, 20.0).host_energy_j == pytest.approx(1000.0)  # GPU re-planned: starts over
    assert h.update([_gpu(500.0)], None, 30.0).host_energy_j == pytest.approx(1500.0)


def test_a_node_without_components_and_without_a_bmc_reading_has_nothing_to_export() -> None:
    h = HostEnergy()
    assert h.update([], 250.0, 0.0).measured
    s = h.update([], None, 10.0)
    assert not s.measured and s.host_power_w is None and s.host_energy_by_source_j == ((HOST_SOURCE_BMC, 0.0),)
