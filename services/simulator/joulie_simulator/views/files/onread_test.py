"""Files mode with counters written when they are read (fanotify pre-content events), against the
real kernel: a reader in another process sees the value of the moment it reads, the tick no longer
rewrites those counters, and where the kernel or filesystem refuses, the tick writes them as before."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import EVENT_FILE_UNWRITABLE, EVENT_FILE_WRITABLE, Emulator
from joulie_simulator.physics.model import Load
from joulie_simulator.views.files.onread import OnRead
from joulie_simulator.views.files.trees import FileTrees

ENERGY0 = "sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/energy_uj"


def _trees(root: Path, on_read: bool = True) -> tuple[Emulator, FileTrees]:
    emu = Emulator([("node-a", builtin_profile("intel-xeon-2s-rapl")), ("node-b", builtin_profile("amd-epyc-2s-hsmp"))],
                   tick_s=1.0, clock=lambda: 0.0)
    for name in emu.nodes:
        emu.set_load(name, Load(cpu_util=0.7))
    trees = FileTrees(root, emu, on_read=on_read)
    trees.ensure()
    return emu, trees


@pytest.fixture
def on_read(tmp_path: Path) -> Iterator[tuple[Emulator, FileTrees]]:
    """Trees with their counters on read, skipped where the kernel or filesystem has no pre-content events."""
    emu, trees = _trees(tmp_path)
    try:
        if trees.onread is None:
            pytest.skip(f"no pre-content events here: {trees.on_read_refused}")
        yield emu, trees
    finally:
        trees.close()


def _cat(path: Path) -> str:
    # Another process, as an agent is: the kernel holds its read until the fill has answered.
    return subprocess.run(["cat", str(path)], capture_output=True, text=True, timeout=20, check=True).stdout


def test_a_counter_is_written_when_read_and_not_by_the_tick(tmp_path: Path, on_read: tuple[Emulator, FileTrees]) -> None:
    emu, trees = on_read
    assert trees.onread is not None
    path = tmp_path / "node-a" / ENERGY0
    before = os.stat(path).st_mtime_ns
    for _ in range(3):
        trees.tick()
    assert os.stat(path).st_mtime_ns == before  # three ticks, the counter not rewritten
    shown = _cat(path)
    assert shown == emu.read("node-a", ENERGY0, at_read_time=False).decode() and int(shown) > 0
    # One fill for the read from the start; cat's second read (at the end of the file) is answered, not filled.
    assert (trees.onread.fills, trees.onread.events) == (1, 2)
    trees.tick()
    later = _cat(path)
    assert int(later) > int(shown) and later == emu.read("node-a", ENERGY0, at_read_time=False).decode()
    # The other node's counters too (amd_energy, HSMP power), each by its own file.
    for rel in ("sys/devices/platform/amd_energy.0/hwmon/hwmon0/energy1_input",
                "sys/devices/platform/amd_hsmp/hwmon/hwmon1/power1_input"):
        assert _cat(tmp_path / "node-b" / rel) == emu.read("node-b", rel, at_read_time=False).decode()
    trees.tick()
    trees.close()
    # Closed: readers read what the files hold (the last read's value), nobody is held.
    assert _cat(path) == later


def test_a_shorter_value_replaces_a_longer_one_whole(tmp_path: Path, on_read: tuple[Emulator, FileTrees]) -> None:
    emu, _ = on_read
    path = tmp_path / "node-a" / ENERGY0
    with open(path, "w") as f:  # a longer number than the counter holds (written before the read)
        f.write("123456789012345\n")
    assert _cat(path) == emu.read("node-a", ENERGY0, at_read_time=False).decode()


def test_an_immutable_counter_is_read_as_it_is_and_said_once(tmp_path: Path, on_read: tuple[Emulator, FileTrees],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    emu, trees = on_read
    path = tmp_path / "node-a" / ENERGY0
    held = _cat(path)
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("this filesystem or user cannot make a file immutable")
    try:
        trees.tick()
        assert _cat(path) == held and _cat(path) == held  # not written, nobody held
        assert emu.read("node-a", ENERGY0, at_read_time=False).decode() != held
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    assert _cat(path) == emu.read("node-a", ENERGY0, at_read_time=False).decode()
    said = capsys.readouterr().out
    assert said.count("cannot write") == 1 and "written on read again" in said
    # The emulator's events say it too, as for a file the tick cannot write.
    assert [(e.name, e.node, e.file) for e in emu.events if e.name in (EVENT_FILE_UNWRITABLE, EVENT_FILE_WRITABLE)] == [
        (EVENT_FILE_UNWRITABLE, "node-a", ENERGY0), (EVENT_FILE_WRITABLE, "node-a", ENERGY0)]


def test_readers_within_one_tick_cost_one_write(tmp_path: Path, on_read: tuple[Emulator, FileTrees]) -> None:
    _, trees = on_read
    assert trees.onread is not None
    trees.tick()
    texts = {_cat(tmp_path / "node-a" / ENERGY0) for _ in range(5)}
    assert len(texts) == 1 and trees.onread.fills == 1 and trees.onread.events == 10


def test_where_the_filesystem_refuses_the_tick_writes_the_counters() -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm")
    root = Path(os.path.realpath(shm)) / f"joulie-onread-{os.getpid()}"
    root.mkdir()
    try:
        _, trees = _trees(root)
        try:
            assert trees.onread is None  # tmpfs allows no pre-content events (nor does an unprivileged user)
            assert "fanotify pre-content events" in trees.on_read_refused
            path = root / "node-a" / ENERGY0
            trees.tick()
            first = path.read_text()
            trees.tick()
            assert int(path.read_text()) > int(first)
        finally:
            trees.close()
    finally:
        subprocess.run(["rm", "-rf", str(root)], check=False)


def test_a_fill_that_fails_holds_no_reader(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "energy_uj"
    path.write_text("41\n")

    def broken(node: str, rel: str) -> bytes:
        raise RuntimeError(f"no state for {node}/{rel}")

    try:
        onread = OnRead(broken)
    except OSError as err:
        pytest.skip(f"no pre-content events here: {err}")
    try:
        try:
            onread.mark(str(path), "node-a", "energy_uj")
        except OSError as err:
            pytest.skip(f"no pre-content events here: {err}")
        onread.start()
        assert _cat(path) == "41\n" and _cat(path) == "41\n"  # answered, not held (cat's timeout would fail it)
        assert capsys.readouterr().out.count("fill on read failed") == 1
    finally:
        onread.close()
