"""NVML through nvidia-ml-py (`pynvml`): inventory, per-GPU power limits and SM clock locks. Shell.

`open_nvml()` returns None when the library cannot load (no driver: NVMLError_LibraryNotFound),
and the agent then uses `nvidia-smi`. The module object is injectable so tests can pass a fake.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from joulie_agent.control.gpucontrol import nvml_limit_mw
from joulie_agent.discovery.gpuactivity import ActivityReport, BoardActivity
from joulie_agent.discovery.gpuclocks import NVML_REASON_APPLICATIONS_CLOCKS, ClockRange, ClockReport, LockReading
from joulie_agent.discovery.gputools import GPUDevice, Inventory

NVML_CLOCK_SM = 1  # pynvml.NVML_CLOCK_SM

log = logging.getLogger(__name__)


class NVML:
    def __init__(self, lib: Any):
        self.lib = lib

    def inventory(self) -> Inventory:
        inv = Inventory("nvidia", "nvml")
        lib = self.lib
        for i in range(int(lib.nvmlDeviceGetCount())):
            h = lib.nvmlDeviceGetHandleByIndex(i)
            name = lib.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else str(name)

            def mw(fn: str, handle: Any = h, index: int = i) -> Any:
                try:
                    return getattr(lib, fn)(handle)
                except Exception as err:  # NVMLError_NotSupported and friends: unknown, not 0
                    inv.warnings.append(f"nvml: gpu {index}: {fn}: {err}")
                    return None

            limits = mw("nvmlDeviceGetPowerManagementLimitConstraints")
            cur = mw("nvmlDeviceGetPowerManagementLimit")
            dflt = mw("nvmlDeviceGetPowerManagementDefaultLimit")
            draw = mw("nvmlDeviceGetPowerUsage")
            inv.devices.append(GPUDevice(
                index=i, name=name,
                min_w=limits[0] / 1000 if limits else None, max_w=limits[1] / 1000 if limits else None,
                current_cap_w=cur / 1000 if cur is not None else None,
                default_w=dflt / 1000 if dflt is not None else None,
                draw_w=draw / 1000 if draw is not None else None,
            ))
        return inv

    def activity(self) -> ActivityReport:
        """Each board's UUID, utilisation and current and highest SM clock (the DCGM ratios come from
        dcgmi, not NVML). A call a board refuses leaves that value unknown, with a warning."""
        out = ActivityReport()
        lib = self.lib
        for i in range(int(lib.nvmlDeviceGetCount())):
            h = lib.nvmlDeviceGetHandleByIndex(i)

            def call(fn: str, *args: Any, handle: Any = h, index: int = i) -> Any:
                try:
                    return getattr(lib, fn)(handle, *args)
                except Exception as err:  # NotSupported: unknown, not 0
                    out.warnings.append(f"nvml: gpu {index}: {fn}: {err}")
                    return None

            uuid = call("nvmlDeviceGetUUID")
            util = call("nvmlDeviceGetUtilizationRates")
            sm = call("nvmlDeviceGetClockInfo", NVML_CLOCK_SM)
            top = call("nvmlDeviceGetMaxClockInfo", NVML_CLOCK_SM)
            out.boards.append(BoardActivity(
                i, uuid.decode() if isinstance(uuid, bytes) else str(uuid or ""),
                min(1.0, max(0.0, float(util.gpu) / 100)) if util is not None else None,
                float(sm) if sm else None, float(top) if top else None,
            ))
        return out

    def set_power_limit(self, index: int, watts: float) -> str | None:
        """Set one GPU's limit; None on success, else the error message."""
        try:
            h = self.lib.nvmlDeviceGetHandleByIndex(index)
            self.lib.nvmlDeviceSetPowerManagementLimit(h, nvml_limit_mw(watts))
        except Exception as err:
            return f"nvml: gpu {index}: set power limit {watts:.0f} W: {err}"
        return None


    def clock_report(self, indices: list[int], ranges: bool) -> ClockReport:
        """Each board's lock reading (its clocks event reasons) and, with ``ranges``, its supported
        SM clocks (the graphics clocks of its first memory clock, bounded by its maximum SM clock).
        A call that fails is a warning naming the board and the call."""
        out = ClockReport()
        lib = self.lib
        for i in indices:
            try:
                h = lib.nvmlDeviceGetHandleByIndex(i)
                # nvml 12.x renamed the throttle reasons to event reasons; older bindings have only the old name.
                fn = getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
                    lib.nvmlDeviceGetCurrentClocksThrottleReasons
                out.readings[i] = LockReading(i, limited=bool(int(fn(h)) & NVML_REASON_APPLICATIONS_CLOCKS))
                if ranges:
                    mems = lib.nvmlDeviceGetSupportedMemoryClocks(h)
                    top = int(lib.nvmlDeviceGetMaxClockInfo(h, NVML_CLOCK_SM))
                    clocks = sorted({int(c) for c in lib.nvmlDeviceGetSupportedGraphicsClocks(h, mems[0]) if int(c) <= top})
                    if clocks:
                        out.ranges[i] = ClockRange(i, tuple(clocks))
            except Exception as err:  # NotSupported, no memory clocks: the board says nothing
                out.warnings.append(f"nvml: gpu {i}: clocks: {type(err).__name__}: {err}")
        return out

    def lock_clocks(self, index: int, floor_mhz: int, max_mhz: int | None) -> str | None:
        """Lock one board's SM clock between ``floor_mhz`` and ``max_mhz`` (None: release the lock);
        None on success, else the error message."""
        try:
            h = self.lib.nvmlDeviceGetHandleByIndex(index)
            if max_mhz is None:
                self.lib.nvmlDeviceResetGpuLockedClocks(h)
            else:
                self.lib.nvmlDeviceSetGpuLockedClocks(h, floor_mhz, max_mhz)
        except Exception as err:
            what = "reset locked clocks" if max_mhz is None else f"lock clocks {floor_mhz},{max_mhz} MHz"
            return f"nvml: gpu {index}: {what}: {err}"
        return None


def open_nvml(lib: Any = None) -> NVML | None:
    if lib is None:
        try:
            lib = importlib.import_module("pynvml")
        except ImportError:
            return None
    try:
        lib.nvmlInit()
    except Exception as err:  # NVMLError_LibraryNotFound / DriverNotLoaded: no NVML on this node
        log.debug("NVML unavailable: %s", err)
        return None
    return NVML(lib)
