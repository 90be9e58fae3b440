"""Powercap zones: what is a socket, what a cap range is, how energy wraps, garbage handling."""

from joulie_agent.discovery import powercap


def zone(zid: str, name: str, max_uw: int | None = 165_000_000, **files: str) -> powercap.Zone:
    f: dict[str, str | None] = {"name": name, "energy_uj": "100", **files}
    if max_uw is not None:
        f |= {"constraint_0_name": "long_term", "constraint_0_max_power_uw": str(max_uw),
              "constraint_0_power_limit_uw": str(max_uw)}
    res = powercap.parse_zone(zid, f)
    assert res.zone is not None, res.warnings
    return res.zone


def test_only_msr_package_zones_are_sockets_not_psys_mmio_or_subzones() -> None:
    zones = [zone("intel-rapl:0", "package-0"), zone("intel-rapl:0:0", "dram", 47_250_000),
             zone("intel-rapl:1", "package-1"), zone("intel-rapl:2", "psys", 0),
             zone("intel-rapl-mmio:0", "package-0")]
    assert [z.zone_id for z in powercap.package_zones(zones)] == ["intel-rapl:0", "intel-rapl:1"]
    assert [z.zone_id for z in powercap.energy_zones(zones)] == ["intel-rapl:0", "intel-rapl:1"]


def test_cap_range_is_per_socket_from_package_zones_ignoring_dram() -> None:
    zones = [zone("intel-rapl:0", "package-0"), zone("intel-rapl:0:0", "dram", 47_250_000),
             zone("intel-rapl:1", "package-1")]
    assert powercap.socket_cap_range_w(zones) == (0.0, 165.0)


def test_socket_split_into_dies_has_the_sum_of_its_dies_as_max() -> None:
    zones = [zone(f"intel-rapl:{i}", f"package-{i // 2}-die-{i % 2}", 100_000_000) for i in range(4)]
    assert powercap.dies_per_package(zones) == {0: 2, 1: 2}
    assert powercap.socket_cap_range_w(zones) == (0.0, 200.0)


def test_energy_only_zones_have_no_cap_range() -> None:
    zones = [zone("intel-rapl:0", "package-0", None), zone("intel-rapl:1", "package-1", None)]
    assert powercap.socket_cap_range_w(zones) is None
    assert len(powercap.energy_zones(zones)) == 2


def test_energy_wrap_is_corrected_with_the_zone_range() -> None:
    rng = 262_143_328_850
    assert powercap.energy_delta_uj(rng - 1_000_000, 4_000_000, rng) == 5_000_000
    assert powercap.energy_delta_uj(100, 350, rng) == 250
    assert powercap.energy_delta_uj(500, 100, None) is None


def test_garbage_values_become_warnings_and_unknowns() -> None:
    res = powercap.parse_zone("intel-rapl:0", {"name": "package-0", "energy_uj": "banana\n",
                                               "constraint_0_power_limit_uw": "-5", "enabled": ""})
    assert res.zone is not None
    assert res.zone.energy_uj is None
    assert res.zone.long_term() is not None and res.zone.long_term().power_limit_uw is None  # type: ignore[union-attr]
    assert any("energy_uj" in w and "banana" in w for w in res.warnings)
    assert any("negative" in w for w in res.warnings)


def test_zone_without_name_is_ignored_with_a_warning() -> None:
    res = powercap.parse_zone("intel-rapl:0", {"name": "", "energy_uj": "1"})
    assert res.zone is None and "name" in res.warnings[0]
    assert powercap.parse_zone("not-a-zone", {"name": "x"}).zone is None
