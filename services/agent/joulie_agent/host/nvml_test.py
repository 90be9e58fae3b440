"""NVML path: inventory and set through a stand-in of the pynvml module."""

from typing import Any

from joulie_agent.host.nvml import open_nvml


class NotSupported(Exception):
    pass


class FakeNVML:
    def __init__(self, n: int = 2, fail_init: bool = False):
        self.limits_mw = {i: 700_000 for i in range(n)}
        self.fail_init = fail_init

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlDeviceGetCount(self) -> int:
        return len(self.limits_mw)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return b"NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetPowerManagementLimitConstraints(self, h: int) -> tuple[int, int]:
        return (200_000, 700_000)

    def nvmlDeviceGetPowerManagementLimit(self, h: int) -> int:
        return self.limits_mw[h]

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: int) -> int:
        raise NotSupported("Not Supported")

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return 71_500

    def nvmlDeviceSetPowerManagementLimit(self, h: int, mw: int) -> None:
        if h == 1:
            raise NotSupported("Insufficient Permissions")
        self.limits_mw[h] = mw


def test_library_that_does_not_load_means_no_nvml() -> None:
    assert open_nvml(FakeNVML(fail_init=True)) is None


def test_inventory_in_watts_with_unsupported_fields_unknown() -> None:
    nv = open_nvml(FakeNVML())
    assert nv is not None
    inv = nv.inventory()
    d = inv.devices[0]
    assert (inv.source, d.name, d.min_w, d.max_w, d.current_cap_w, d.default_w, d.draw_w) == (
        "nvml", "NVIDIA H100 80GB HBM3", 200.0, 700.0, 700.0, None, 71.5)
    assert any("DefaultLimit" in w for w in inv.warnings)


def test_set_reports_the_refusing_gpu() -> None:
    lib: Any = FakeNVML()
    nv = open_nvml(lib)
    assert nv is not None
    assert nv.set_power_limit(0, 250) is None and lib.limits_mw[0] == 250_000
    err = nv.set_power_limit(1, 250)
    assert err is not None and "gpu 1" in err and "Insufficient Permissions" in err


class ActivityNVML(FakeNVML):
    """Board 1 refuses the clock calls (NotSupported), as a board without clock reporting does."""

    class Util:
        gpu = 87
        memory = 40

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return f"GPU-0000000{h}-aaaa-bbbb-cccc-dddddddddddd"

    def nvmlDeviceGetUtilizationRates(self, h: int) -> "ActivityNVML.Util":
        return ActivityNVML.Util()

    def nvmlDeviceGetClockInfo(self, h: int, clock: int) -> int:
        assert clock == 1  # NVML_CLOCK_SM
        if h == 1:
            raise NotSupported("Not Supported")
        return 1755

    def nvmlDeviceGetMaxClockInfo(self, h: int, clock: int) -> int:
        if h == 1:
            raise NotSupported("Not Supported")
        return 1980


def test_activity_gives_uuid_utilisation_ratio_and_sm_clocks_unknown_where_refused() -> None:
    nv = open_nvml(ActivityNVML())
    assert nv is not None
    report = nv.activity()
    b0, b1 = report.boards
    assert (b0.uuid, b0.utilization, b0.sm_clock_mhz, b0.sm_clock_max_mhz) == (
        "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd", 0.87, 1755.0, 1980.0)
    assert (b1.utilization, b1.sm_clock_mhz, b1.sm_clock_max_mhz) == (0.87, None, None)
    assert b0.dram_active is None  # the DCGM ratios never come from NVML
    assert sum("gpu 1" in w and "Clock" in w for w in report.warnings) == 2
