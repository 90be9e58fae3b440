"""Issue 23, defect 4: one node's unwritable file is that node's fault, reported, never the end of
emulation for every node."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import EVENT_FILE_UNWRITABLE, EVENT_FILE_WRITABLE, Emulator
from joulie_simulator.physics.model import Load
from joulie_simulator.views.files.publish import Shown
from joulie_simulator.views.files.trees import FileTrees

ENERGY = "sys/class/powercap/intel-rapl:0/energy_uj"
# Where it really is (sys/class/powercap/* are links), as events name it: relative to the node's tree.
ENERGY_REAL = "sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/energy_uj"


def _start(root: Path) -> tuple[Emulator, FileTrees]:
    profile = builtin_profile("intel-xeon-2s-rapl")
    emu = Emulator([("node-a", profile), ("node-b", profile)], tick_s=1.0, clock=lambda: 0.0)
    trees = FileTrees(root, emu, watch=False)
    trees.ensure()
    for n in ("node-a", "node-b"):
        emu.set_load(n, Load(cpu_util=1.0))
    return emu, trees


def _energy(root: Path, node: str) -> int:
    return int((root / node / ENERGY).read_text())


def _chattr(flag: str, path: Path) -> None:
    subprocess.run(["chattr", flag, str(path)], check=True, capture_output=True)


def test_an_immutable_energy_file_is_reported_and_the_other_nodes_go_on(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("chattr") is None:
        pytest.skip("no chattr here")
    emu, trees = _start(tmp_path)
    trees.tick()  # the counter's descriptor is kept open from here on, as in a long run
    target = tmp_path / "node-a" / ENERGY
    try:
        _chattr("+i", target)
    except subprocess.CalledProcessError:
        pytest.skip("this filesystem or user cannot make a file immutable")
    try:
        frozen_a, b0 = _energy(tmp_path, "node-a"), _energy(tmp_path, "node-b")
        for _ in range(3):
            trees.tick()
        assert _energy(tmp_path, "node-b") > b0  # node-b still emulated
        assert _energy(tmp_path, "node-a") == frozen_a
        assert (tmp_path / "node-a" / "sys/class/powercap/intel-rapl:1/energy_uj").read_text() != "0\n"
        faults = [e for e in emu.events if e.name == EVENT_FILE_UNWRITABLE]
        assert len(faults) == 1 and faults[0].node == "node-a" and faults[0].file == ENERGY_REAL
        assert "PermissionError" in faults[0].message
        out = capsys.readouterr().out
        assert out.count("cannot write") == 1 and "node node-a" in out
    finally:
        _chattr("-i", target)
    trees.tick()
    assert _energy(tmp_path, "node-a") > frozen_a
    assert [e.name for e in emu.events if e.node == "node-a" and "file" in e.name] == [EVENT_FILE_UNWRITABLE,
                                                                                     EVENT_FILE_WRITABLE]


def test_a_file_that_refuses_writes_is_that_nodes_fault_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without chattr: the publisher refuses one node's counter as an immutable file would.
    emu, trees = _start(tmp_path)
    real = trees.publisher.publish
    refused = {"yes": True}

    def publish(f: Shown, text: str) -> None:
        if refused["yes"] and f.path.startswith(str(tmp_path / "node-a")) and f.path.endswith("intel-rapl:0/energy_uj"):
            raise PermissionError(1, "Operation not permitted")
        real(f, text)

    monkeypatch.setattr(trees.publisher, "publish", publish)
    b0 = _energy(tmp_path, "node-b")
    trees.tick()
    trees.tick()
    assert _energy(tmp_path, "node-b") > b0 and _energy(tmp_path, "node-a") == 0
    assert [(e.node, e.file) for e in emu.events if e.name == EVENT_FILE_UNWRITABLE] == [("node-a", ENERGY_REAL)]
    refused["yes"] = False
    trees.tick()
    assert _energy(tmp_path, "node-a") > 0 and not trees.file_faults
