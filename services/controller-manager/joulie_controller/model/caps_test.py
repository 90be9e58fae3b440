"""Cap computation from profile, hardware and settings."""

from __future__ import annotations

from joulie_controller.model.caps import CpuCap, GpuCap, compute_caps
from joulie_controller.model.hardware import HardwareView
from joulie_controller.settings import CapSettings, GpuModelCaps, Settings

CPU_NODE = HardwareView(cpu_model="epyc", cpu_sockets=2, cpu_min_w_per_socket=100, cpu_max_w_per_socket=300)
L40S_NODE = HardwareView(cpu_model="xeon", cpu_sockets=1, cpu_max_w_per_socket=250, gpu_model="l40s", gpu_count=4,
                         gpu_min_w=200, gpu_max_w=350)


def test_cpu_node_gets_profile_percentage() -> None:
    assert compute_caps("eco", CPU_NODE, Settings())[0].cpu == CpuCap(pct_of_max=60)
    assert compute_caps("performance", CPU_NODE, Settings())[0].cpu == CpuCap(pct_of_max=100)
    assert compute_caps("eco", CPU_NODE, Settings())[0].gpu is None


def test_absolute_cpu_caps_clamp_to_the_cap_range() -> None:
    s = Settings(caps=CapSettings(cpu_write_absolute=True))
    assert compute_caps("performance", CPU_NODE, s)[0].cpu == CpuCap(watts=300)
    assert compute_caps("eco", CPU_NODE, s)[0].cpu == CpuCap(watts=120)
    low = Settings(caps=CapSettings(cpu_write_absolute=True, eco_cap_w=50))
    assert compute_caps("eco", CPU_NODE, low)[0].cpu == CpuCap(watts=100)
    assert compute_caps("eco", HardwareView(), s)[0].cpu == CpuCap(watts=120)  # unknown range: as configured


def test_absolute_eco_cap_counts_in_the_twin_budget() -> None:
    caps, _ = compute_caps("eco", CPU_NODE, Settings(caps=CapSettings(cpu_write_absolute=True)))
    assert caps.cpu_pct_in_effect(CPU_NODE) == 40  # 120 of 300 W, not the original's 100 %


def test_gpu_node_cpu_stays_uncapped_in_eco() -> None:
    assert compute_caps("eco", L40S_NODE, Settings())[0].cpu == CpuCap(pct_of_max=100)
    absolute = Settings(caps=CapSettings(cpu_write_absolute=True))
    assert compute_caps("eco", L40S_NODE, absolute)[0].cpu == CpuCap(watts=250)


def test_gpu_intent_percentage_and_absolute() -> None:
    assert compute_caps("eco", L40S_NODE, Settings())[0].gpu == GpuCap(pct_of_max=60)
    assert compute_caps("eco", L40S_NODE, Settings(caps=CapSettings(gpu_write_absolute=True)))[0].gpu == GpuCap(60, 210)


def test_gpu_absolute_from_model_table_then_pct_only() -> None:
    no_range = HardwareView(gpu_model="a100", gpu_count=2)
    s = Settings(caps=CapSettings(gpu_write_absolute=True, gpu_model_caps={"a100": GpuModelCaps(150, 400)}))
    assert compute_caps("eco", no_range, s)[0].gpu == GpuCap(60, 240)
    caps, warnings = compute_caps("eco", HardwareView(gpu_model="mystery", gpu_count=1), s)
    assert caps.gpu == GpuCap(60, None) and warnings


def test_gpu_intent_disabled_by_zero_pct() -> None:
    caps, warnings = compute_caps("eco", L40S_NODE, Settings(caps=CapSettings(gpu_eco_pct=0)))
    assert caps.gpu is None and "disabled" in warnings[0]


def test_budget_override_lowers_eco_caps() -> None:
    caps, _ = compute_caps("eco", L40S_NODE, Settings(), eco_pct_override=35)
    assert caps.gpu == GpuCap(pct_of_max=35)
    assert compute_caps("eco", CPU_NODE, Settings(), eco_pct_override=35)[0].cpu == CpuCap(pct_of_max=35)
