"""How the agent reads node files: an attribute in one read(2), /proc files to the end."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path, PurePath

import pytest

from joulie_agent.host import hostread
from joulie_agent.host.hostread import ATTR_READ_BYTES, HostPaths, read_policies, read_proc_text, read_text
from joulie_agent.host.sysfswrite import read_int


def _fifo_writer(path: Path, pieces: list[bytes], pause_s: float) -> threading.Thread:
    """A writer that hands `pieces` over one at a time, as a seq_file or a slow device would."""

    def write() -> None:
        fd = os.open(path, os.O_WRONLY)
        try:
            for piece in pieces:
                os.write(fd, piece)
                time.sleep(pause_s)
        finally:
            os.close(fd)

    t = threading.Thread(target=write, daemon=True)
    t.start()
    return t


def test_an_attribute_is_what_the_first_read_returns_and_a_proc_file_is_read_to_the_end(tmp_path: Path) -> None:
    attr, proc = tmp_path / "attr", tmp_path / "proc"
    os.mkfifo(attr)
    os.mkfifo(proc)
    # sysfs answers the whole attribute in the first read: a second read(2) would only find the end.
    w = _fifo_writer(attr, [b"165000000\n", b"trailing\n"], 0.3)
    assert read_text(attr) == "165000000\n"
    w.join(5)
    # /proc/cpuinfo may come back short before its end: read until a read returns nothing.
    w = _fifo_writer(proc, [b"processor\t: 0\n", b"processor\t: 1\n"], 0.1)
    assert read_proc_text(proc) == "processor\t: 0\nprocessor\t: 1\n"
    w.join(5)


def test_a_file_longer_than_one_read_is_read_whole(tmp_path: Path) -> None:
    big = tmp_path / "big"
    text = "x" * (3 * ATTR_READ_BYTES + 17)
    big.write_text(text)
    assert read_text(big) == text
    assert read_proc_text(big) == text


def test_unreadable_files_are_none_and_garbage_is_no_integer(tmp_path: Path) -> None:
    assert read_text(tmp_path / "missing") is None
    assert read_proc_text(tmp_path / "missing") is None
    assert read_text(tmp_path) is None  # a directory: EISDIR on read
    (tmp_path / "limit").write_bytes(b"\xff\xfe garbage")
    assert read_int(tmp_path / "limit") is None
    (tmp_path / "limit").write_text("2400000\n")
    assert read_int(tmp_path / "limit") == 2400000


def _policy(d: Path) -> None:
    d.mkdir(parents=True)
    for name, value in (("scaling_driver", "acpi-cpufreq"), ("cpuinfo_min_freq", "1000000"),
                        ("cpuinfo_max_freq", "3000000"), ("scaling_cur_freq", "3000000")):
        (d / name).write_text(value + "\n")


def test_policies_are_each_read_once_a_link_to_one_counts_once_and_a_linked_tree_is_followed(tmp_path: Path) -> None:
    cpufreq = tmp_path / "sys" / "devices" / "system" / "cpu" / "cpufreq"
    for p in range(3):
        _policy(cpufreq / f"policy{p}")
    (cpufreq / "policy9").symlink_to(cpufreq / "policy1")  # the same policy under a second name
    elsewhere = tmp_path / "elsewhere" / "policy7"  # a policy whose directory lives elsewhere
    _policy(elsewhere)
    (cpufreq / "policy7").symlink_to(elsewhere)
    (cpufreq / "notapolicy").mkdir()
    paths = HostPaths.under(tmp_path)
    got = read_policies(paths)
    assert [p.policy_id for p in got] == ["policy0", "policy1", "policy2", "policy7"]
    assert all(p.cpuinfo_max_khz == 3_000_000 for p in got)
    # known policies are kept as they are, a new one is read whole
    (cpufreq / "policy9").unlink()
    _policy(cpufreq / "policy3")
    again = read_policies(paths, got)
    assert [p.policy_id for p in again] == ["policy0", "policy1", "policy2", "policy3", "policy7"]
    assert again[0] is got[0] and again[3].cpuinfo_max_khz == 3_000_000


def test_the_counter_reads_of_the_export_and_the_cpu_loop_join_each_path_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Joining a Path cost about what the read did: a pool agent reads the same few files of every node
    # every few seconds (py-spy over bench/apirequests.py).
    for zone, uj in (("intel-rapl:0", "1000"), ("intel-rapl:1", "2000")):
        (tmp_path / "sys/class/powercap" / zone).mkdir(parents=True)
        (tmp_path / "sys/class/powercap" / zone / "energy_uj").write_text(uj + "\n")
    paths = HostPaths.under(tmp_path)
    hostread.read_counter_uj(paths, "intel-rapl:0")
    hostread.read_energy(paths, ["intel-rapl:1"])
    joins = [0]
    truediv = PurePath.__truediv__

    def counting(self: PurePath, key: str) -> PurePath:
        joins[0] += 1
        return truediv(self, key)

    monkeypatch.setattr(PurePath, "__truediv__", counting)
    got = [hostread.read_counter_uj(paths, z) for z in ("intel-rapl:0", "intel-rapl:1")]
    energy, _ = hostread.read_energy(paths, ["intel-rapl:0", "intel-rapl:1"])
    assert joins[0] == 0
    assert got == [energy["intel-rapl:0"], energy["intel-rapl:1"]] == [1000, 2000]
    assert paths.counter_file("hwmon3/energy1_input") == tmp_path / "sys/class/hwmon/hwmon3/energy1_input"
    assert paths.zone_file("intel-rapl:0", "constraint_0_power_limit_uw") == \
        tmp_path / "sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw"
