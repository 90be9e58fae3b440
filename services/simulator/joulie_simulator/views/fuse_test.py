"""A real FUSE mount, read and written from other processes (root and /dev/fuse needed)."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from joulie_common.clock import FakeClock
from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import EVENT_WRITE_REJECTED, Emulator
from joulie_simulator.physics.model import Load
from joulie_simulator.views.fuse import FuseServer

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/fuse"), reason="FUSE mounts need root and /dev/fuse"
)

PKG0 = "sys/class/powercap/intel-rapl:0"
DRAM0 = "sys/class/powercap/intel-rapl:0:0"


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[tuple[Emulator, Path, FakeClock]]:
    clock = FakeClock(t=100.0)
    emu = Emulator([("node-a", builtin_profile("intel-xeon-2s-rapl")), ("gpu-a", builtin_profile("nvidia-h100-nvl-8gpu"))], clock=clock.monotonic)
    mnt = tmp_path / "fuse"
    server = FuseServer(emu, mnt)
    server.start()
    try:
        yield emu, mnt, clock
    finally:
        server.stop()
    assert not os.path.ismount(mnt)


def sh(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10)


def test_another_process_reads_the_tree_and_counters_move_at_read_time(mounted: tuple[Emulator, Path, FakeClock]) -> None:
    emu, mnt, clock = mounted
    assert sorted(os.listdir(mnt)) == ["gpu-a", "node-a"]
    assert sh(f"cat {mnt}/node-a/{PKG0}/name").stdout == "package-0\n"
    assert sh(f"ls {mnt}/node-a/sys/class/powercap").stdout.split() == ["intel-rapl", "intel-rapl:0", "intel-rapl:0:0", "intel-rapl:1", "intel-rapl:1:0"]
    emu.set_load("node-a", Load(cpu_util=1.0))
    emu.tick()
    first = int(sh(f"cat {mnt}/node-a/{PKG0}/energy_uj").stdout)
    clock.advance(0.5)  # half a tick later, no tick in between
    second = int(sh(f"cat {mnt}/node-a/{PKG0}/energy_uj").stdout)
    power = emu.truth("node-a")["zones"][0]["powerW"]
    assert second - first == pytest.approx(power * 0.5e6, rel=1e-3)


def test_a_write_takes_effect_at_once_and_a_refused_one_fails_with_the_kernel_errno(mounted: tuple[Emulator, Path, FakeClock]) -> None:
    emu, mnt, _ = mounted
    ok = sh(f"/bin/echo 120000000 > {mnt}/node-a/{PKG0}/constraint_0_power_limit_uw")
    assert ok.returncode == 0, ok.stderr
    assert sh(f"cat {mnt}/node-a/{PKG0}/constraint_0_power_limit_uw").stdout == "120000000\n"
    assert emu.nodes["node-a"].state.zones[0].limits_uw[0] == 120_000_000
    refused = sh(f"/bin/echo 30000000 > {mnt}/node-a/{DRAM0}/constraint_0_power_limit_uw")
    assert refused.returncode != 0 and "No data available" in refused.stderr
    bad = sh(f"/bin/echo lots > {mnt}/node-a/{PKG0}/constraint_0_power_limit_uw")
    assert bad.returncode != 0 and "Invalid argument" in bad.stderr
    ro = sh(f"/bin/echo 1 > {mnt}/node-a/{PKG0}/energy_uj")
    assert ro.returncode != 0 and "Permission denied" in ro.stderr
    assert [e.error_type for e in emu.events if e.name == EVENT_WRITE_REJECTED] == ["enodata", "einval"]


def test_nvidia_limit_file_and_gpu_state_are_served(mounted: tuple[Emulator, Path, FakeClock]) -> None:
    emu, mnt, _ = mounted
    assert os.path.isfile(mnt / "gpu-a/dev/nvidiactl")
    assert sh(f"/bin/echo 250000 > {mnt}/gpu-a/state/nvml/gpu2/power_limit_mw").returncode == 0
    assert '"limit_w": 250.0' in (mnt / "gpu-a/state/gpus.json").read_text()
    assert os.readlink(mnt / "gpu-a/bin/nvidia-smi") == "/emu/lib/fakesmi"


SERVE = """
import signal, sys
from pathlib import Path
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.views.fuse import FuseServer
from joulie_hwprofiles.schema import builtin_profile
FuseServer(Emulator([("node-a", builtin_profile("vm-no-powercap"))]), Path(sys.argv[1])).start()
print("serving", flush=True)
signal.pause()
"""


def test_a_dead_simulator_leaves_enotconn_and_a_new_one_recovers_the_same_path(tmp_path: Path) -> None:
    mnt = tmp_path / "fuse"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(mnt)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "serving"
        assert (mnt / "node-a/proc/cpuinfo").read_text().count("processor") == 8
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    with pytest.raises(OSError) as dead:
        (mnt / "node-a/proc/cpuinfo").read_text()
    assert dead.value.errno == errno.ENOTCONN
    server = FuseServer(Emulator([("node-a", builtin_profile("vm-no-powercap"))]), mnt)
    server.start()
    try:
        deadline = time.monotonic() + 5
        while True:  # a reader retrying the same path recovers without a restart
            try:
                assert (mnt / "node-a/proc/cpuinfo").read_text().count("processor") == 8
                break
            except OSError:
                assert time.monotonic() < deadline
    finally:
        server.stop()
    assert not os.path.ismount(mnt)
