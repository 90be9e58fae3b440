"""Layering: the pure modules never import a shell (kube, HTTP, Prometheus client, CLI) or a client library."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

PURE = ["twin", "hardware", "fsm", "policies", "caps", "promql", "reconcile", "settings", "facility", "bench"]
SHELLS = {"kube", "prometheus", "leader", "metrics", "controller", "cli"}
FORBIDDEN_LIBS = {"kubernetes", "httpx", "requests", "prometheus_client", "urllib", "socket", "subprocess"}


def imported(module: str) -> set[str]:
    spec = importlib.util.find_spec(f"joulie_controller.{module}")
    assert spec is not None and spec.origin is not None, f"joulie_controller.{module} not found"
    tree = ast.parse(Path(spec.origin).read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            if node.module == "joulie_controller":
                names.update(f"joulie_controller.{a.name}" for a in node.names)
    return names


@pytest.mark.parametrize("module", PURE)
def test_pure_module_imports_no_shell(module: str) -> None:
    names = imported(module)
    shells = {n for n in names if n.startswith("joulie_controller.") and n.split(".")[1] in SHELLS}
    libs = {n for n in names if n.split(".")[0] in FORBIDDEN_LIBS}
    assert not shells and not libs, f"{module}.py imports {sorted(shells | libs)}"
    assert "joulie_api.kube" not in names
