import pytest

from joulie_agent.control.gpucontrol import changed_targets, nvml_limit_mw, plan_gpu_caps
from joulie_agent.discovery.gputools import GPUDevice
from joulie_api.generated.nodetwin import GPUPowerCap

H100 = GPUDevice(index=0, min_w=200.0, max_w=400.0, current_cap_w=310.0)
SMALL = GPUDevice(index=1, min_w=100.0, max_w=300.0, current_cap_w=180.0)


@pytest.mark.parametrize(("watts", "mw"), [(240.0, 240_000), (199.9996, 200_000), (310.4, 310_400)])
def test_nvml_takes_whole_milliwatts(watts: float, mw: int) -> None:
    assert nvml_limit_mw(watts) == mw


@pytest.mark.parametrize(("cap", "targets"), [
    (GPUPowerCap(cap_pct_of_max=60), {0: 240.0, 1: 180.0}),  # each GPU's own maximum
    (GPUPowerCap(cap_pct_of_max=10), {0: 200.0, 1: 100.0}),  # raised to each minimum
    (GPUPowerCap(cap_pct_of_max=100), {0: 400.0, 1: 300.0}),
    (GPUPowerCap(cap_watts_per_gpu=250), {0: 250.0, 1: 250.0}),
])
def test_a_node_cap_becomes_watts_per_gpu(cap: GPUPowerCap, targets: dict[int, float]) -> None:
    plan = plan_gpu_caps(cap, [H100, SMALL])
    assert (plan.targets, plan.blocked) == (targets, "")


def test_only_limits_that_differ_are_written() -> None:
    plan = plan_gpu_caps(GPUPowerCap(cap_pct_of_max=60), [H100, SMALL])
    assert changed_targets(plan, [H100, SMALL]) == {0: 240.0}
