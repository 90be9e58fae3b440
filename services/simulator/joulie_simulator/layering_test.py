"""Pure modules (profiles, model, physics, writes, rendering-as-data, Node objects, the emulator
core) never import the shells (FUSE, files, HTTP, gRPC, OTLP, CLI) nor their libraries."""

import ast
import inspect
from types import ModuleType

import pytest

from joulie_hwprofiles import nodeobject, schema
from joulie_simulator import (
    emulator,
    golden,
    model,
    physics,
    physics_calibration,
    physics_cpu,
    physics_curve,
    physics_gpu,
    physics_speed,
    render,
    spec,
    writes,
)

PURE = [schema, model, physics, physics_cpu, physics_gpu, physics_speed, physics_curve, physics_calibration, writes, render, nodeobject,
        emulator, spec, golden]
SHELLS = {"fuse_view", "files_mode", "http_debug", "grpc_api", "otlp", "cli", "bench", "curve_cmd"}
SHELL_LIBS = {"pyfuse3", "trio", "grpc", "opentelemetry", "http", "socket", "subprocess", "urllib", "matplotlib"}


def _imports(module: ModuleType) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


@pytest.mark.parametrize("module", PURE, ids=lambda m: m.__name__)
def test_a_pure_module_imports_no_shell(module: ModuleType) -> None:
    imported = _imports(module)
    bad = {m for m in imported if m.split(".")[0] in SHELL_LIBS or (m.startswith("joulie_simulator.") and m.split(".")[1] in SHELLS)}
    assert not bad, f"{module.__name__} imports shells: {sorted(bad)}"
