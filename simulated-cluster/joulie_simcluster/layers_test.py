"""The package's layers, checked: a module imports only from its own layer or below, and only
settings.py reads SIMCLUSTER_* variables (README "Layout", "Settings")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent

# Lowest first. The pure smoke modules (the checks, the load as Pods, summary.json) sit with the
# model: deploy writes the smoke's trace, and nothing pure may reach a shell.
LAYERS: dict[str, int] = {
    **dict.fromkeys(["settings", "context", "errors", "progress", "state", "spec", "nodes", "agents", "timing",
                     "telemetry", "chart", "smoke.checks", "smoke.load", "smoke.summary"], 0),
    "runtimes": 1,
    "deploy": 2,
    "smoke.run": 3,
    "smoke.results": 3,
    "livebench": 4,
    "logs": 4,
    "cli": 5,
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name.endswith("_test.py") or path.name == "__init__.py":
            continue
        out[".".join(path.relative_to(PACKAGE).with_suffix("").parts)] = path
    return out


def _layer(module: str) -> int:
    for prefix in (module, module.split(".")[0]):
        if prefix in LAYERS:
            return LAYERS[prefix]
    raise AssertionError(f"{module}: no layer; add it to LAYERS")


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("joulie_simcluster"):
            base = node.module.removeprefix("joulie_simcluster").lstrip(".")
            for alias in node.names:
                # `from joulie_simcluster.smoke import load` imports the module smoke.load
                found.add(f"{base}.{alias.name}" if base in ("", "smoke", "deploy", "runtimes") else base)
    return {m.lstrip(".") for m in found}


def test_every_module_imports_only_its_own_layer_or_below() -> None:
    modules = _modules()
    assert len(modules) > 25, sorted(modules)  # the package is really here
    upward = []
    for module, path in sorted(modules.items()):
        for imported in sorted(_imports(path)):
            if imported in modules and _layer(imported) > _layer(module):
                upward.append(f"{module} (layer {_layer(module)}) imports {imported} (layer {_layer(imported)})")
    assert upward == []


def test_only_settings_reads_simcluster_variables_from_the_environment() -> None:
    reads = re.compile(r"""(environ|getenv)\b[^\n]{0,20}["']SIMCLUSTER_""")
    readers = sorted(m for m, p in _modules().items() if reads.search(p.read_text()))
    assert readers == []  # settings.py reads them by field metadata, not by literal
    settings = (PACKAGE / "settings.py").read_text()
    assert "environ.get(key" in settings
