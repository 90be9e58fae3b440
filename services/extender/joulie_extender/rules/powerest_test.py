from typing import Any

import pytest

from joulie_extender.rules.powerest import (
    Coefficients,
    HardwareInfo,
    PodDemand,
    PodSpecError,
    estimate_marginal_impact,
    extract_pod_demand,
)

GIB = 2**30
COEFFS = Coefficients()


def pod(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers}
    if init is not None:
        spec["initContainers"] = init
    return {"metadata": {"name": "p"}, "spec": spec}


def res(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {}
    if requests is not None:
        r["requests"] = requests
    if limits is not None:
        r["limits"] = limits
    return {"name": "c", "resources": r}


def test_demand_sums_containers_and_takes_requests_before_limits() -> None:
    d = extract_pod_demand(
        pod([res({"cpu": "500m", "memory": "1Gi"}, {"cpu": "4"}), res(None, {"cpu": "2", "memory": "2Gi"})]), "standard"
    )
    assert d == PodDemand(2.5, 3 * GIB, 0, "")


def test_init_containers_count_as_their_largest_member_when_larger_than_the_app() -> None:
    d = extract_pod_demand(pod([res({"cpu": "1"})], init=[res({"cpu": "3", "nvidia.com/gpu": "2"}), res({"cpu": "2"})]), "standard")
    assert d.cpu_cores == 3.0
    assert (d.gpu_count, d.gpu_vendor) == (2, "nvidia")


def test_gpu_key_sets_the_vendor_and_limits_count_when_requests_lack_it() -> None:
    d = extract_pod_demand(pod([res({"cpu": "1"}, {"amd.com/gpu": "4"})]), "performance")
    assert (d.gpu_count, d.gpu_vendor) == (4, "amd")


@pytest.mark.parametrize(("cls", "cpu"), [("performance", 0.5), ("standard", 0.25), ("eco", 0.25)])
def test_pod_without_cpu_gets_the_class_fallback(cls: str, cpu: float) -> None:
    assert extract_pod_demand(pod([res()]), cls).cpu_cores == cpu
    assert extract_pod_demand({"metadata": {}}, cls).cpu_cores == cpu


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (pod([res({"cpu": "lots"})]), "Pod.spec.containers[0].resources.requests['cpu']"),
        ({"spec": {"containers": "x"}}, "Pod.spec.containers"),
        ({"spec": {"containers": [3]}}, "Pod.spec.containers[0]"),
        ({"spec": 7}, "Pod.spec"),
    ],
)
def test_malformed_pod_names_the_field(bad: dict[str, Any], field: str) -> None:
    with pytest.raises(PodSpecError, match=field.replace("[", r"\[").replace("]", r"\]")):
        extract_pod_demand(bad, "standard")


XEON_H100 = HardwareInfo(cpu_max_watts_total=700.0, cpu_total_cores=64, gpu_present=True, gpu_count=8,
                         gpu_max_watts_per_gpu=700.0, gpu_vendor="nvidia")


@pytest.mark.parametrize(
    ("demand", "hw", "cls", "cpu_w", "gpu_w"),
    [
        # 16 of 64 cores: 700 * 0.7 * 0.25 = 122.5 W; 10 GiB adds 10 %.
        (PodDemand(16, 10 * GIB, 0), XEON_H100, "standard", 122.5 * 1.1, 0.0),
        # memory factor caps at 1.3; the CPU share at 1.
        (PodDemand(128, 100 * GIB, 0), XEON_H100, "standard", 700 * 0.7 * 1.3, 0.0),
        # GPUs: 2 x 700 W x 0.85 for performance, x 0.65 for standard.
        (PodDemand(1, 0, 2, "nvidia"), XEON_H100, "performance", 700 * 0.7 / 64, 2 * 700 * 0.85),
        (PodDemand(1, 0, 2, "nvidia"), XEON_H100, "standard", 700 * 0.7 / 64, 2 * 700 * 0.65),
        # more GPUs than the node has: capped at the node's 8.
        (PodDemand(1, 0, 16, "nvidia"), XEON_H100, "standard", 700 * 0.7 / 64, 8 * 700 * 0.65),
        # unknown CPU maximum: max(150, cores * 3.5); GPU maximum from the vendor fallback (AMD 400 W).
        (PodDemand(8, 0, 1, "amd"), HardwareInfo(cpu_total_cores=16, gpu_present=True), "standard", 150 * 0.7 * 0.5, 400 * 0.65),
        (PodDemand(8, 0, 1, "nvidia"), HardwareInfo(cpu_total_cores=64), "standard", 224 * 0.7 * 0.125, 0.0),
    ],
)
def test_marginal_impact_table(demand: PodDemand, hw: HardwareInfo, cls: str, cpu_w: float, gpu_w: float) -> None:
    impact = estimate_marginal_impact(demand, hw, cls, COEFFS)
    assert impact.cpu_w == pytest.approx(cpu_w)
    assert impact.gpu_w == pytest.approx(gpu_w)
    assert impact.total_w == pytest.approx(cpu_w + gpu_w)


def test_unknown_hardware_adds_nothing() -> None:
    assert estimate_marginal_impact(PodDemand(8, GIB, 4), None, "performance", COEFFS).total_w == 0.0
