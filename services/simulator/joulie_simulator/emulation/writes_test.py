"""The write-semantics table: what a kernel answers to each write an agent or tool makes."""

import errno
import json

import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import EVENT_GPU_CLOCK_LOCK, EVENT_WRITE_REJECTED, Emulator
from joulie_simulator.emulation.writes import parse_kstrtou

PKG = "sys/devices/virtual/powercap/intel-rapl/intel-rapl:0"
DRAM = f"{PKG}/intel-rapl:0:0"
POL = "sys/devices/system/cpu/cpufreq/policy0"
LOCK = "state/nvml/gpu0/locked_clocks_mhz"
OD = "sys/devices/pci0000:10/0000:10:00.0/pp_od_clk_voltage"
OD_TABLE = "OD_SCLK:\n0: 500Mhz\n1: {}Mhz\nOD_RANGE:\nSCLK:     500Mhz       2100Mhz"

# (profile, file, written, errno, what the file reads after)
TABLE = [
    ("intel-xeon-2s-rapl", f"{PKG}/constraint_0_power_limit_uw", b"120000000\n", 0, "120000000"),
    ("intel-xeon-2s-rapl", f"{PKG}/constraint_0_power_limit_uw", b"+120000000", 0, "120000000"),
    ("intel-xeon-2s-rapl", f"{PKG}/constraint_0_power_limit_uw", b"120100000", 0, "120000000"),  # quantised to 125 mW
    ("intel-xeon-2s-rapl", f"{PKG}/constraint_0_power_limit_uw", b"500000000", 0, "500000000"),  # enforced at max_power_uw
    ("intel-xeon-2s-rapl", f"{PKG}/constraint_0_power_limit_uw", b"120 W", errno.EINVAL, "165000000"),
    ("intel-xeon-2s-rapl", f"{PKG}/constraint_0_power_limit_uw", b"-5", errno.EINVAL, "165000000"),
    ("intel-xeon-2s-rapl", f"{PKG}/constraint_0_power_limit_uw", b"", errno.EINVAL, "165000000"),
    ("intel-xeon-2s-rapl", f"{DRAM}/constraint_0_power_limit_uw", b"30000000", errno.ENODATA, "0"),
    ("intel-xeon-2s-rapl", f"{PKG}/constraint_0_time_window_us", b"0", errno.EINVAL, "999424"),
    ("intel-xeon-2s-rapl", f"{PKG}/enabled", b"2", errno.EINVAL, "1"),
    ("intel-xeon-2s-rapl", f"{PKG}/enabled", b"0\n", 0, "0"),
    ("intel-xeon-2s-rapl", f"{PKG}/energy_uj", b"0", errno.EACCES, "0"),
    ("intel-xeon-2s-rapl", f"{PKG}/name", b"dram", errno.EACCES, "package-0"),
    ("intel-xeon-2s-rapl", f"{POL}/scaling_max_freq", b"2000000", 0, "2000000"),
    ("intel-xeon-2s-rapl", f"{POL}/scaling_max_freq", b"0x1e8480", 0, "2000000"),
    ("intel-xeon-2s-rapl", f"{POL}/scaling_max_freq", b"9000000", 0, "3900000"),  # clamped to cpuinfo_max_freq
    ("intel-xeon-2s-rapl", f"{POL}/scaling_max_freq", b"fast", errno.EINVAL, "3900000"),
    ("intel-xeon-2s-rapl", f"{POL}/scaling_governor", b"performance\n", 0, "performance"),
    ("intel-xeon-2s-rapl", f"{POL}/scaling_governor", b"ondemand", errno.EINVAL, "powersave"),
    ("intel-xeon-2s-rapl", f"{POL}/scaling_cur_freq", b"1000000", errno.EACCES, "1000000"),
    ("amd-epyc-2s-energy-only", f"{POL}/scaling_max_freq", b"2000000", 0, "1900000"),  # resolved to the P-state table
    ("amd-epyc-2s-energy-only", f"{POL}/scaling_min_freq", b"2000000", 0, "2400000"),
    ("amd-epyc-2s-hsmp", f"{POL}/energy_performance_preference", b"power", errno.EBUSY, "performance"),
    ("amd-epyc-2s-hsmp", f"{POL}/energy_performance_preference", b"performance", 0, "performance"),
    ("amd-epyc-2s-hsmp", "sys/devices/platform/amd_hsmp/hwmon/hwmon1/power1_cap", b"300000500", 0, "300000000"),
    ("amd-epyc-2s-hsmp", "sys/devices/platform/amd_hsmp/hwmon/hwmon1/power1_cap", b"900000000", 0, "400000000"),
    ("amd-instinct-mi300x-8gpu", "sys/devices/pci0000:10/0000:10:00.0/hwmon/hwmon1/power1_cap", b"500000000", 0, "500000000"),
    ("amd-instinct-mi300x-8gpu", "sys/devices/pci0000:10/0000:10:00.0/hwmon/hwmon1/power1_cap", b"800000000", errno.EINVAL, "750000000"),
    ("nvidia-h100-nvl-8gpu", "state/nvml/gpu0/power_limit_mw", b"250000", 0, "250000"),
    ("nvidia-h100-nvl-8gpu", "state/gpus.json", b"{}", errno.EACCES, None),
    # SM clock locks: nvidia-smi -lgc/-rgc (the ceiling held at a supported clock), the amdgpu OverDrive table.
    ("nvidia-h100-nvl-8gpu", LOCK, b"345,1500\n", 0, "345,1500"),
    ("nvidia-h100-nvl-8gpu", LOCK, b"0,1500", 0, "345,1500"),
    ("nvidia-h100-nvl-8gpu", LOCK, b"345,2400", 0, "345,1785"),  # above the maximum: held at 1785 MHz
    ("nvidia-h100-nvl-8gpu", LOCK, b"none\n", 0, "none"),
    ("nvidia-h100-nvl-8gpu", LOCK, b"1500", errno.EINVAL, "none"),
    ("nvidia-h100-nvl-8gpu", LOCK, b"1000,1500", errno.EINVAL, "none"),  # a raised floor: not modelled
    ("nvidia-h100-nvl-8gpu", LOCK, b"1500,1000", errno.EINVAL, "none"),
    ("amd-instinct-mi300x-8gpu", OD, b"s 1 1500\n", 0, OD_TABLE.format(1500)),
    ("amd-instinct-mi300x-8gpu", OD, b"c\n", 0, OD_TABLE.format(2100)),
    ("amd-instinct-mi300x-8gpu", OD, b"s 1 2200\n", errno.EINVAL, OD_TABLE.format(2100)),
    ("amd-instinct-mi300x-8gpu", OD, b"s 1 400\n", errno.EINVAL, OD_TABLE.format(2100)),
    ("amd-instinct-mi300x-8gpu", OD, b"s 0 600\n", errno.EINVAL, OD_TABLE.format(2100)),
]


@pytest.mark.parametrize(("profile", "path", "data", "code", "after"), TABLE)
def test_a_write_is_answered_as_the_kernel_answers_it(profile: str, path: str, data: bytes, code: int, after: str | None) -> None:
    emu = Emulator([("n", builtin_profile(profile))], clock=lambda: 0.0)
    out = emu.write("n", path, data)
    assert out.errno == code, out.detail
    if after is not None:
        assert emu.read("n", path).decode().strip() == after
    rejected = [e for e in emu.events if e.name == EVENT_WRITE_REJECTED]
    if code:
        assert [(e.file, e.error_type) for e in rejected] == [(path, errno.errorcode[code].lower())]
    else:
        assert rejected == []


def test_a_bios_locked_limit_answers_eacces() -> None:
    p = builtin_profile("intel-xeon-2s-rapl")
    pc = p.powercap
    assert pc is not None
    locked = pc.package.constraints[0].model_copy(update={"reject_writes": "eacces"})
    prof = p.model_copy(update={"powercap": pc.model_copy(update={"package": pc.package.model_copy(update={"constraints": [locked]})})})
    emu = Emulator([("n", prof)], clock=lambda: 0.0)
    assert emu.write("n", f"{PKG}/constraint_0_power_limit_uw", b"100000000").errno == errno.EACCES


@pytest.mark.parametrize(("text", "value"), [(b"10", 10), (b"10\n", 10), (b"+7", 7), (b"10\n\n", None), (b" 10", None), (b"1e3", None)])
def test_kstrtou_takes_digits_and_one_trailing_newline(text: bytes, value: int | None) -> None:
    assert parse_kstrtou(text) == value


def test_a_lock_reaches_the_boards_truth_and_a_device_reset_clears_it() -> None:
    emu = Emulator([("n", builtin_profile("nvidia-h100-nvl-8gpu"))], clock=lambda: 0.0)
    assert emu.write("n", LOCK, b"345,1500\n").ok
    truth = emu.truth("n")["gpus"]
    assert (truth[0]["lockMaxMhz"], truth[1]["lockMaxMhz"], truth[0]["smClockMaxMhz"]) == (1500, None, 1785)
    assert json.loads(emu.read("n", "state/gpus.json"))["gpus"][0]["locked_max_mhz"] == 1500
    assert [e.message for e in emu.events if e.name == EVENT_GPU_CLOCK_LOCK] == ["gpu 0 SM clock locked at or below 1500 MHz"]
    emu.restart_view("n")  # a device reset (chaos limit-reset): limits and locks back at their defaults
    assert emu.truth("n")["gpus"][0]["lockMaxMhz"] is None
    assert emu.read("n", LOCK) == b"none\n"


def test_an_amd_overdrive_reset_releases_the_sclk_maximum() -> None:
    emu = Emulator([("n", builtin_profile("amd-instinct-mi300x-8gpu"))], clock=lambda: 0.0)
    assert emu.write("n", OD, b"s 1 1500\n").ok and emu.truth("n")["gpus"][0]["lockMaxMhz"] == 1500
    assert emu.write("n", OD, b"r\n").ok and emu.truth("n")["gpus"][0]["lockMaxMhz"] is None
