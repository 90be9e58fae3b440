"""Builds the four service images with the real Docker engine and starts each once.

Needs root (dockerd; apt-get install docker.io debootstrap when missing) and the Debian mirror
for the first debootstrap; the base then stays cached under ~/.cache/joulie. When the engine
cannot work here the test fails with the reason (EngineError/BuildError name what is missing).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from images import build
from images.dockerd import private_engine

VERSION_FILES = {
    "agent": "services/agent/joulie_agent/VERSION",
    "controller-manager": "services/controller-manager/joulie_controller/VERSION",
    "extender": "services/extender/joulie_extender/VERSION",
    "simulator": "services/simulator/joulie_simulator/VERSION",
    "fakesmi": "services/fakesmi/joulie_fakesmi/VERSION",
}


def test_every_image_builds_and_starts_with_version(tmp_path: Path) -> None:
    # The PEXes are runtime packages of this test: ./pants put them under the sandbox root.
    args = build.parse_args(["--no-package", "--rebuild", "--dist", ".", "--json", str(tmp_path / "images.json")])
    built = build.build(args)
    assert [b.component for b in built] == ["agent", "controller-manager", "extender", "simulator"]
    assert [b["ref"] for b in json.loads((tmp_path / "images.json").read_text())] == [b.ref for b in built]
    with private_engine(print) as engine:
        for b in built:
            pexes = [build.pex_path(Path("."), s) for s in b.services]
            assert b.tag == build.content_tag(pexes)
            assert re.fullmatch(r"dev-[0-9a-f]{12}", b.tag)
            assert b.ref == f"joulie.local/joulie-{b.component}:{b.tag}"
            assert b.size_bytes == build.image_size(engine, b.ref) > 50_000_000
            want = f"joulie-{b.services[0]} {Path(VERSION_FILES[b.services[0]]).read_text().strip()}"
            assert build.run_version(engine, b.ref) == want
        sim = next(b for b in built if b.component == "simulator")
        fakesmi = f"joulie-fakesmi {Path(VERSION_FILES['fakesmi']).read_text().strip()}"
        assert build.run_version(engine, sim.ref, entrypoint="fakesmi") == fakesmi
        # The vendor tool names reach fakesmi as that tool: with no emulated node around, it answers
        # as nvidia-smi absent from a node would, not with fakesmi's usage.
        for tool in ("nvidia-smi", "amd-smi"):
            r = engine.docker("run", "--rm", "--network", "none", "--entrypoint", tool, sim.ref, "-L", check=False)
            err = r.stderr.decode()
            assert r.returncode == 127 and f"{tool} is not installed on this emulated node" in err, (r.returncode, err)
        # No container is left behind.
        assert engine.docker("ps", "-aq").stdout.decode().strip() == ""
    # The daemon started for this check is gone again: its own PID (another test's daemon, e.g. the
    # k3s runtime's, may take the shared data root as soon as the lock is free: a pgrep for the data
    # root found that one in CI).
    ours = subprocess.run(["pgrep", "-f", "--", "--data-root=" + str(engine.paths.data_root)], capture_output=True)
    assert str(engine.pid) not in ours.stdout.decode().split()
