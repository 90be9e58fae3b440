from __future__ import annotations

import pytest

from joulie_telemetry.vocabulary import (
    ALL_METRICS,
    COMPONENT_POWER,
    FACILITY_PUE,
    HOST_ENERGY,
    RACK_PSU_LOAD,
    MetricSpec,
)


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        (HOST_ENERGY, "hw_host_energy_joules_total"),
        (COMPONENT_POWER, "hw_power_watts"),
        (FACILITY_PUE, "joulie_facility_pue_ratio"),
        (RACK_PSU_LOAD, "joulie_rack_psu_load_ratio"),
    ],
)
def test_prometheus_names_under_the_default_translation(spec: MetricSpec, name: str) -> None:
    assert spec.prometheus_name() == name


def test_utf8_names_without_suffixes_are_the_otel_names() -> None:
    assert HOST_ENERGY.prometheus_name(escape=False, suffixes=False) == "hw.host.energy"
    assert HOST_ENERGY.prometheus_name(escape=True, suffixes=False) == "hw_host_energy"


def test_every_name_is_spelled_once_and_counters_are_energy() -> None:
    names = [m.name for m in ALL_METRICS]
    assert len(names) == len(set(names))
    assert all(m.unit == "J" for m in ALL_METRICS if m.kind == "counter")
