from __future__ import annotations

import pytest

from joulie_telemetry.vocabulary import (
    ALL_METRICS,
    COMPONENT_POWER,
    FACILITY_PUE,
    GPU_DRAM_ACTIVE,
    GPU_METRICS,
    GPU_SM_ACTIVE,
    GPU_SM_CLOCK,
    GPU_SM_CLOCK_MAX,
    GPU_TENSOR_ACTIVE,
    GPU_UTILIZATION,
    HOST_ENERGY,
    POD_TIME_ADDED,
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
    # Counters are energy, or the time the receipts say caps added.
    assert all(m.unit == "J" or m is POD_TIME_ADDED for m in ALL_METRICS if m.kind == "counter")


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        (GPU_UTILIZATION, "hw_gpu_utilization_ratio"),
        (GPU_SM_CLOCK, "hw_gpu_speed_hertz"),
        (GPU_SM_CLOCK_MAX, "hw_gpu_speed_limit_hertz"),
        (GPU_SM_ACTIVE, "hw_gpu_sm_active_ratio"),
        (GPU_TENSOR_ACTIVE, "hw_gpu_tensor_active_ratio"),
        (GPU_DRAM_ACTIVE, "hw_gpu_dram_active_ratio"),
    ],
)
def test_per_gpu_signals_have_the_prometheus_names_a_query_uses(spec: MetricSpec, name: str) -> None:
    assert spec in GPU_METRICS
    assert spec.prometheus_name() == name


def test_per_gpu_signals_are_gauges_spelled_once_beside_every_other_name() -> None:
    names = [m.name for m in ALL_METRICS + GPU_METRICS]
    assert len(names) == len(set(names))
    assert all(m.kind == "gauge" for m in GPU_METRICS)
    # The activity ratios are fractions (unit 1), never the semconv memory *capacity* utilisation.
    assert "hw.gpu.memory.utilization" not in names
    assert {m.unit for m in (GPU_UTILIZATION, GPU_SM_ACTIVE, GPU_TENSOR_ACTIVE, GPU_DRAM_ACTIVE)} == {"1"}
