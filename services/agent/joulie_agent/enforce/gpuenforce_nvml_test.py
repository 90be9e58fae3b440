"""GPU caps through NVML on one node: set, partial failure, drift of the enforced limit (stand-in pynvml)."""

from typing import Any

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.enforce.node import NodeController
from joulie_agent.fixtures import testtrees
from joulie_agent.host.hostread import HostPaths
from joulie_agent.host.nvml import open_nvml
from joulie_agent.host.nvml_test import FakeNVML
from joulie_agent.host.toolrun import make_runner
from joulie_api.generated.nodetwin import GPUCapSpec, GPUPowerCap, NodeTwinSpec
from joulie_common.clock import FakeClock


def test_controller_sets_gpu_caps_through_nvml_and_reports_partial_failure(tmp_path: Any) -> None:
    testtrees.cpuinfo(tmp_path)
    lib: Any = FakeNVML()
    c = NodeController("n1", HostPaths.under(tmp_path), load_catalog(), make_runner(str(tmp_path)), open_nvml(lib),
                       FakeClock())
    hw = c.discover({}, {})
    assert hw.gpu is not None and (hw.gpu.count, hw.gpu.model) == (2, "NVIDIA_H100_SXM")
    out = c.reconcile_gpu(NodeTwinSpec(node_name="n1", profile="eco",
                                       gpu=GPUCapSpec(power_cap=GPUPowerCap(cap_watts_per_gpu=250))))
    assert (out.backend, out.result) == ("host-nvidia", "error")
    assert "1 of 2" in out.message and "gpu 1" in out.message
    assert lib.limits_mw == {0: 250_000, 1: 700_000}


class ResettingNVML(FakeNVML):
    """A board that enforces its default (700 W) whatever limit was requested: the lost-limit case."""

    def __init__(self) -> None:
        super().__init__(n=1)
        self.enforced_mw = 700_000

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return self.enforced_mw

    def nvmlDeviceSetPowerManagementLimit(self, h: int, mw: int) -> None:
        self.limits_mw[h] = mw
        self.sets = getattr(self, "sets", 0) + 1


def test_nvml_enforced_limit_above_the_cap_is_drift_and_the_cap_is_set_again(tmp_path: Any) -> None:
    testtrees.cpuinfo(tmp_path)
    lib = ResettingNVML()
    clock = FakeClock()
    c = NodeController("n1", HostPaths.under(tmp_path), load_catalog(), make_runner(str(tmp_path)), open_nvml(lib),
                       clock)
    c.discover({}, {})
    twin = NodeTwinSpec(node_name="n1", profile="eco", gpu=GPUCapSpec(power_cap=GPUPowerCap(cap_watts_per_gpu=350)))
    assert c.reconcile_gpu(twin).drift == ""
    lib.enforced_mw = 700_000  # the driver dropped the limit; nvmlDeviceGetPowerManagementLimit still says 350 W
    clock.advance(61)
    out = c.reconcile_gpu(twin)
    assert out.drift == "gpu 0 enforces 700.0W, intent 350.0W; re-applied"
    assert lib.sets == 2


NVMLError_NotSupported = type("NVMLError_NotSupported", (Exception,), {})
NVMLError_Unknown = type("NVMLError_Unknown", (Exception,), {})


class EnforcedRefusingNVML(FakeNVML):
    """nvmlDeviceGetEnforcedPowerLimit raising ``error`` (pynvml's exception classes by name)."""

    def __init__(self, error: type[Exception]) -> None:
        super().__init__(n=1)
        self.error = error

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        raise self.error("Unknown Error" if self.error is NVMLError_Unknown else "Not Supported")


def test_nvml_enforced_limit_that_fails_is_unverified_one_not_supported_is_not(tmp_path: Any) -> None:
    testtrees.cpuinfo(tmp_path)
    twin = NodeTwinSpec(node_name="n1", profile="eco", gpu=GPUCapSpec(power_cap=GPUPowerCap(cap_watts_per_gpu=350)))
    results = {}
    for error in (NVMLError_NotSupported, NVMLError_Unknown):
        clock = FakeClock()
        c = NodeController("n1", HostPaths.under(tmp_path), load_catalog(), make_runner(str(tmp_path)),
                           open_nvml(EnforcedRefusingNVML(error)), clock)
        c.discover({}, {})
        c.reconcile_gpu(twin)
        clock.advance(61)  # the next verify reads the enforced limit
        out = c.reconcile_gpu(twin)
        results[error.__name__] = (out.result, out.message)
    assert results["NVMLError_NotSupported"] == ("applied", "applied gpu cap 350.0W on 1 devices")
    result, message = results["NVMLError_Unknown"]
    assert result == "error" and "unverified" in message and "nvmlDeviceGetEnforcedPowerLimit: Unknown Error" in message
