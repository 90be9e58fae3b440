"""The binaries a deploy runs: each component's released PEX (``./pants package``), copied into
``<state>/bin/joulie-<component>-<sha12>.pex``. The sha256 prefix is the process runtime's image
tag: a reload compares it to tell an unchanged binary from a new one.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.state import StateDir

# component → where `./pants package` puts its PEX under dist/.
DIST_PEXES: dict[str, str] = {
    "agent": "services.agent/bin.pex",
    "controller-manager": "services.controller-manager/bin.pex",
    "extender": "services.extender/bin.pex",
    "simulator": "services.simulator/bin.pex",
    "fakesmi": "services.fakesmi/bin.pex",
}
PACKAGE_TARGETS = [f"services/{c}:bin" for c in DIST_PEXES]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class Binary:
    component: str
    path: Path
    sha256: str

    @property
    def tag(self) -> str:
        return f"dev-{self.sha256[:12]}"


def install_binaries(state: StateDir, dist: Path) -> dict[str, Binary]:
    """Copies each component's PEX from `dist` into ``<state>/bin/joulie-<c>-<sha12>.pex``."""
    missing = [f"{dist / rel}" for rel in DIST_PEXES.values() if not (dist / rel).is_file()]
    if missing:
        raise RuntimeFailure(
            f"binaries not built: {', '.join(missing)}; run ./pants package {' '.join(PACKAGE_TARGETS)} "
            "(./simcluster does it for you)"
        )
    state.bin.mkdir(parents=True, exist_ok=True)
    out: dict[str, Binary] = {}
    for component, rel in DIST_PEXES.items():
        src = dist / rel
        digest = sha256_file(src)
        dest = state.bin / f"joulie-{component}-{digest[:12]}.pex"
        if not dest.exists():
            tmp = dest.with_suffix(".tmp")
            shutil.copy2(src, tmp)
            tmp.chmod(0o755)
            tmp.replace(dest)
        out[component] = Binary(component, dest, digest)
    return out
