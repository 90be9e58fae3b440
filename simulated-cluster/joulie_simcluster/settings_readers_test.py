"""Only settings.py reads SIMCLUSTER_* variables (README "Settings"). The package's import layers
are an import-linter contract (``simcluster-layers`` in the repository's ``.importlinter``)."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name.endswith("_test.py") or path.name == "__init__.py":
            continue
        out[".".join(path.relative_to(PACKAGE).with_suffix("").parts)] = path
    return out


def test_only_settings_reads_simcluster_variables_from_the_environment() -> None:
    reads = re.compile(r"""(environ|getenv)\b[^\n]{0,20}["']SIMCLUSTER_""")
    readers = sorted(m for m, p in _modules().items() if reads.search(p.read_text()))
    assert readers == []  # settings.py reads them by field metadata, not by literal
    settings = (PACKAGE / "settings.py").read_text()
    assert "environ.get(key" in settings
