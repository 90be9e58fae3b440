"""Module size and function length stay in check (docs/architecture.md, "The rules").

A module over 500 lines holds more than one concern; a function over 80 lines is a composition
root with its wiring inline, or a decision that wants naming. Tests and generated code are exempt.
This fails naming each offender, so the next split happens when the file grows, not a round later."""

from __future__ import annotations

import ast

from repo_packages import REPO, discover

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _source_files() -> list[tuple[str, str]]:
    out = []
    for pkg in discover():
        for path in sorted(pkg.path.rglob("*.py")):
            if path.name.endswith("_test.py") or path.name == "conftest.py" or "generated" in path.parts:
                continue
            out.append((str(path.relative_to(REPO)), path.read_text()))
    return out


def test_no_module_is_over_500_lines() -> None:
    big = [
        f"  {name}: {text.count(chr(10))} lines"
        for name, text in _source_files()
        if text.count("\n") > MAX_MODULE_LINES
    ]
    assert not big, f"modules over {MAX_MODULE_LINES} lines (split by concern):\n" + "\n".join(big)


def test_no_function_is_over_80_lines() -> None:
    long = []
    for name, text in _source_files():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"  {name}:{node.lineno} {node.name}: {length} lines")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (name the steps):\n" + "\n".join(long)
