"""The layering contract: pure modules import no shell and nothing that does I/O."""

from __future__ import annotations

import ast
import inspect
from types import ModuleType

import pytest

from joulie_api import quantity
from joulie_extender import decisions, filtering, powerest, scoring, views, wire

PURE = [quantity, powerest, scoring, filtering, wire, views, decisions]
SHELLS = {"app", "cache", "cli", "server", "metrics", "bench", "settings"}
# Third-party or stdlib modules that mean I/O (network, processes, files, clocks through the OS).
IO_MODULES = {"kubernetes", "fastapi", "starlette", "uvicorn", "httpx", "requests", "prometheus_client", "socket",
              "subprocess", "threading", "multiprocessing", "os", "time", "urllib", "pathlib", "logging"}


def imported(module: ModuleType) -> set[str]:
    tree = ast.parse(inspect.getsource(module))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("module", PURE, ids=lambda m: m.__name__)
def test_pure_module_imports_no_shell_and_no_io(module: ModuleType) -> None:
    names = imported(module)
    shells = {n for n in names if n.startswith("joulie_extender.") and n.split(".")[1] in SHELLS}
    io = {n for n in names if n.split(".")[0] in IO_MODULES}
    assert not shells, f"{module.__name__} imports shell modules {shells}"
    assert not io, f"{module.__name__} imports I/O modules {io}"
