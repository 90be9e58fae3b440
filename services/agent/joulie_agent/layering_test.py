"""Pure modules (parsers, decisions) never import the shells (files, processes, Kubernetes)."""

import ast
from pathlib import Path
from types import ModuleType

import pytest

from joulie_agent import catalog, clock, cpucontrol, cpufreq, cpuinfo, discovery, gpucontrol, gputools, powercap

PURE = [powercap, cpuinfo, cpufreq, gputools, catalog, discovery, cpucontrol, gpucontrol, clock]
SHELLS = {"hostread", "node", "runner", "toolrun", "sysfswrite", "nvml", "cli", "metrics", "capture", "corpus",
          "bench", "settings", "testtrees"}
FORBIDDEN_STDLIB = {"subprocess", "socket", "shutil"}


def imports(module: ModuleType) -> set[str]:
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            if node.module == "joulie_agent":
                names |= {f"joulie_agent.{a.name}" for a in node.names}
    return names


@pytest.mark.parametrize("module", PURE, ids=lambda m: m.__name__)
def test_pure_module_imports_no_shell(module: ModuleType) -> None:
    names = imports(module)
    bad = {n for n in names if n.startswith("joulie_agent.") and n.split(".")[1] in SHELLS}
    bad |= {n for n in names if n.split(".")[0] in FORBIDDEN_STDLIB or n.startswith("kubernetes")}
    assert not bad, f"{module.__name__} imports shell modules {sorted(bad)}"
