"""The wheel runs on Python 3.9+: its modules (the plugin and the joulie_api it carries) hold no
3.10+ construct.

The repo itself runs 3.11 and ruff's pyupgrade rules push code towards 3.11 idioms, so a 3.10+
construct can come back unnoticed; this test reads the built wheel, not the source tree, so it
checks exactly what a workstation installs. A 3.9 interpreter, where one is installed, also
byte-compiles every module (wheel_cluster_test.py runs the installed plugin there).
"""

from __future__ import annotations

import ast
import subprocess
import zipfile
from pathlib import Path

import pytest

from joulie_kubectl.testwheel import find_wheel, oldest_python

# Names that need a newer Python than 3.9, per module: the 3.10 / 3.11 additions a plugin is
# likely to reach for.
NEWER_NAMES: dict[str, set[str]] = {
    "datetime": {"UTC"},
    "typing": {"Self", "TypeAlias", "ParamSpec", "Concatenate", "TypeGuard", "Never", "assert_never",
               "assert_type", "reveal_type", "LiteralString", "Required", "NotRequired", "Unpack",
               "TypeVarTuple", "dataclass_transform", "override", "is_typeddict"},
    "itertools": {"pairwise", "batched"},
    "enum": {"StrEnum", "verify", "ReprEnum"},
    "asyncio": {"TaskGroup", "timeout"},
}
NEWER_MODULES = {"tomllib", "wsgiref.types"}
NEWER_BUILTINS = {"aiter", "anext", "ExceptionGroup", "BaseExceptionGroup", "EncodingWarning"}
# Keyword arguments added in 3.10: dataclass(slots=, kw_only=, match_args=), field(kw_only=), zip(strict=).
NEWER_KWARGS = {"dataclass": {"slots", "kw_only", "match_args"}, "field": {"kw_only"}, "zip": {"strict"}}
# Operands that make `a | b` a type union rather than an integer or set `|`.
TYPE_NAMES = {"None", "int", "float", "complex", "str", "bytes", "bool", "list", "dict", "tuple", "set", "frozenset",
              "type", "object"}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def newer_constructs(source: str, filename: str) -> list[str]:
    """Each 3.10+ construct in `source` as 'file:line: what'; empty when 3.9 runs it."""
    try:
        tree = ast.parse(source, filename, feature_version=(3, 9))
    except SyntaxError as err:  # `match`, parenthesised context managers, `except*` ...
        return [f"{filename}:{err.lineno}: syntax newer than 3.9: {err.msg}"]
    found: list[str] = []
    future_annotations = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                             and any(a.name == "annotations" for a in n.names) for n in tree.body)
    annotations: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.arg, ast.AnnAssign)) and node.annotation is not None:
            annotations.update(id(n) for n in ast.walk(node.annotation))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            annotations.update(id(n) for n in ast.walk(node.returns))
    # isinstance(x, A | B) needs 3.10 whatever A and B are.
    type_args = {id(n.args[1]) for n in ast.walk(tree) if isinstance(n, ast.Call) and _name(n.func) in ("isinstance", "issubclass")
                 and len(n.args) == 2}
    for node in ast.walk(tree):
        where = f"{filename}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module in NEWER_MODULES:
                found.append(f"{where}: module {node.module} (newer than 3.9)")
            found += [f"{where}: {node.module}.{a.name} (newer than 3.9)" for a in node.names if a.name in NEWER_NAMES.get(node.module, set())]
        elif isinstance(node, ast.Import):
            found += [f"{where}: module {a.name} (newer than 3.9)" for a in node.names if a.name in NEWER_MODULES]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.attr in NEWER_NAMES.get(node.value.id, set()):
                found.append(f"{where}: {node.value.id}.{node.attr} (newer than 3.9)")
        elif isinstance(node, ast.Name) and node.id in NEWER_BUILTINS:
            found.append(f"{where}: builtin {node.id} (newer than 3.9)")
        elif isinstance(node, ast.Call):
            late = NEWER_KWARGS.get(_name(node.func), set()) & {k.arg for k in node.keywords if k.arg}
            found += [f"{where}: {_name(node.func)}({k}=...) (newer than 3.9)" for k in sorted(late)]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            # `X | None` is a 3.10+ runtime union; in an annotation it is only text when the module
            # defers annotations (pydantic models evaluate them: see the eval-type-backport test).
            in_annotation = id(node) in annotations
            typeish = id(node) in type_args or any(
                (isinstance(side, ast.Constant) and side.value is None) or (isinstance(side, ast.Name) and side.id in TYPE_NAMES)
                for side in (node.left, node.right))
            if (in_annotation and not future_annotations) or (not in_annotation and typeish):
                found.append(f"{where}: `X | Y` union evaluated at run time (newer than 3.9)")
    return found


def wheel_modules(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as zf:
        return {n: zf.read(n).decode() for n in zf.namelist() if n.endswith(".py")}


@pytest.fixture(scope="module")
def wheel() -> Path:
    return find_wheel(Path.cwd())


def test_the_wheel_holds_the_plugin_and_the_api_it_imports(wheel: Path) -> None:
    names = set(wheel_modules(wheel))
    for module in ("joulie_kubectl/cli.py", "joulie_api/kube.py", "joulie_api/kubeconfig.py", "joulie_api/quantity.py",
                   "joulie_api/generated/nodetwin.py"):
        assert module in names, sorted(names)
    assert not [n for n in names if n.endswith("_test.py")]


def test_no_module_in_the_wheel_needs_python_newer_than_3_9(wheel: Path) -> None:
    found = [hit for name, src in sorted(wheel_modules(wheel).items()) for hit in newer_constructs(src, name)]
    assert not found, "\n".join(found)


def test_the_check_catches_what_3_9_cannot_run() -> None:
    cases = {
        "from datetime import UTC\n": "datetime.UTC",
        "import datetime\nx = datetime.UTC\n": "datetime.UTC",
        "match x:\n    case 1:\n        pass\n": "syntax",
        "from dataclasses import dataclass\n@dataclass(slots=True)\nclass A:\n    x: int\n": "slots",
        "x = isinstance(1, int | None)\n": "union",
        "x = isinstance(1, int | float)\n": "union",
        "x = isinstance(1, A | B)\n": "union",
        "T = str | bytes\n": "union",
        "def f(a: int | None) -> None: ...\n": "union",
        "from typing import Self\n": "typing.Self",
        "y = list(zip([1], [2], strict=True))\n": "strict",
    }
    for src, what in cases.items():
        found = newer_constructs(src, "m.py")
        assert found and what in found[0], (src, found)
    assert newer_constructs("from __future__ import annotations\ndef f(a: int | None) -> str | None: ...\n", "m.py") == []
    assert newer_constructs("flags = a | b\nx = isinstance(1, (int, float))\n", "m.py") == []


def test_pydantic_models_get_the_union_backport_before_3_10(wheel: Path) -> None:
    # The generated CRD types keep `X | None` annotations, which pydantic evaluates at import.
    with zipfile.ZipFile(wheel) as zf:
        meta = next(zf.read(n).decode() for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    assert "Requires-Python: >=3.9" in meta
    assert any(line.startswith("Requires-Dist: eval-type-backport") and 'python_version < "3.10"' in line
               for line in meta.splitlines()), meta


def test_the_oldest_python_byte_compiles_the_wheel(wheel: Path, tmp_path: Path) -> None:
    py = oldest_python()
    if py is None:
        pytest.skip("no Python 3.9 or 3.10 interpreter on this machine (looked on PATH and under ~/.pyenv/versions)")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tmp_path)
    out = subprocess.run([str(py), "-m", "compileall", "-q", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
