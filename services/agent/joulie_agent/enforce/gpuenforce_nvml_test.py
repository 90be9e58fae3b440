"""GPU caps and SM clock locks through NVML on one node: set, partial failure, drift (stand-in pynvml)."""

from typing import Any

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.enforce.node import NodeController
from joulie_agent.fixtures import testtrees
from joulie_agent.host.hostread import HostPaths
from joulie_agent.host.nvml import open_nvml
from joulie_agent.host.nvml_test import FakeNVML
from joulie_agent.host.toolrun import make_runner
from joulie_api.generated.nodetwin import GPUCapSpec, GPUClockLock, GPUPowerCap, NodeTwinSpec
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


class LockingNVML(FakeNVML):
    """Boards with SM clocks and a lock that limits them while below the maximum (bit 0x2 of the
    clocks event reasons, nvmlClocksEventReasonApplicationsClocksSetting)."""

    def __init__(self) -> None:
        super().__init__(n=2)
        self.locks: dict[int, tuple[int, int]] = {}
        self.lock_calls: list[tuple[int, int, int] | tuple[int]] = []

    def nvmlDeviceGetMaxClockInfo(self, h: int, clock_type: int) -> int:
        assert clock_type == 1  # NVML_CLOCK_SM
        return 1980

    def nvmlDeviceGetSupportedMemoryClocks(self, h: int) -> list[int]:
        return [2619]

    def nvmlDeviceGetSupportedGraphicsClocks(self, h: int, mem: int) -> list[int]:
        return list(range(1980, 344, -15))

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return 0x1 | (0x2 if h in self.locks and self.locks[h][1] < 1980 else 0)

    def nvmlDeviceSetGpuLockedClocks(self, h: int, lo: int, hi: int) -> None:
        self.locks[h] = (lo, hi)
        self.lock_calls.append((h, lo, hi))

    def nvmlDeviceResetGpuLockedClocks(self, h: int) -> None:
        self.locks.pop(h, None)
        self.lock_calls.append((h,))


def test_nvml_locks_each_board_reads_the_lock_back_and_sets_a_lost_one_again(tmp_path: Any) -> None:
    testtrees.cpuinfo(tmp_path)
    lib = LockingNVML()
    clock = FakeClock()
    c = NodeController("n1", HostPaths.under(tmp_path), load_catalog(), make_runner(str(tmp_path)), open_nvml(lib),
                       clock)
    c.discover({}, {})
    twin = NodeTwinSpec(node_name="n1", profile="eco", gpu=GPUCapSpec(clock_lock=GPUClockLock(pct_of_max=50)))
    out = c.reconcile_gpu(twin).lock
    # 50 % of 1980 MHz = 990 MHz, a supported clock; the floor is the board's lowest, 345 MHz.
    assert out is not None and (out.result, out.locked_max_mhz) == ("applied", 990)
    assert lib.locks == {0: (345, 990), 1: (345, 990)}
    del lib.locks[1]  # a device reset
    clock.advance(61)
    again = c.reconcile_gpu(twin).lock
    assert again is not None and again.drift == "gpu 1 SM clock lock 990 MHz lost (no longer limited by a clock setting); re-applied"
    assert lib.lock_calls[-1] == (1, 345, 990) and again.result == "applied"
    released = c.reconcile_gpu(NodeTwinSpec(node_name="n1", profile="eco")).lock
    assert released is not None and released.result == "none" and lib.locks == {}


def test_nvml_board_without_clock_support_is_refused_not_locked(tmp_path: Any) -> None:
    testtrees.cpuinfo(tmp_path)
    lib: Any = FakeNVML(n=1)  # no clock calls: every one raises AttributeError, as NotSupported would be
    c = NodeController("n1", HostPaths.under(tmp_path), load_catalog(), make_runner(str(tmp_path)), open_nvml(lib),
                       FakeClock())
    c.discover({}, {})
    out = c.reconcile_gpu(NodeTwinSpec(node_name="n1", profile="eco",
                                       gpu=GPUCapSpec(clock_lock=GPUClockLock(max_mhz=1500)))).lock
    assert out is not None and out.result == "error"
    assert out.message.startswith("supported SM clocks unknown: nvml: gpu 0: clocks: AttributeError")
