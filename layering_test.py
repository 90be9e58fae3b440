"""The layering contracts hold: import-linter and the public-surface rule over every first-party package.

Pants hands this test the repository's Python files as plain files (``//:python-sources``, no
resolve), so one test in the ``importlinter`` resolve covers every service, library and tool
without installing any of them. A broken contract fails with its name and the import chain that
breaks it (module:line), as ``lint-imports`` prints them.

The package list has one home, the file system (``repo_packages.py``): the contracts that follow from
it (services independent, libraries below products, products through public surfaces only) are
generated here, and each package's own contracts live beside it in ``layers.importlinter``."""

from __future__ import annotations

import configparser
import io
import sys
import tempfile
from contextlib import redirect_stdout
from functools import cache

import grimp  # pants: no-infer-dep (import-linter brings it: the same resolve)
from importlinter.cli import lint_imports
from repo_packages import REPO, Package, discover, surface_violations

CONFIG = REPO / ".importlinter"


def _generated_contracts(packages: list[Package]) -> str:
    services = [p.name for p in packages if p.kind == "service"]
    libs = [p.name for p in packages if p.kind == "lib"]
    above_libs = [p.name for p in packages if p.kind in ("service", "product")]
    lines = [
        "[importlinter:contract:services-independent]",
        "name = Services (and the kubectl plugin) never import one another; they meet in libs/ and proto/",
        "type = independence",
        "modules =",
        *(f"    {s}" for s in services),
        "",
        "[importlinter:contract:libs-below-products]",
        "name = Libraries never import a service, the simulated cluster, the benchmark or the acceptance tests",
        "type = forbidden",
        "source_modules =",
        *(f"    {s}" for s in libs),
        "forbidden_modules =",
        *(f"    {s}" for s in above_libs),
        "",
    ]
    return "\n".join(lines)


def merged_config(packages: list[Package]) -> str:
    """The repository's .importlinter, its root packages and generated contracts, and every fragment."""
    base = CONFIG.read_text()
    roots = "\n".join(f"    {p.name}" for p in packages)
    base = base.replace("root_packages = (from repo_packages.py)", f"root_packages =\n{roots}")
    fragments = [f.read_text() for f in sorted(REPO.glob("**/layers.importlinter")) if ".git" not in f.parts]
    return "\n\n".join([base, _generated_contracts(packages), *fragments])


def _prepare_path(packages: list[Package]) -> None:
    for root in sorted({str(p.source_root) for p in packages}):
        if root not in sys.path:
            sys.path.insert(0, root)


def run_import_linter(config_text: str) -> tuple[int, str]:
    with tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False) as f:
        f.write(config_text)
    out = io.StringIO()
    with redirect_stdout(out):
        status = lint_imports(config_filename=f.name, no_cache=True, no_logo=True)
    return status, out.getvalue()


@cache
def _packages() -> list[Package]:
    found = discover()
    _prepare_path(found)
    return found


def test_the_import_contracts_hold() -> None:
    text = merged_config(_packages())
    status, report = run_import_linter(text)
    config = configparser.ConfigParser()
    config.read_string(text)
    assert status == 0, f"import contracts broken (.importlinter and layers.importlinter fragments):\n{report}"
    assert "0 broken" in report and f"{len(config.sections()) - 1} kept" in report, report


def test_products_import_services_only_through_their_public_surface() -> None:
    graph = grimp.build_graph(*(p.name for p in _packages()), cache_dir=None)
    bad = surface_violations(graph, _packages())
    assert not bad, "products import service internals (use the service's api or testing module):\n" + "\n".join(bad)


def import_cycles(graph: grimp.ImportGraph, first_party: set[str]) -> list[list[str]]:
    """Each set of first-party modules that import one another in a circle (Tarjan's strongly connected
    components, iterative: a package's import chains can be deeper than Python's recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    cycles: list[list[str]] = []

    def imports(module: str) -> list[str]:
        return sorted(m for m in graph.find_modules_directly_imported_by(module) if m.split(".")[0] in first_party)

    for root in sorted(graph.modules):
        if root in index or root.split(".")[0] not in first_party:
            continue
        work = [(root, iter(imports(root)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(imports(child))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_first_party_module_is_part_of_an_import_cycle() -> None:
    """A cycle hides behind a function-level import until the day it does not; none is allowed."""
    pkgs = _packages()
    graph = grimp.build_graph(*(p.name for p in pkgs), cache_dir=None)
    cycles = import_cycles(graph, {p.name for p in pkgs})
    assert not cycles, "modules that import one another in a circle:\n" + "\n".join(f"  {c}" for c in cycles)


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.b", "pkg.c"):
        graph.add_module(module)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.a")
    graph.add_import(importer="pkg.b", imported="pkg.c")
    assert import_cycles(graph, {"pkg"}) == [["pkg.a", "pkg.b"]]


def test_a_deliberate_violation_fails_with_its_message() -> None:
    """The contracts can fail: a library that imports a service breaks libs-below-products."""
    lib = next(p for p in _packages() if p.name == "joulie_common")
    bad = lib.path / "_layering_probe.py"
    bad.write_text("import joulie_agent  # deliberate violation\n")
    try:
        status, report = run_import_linter(merged_config(_packages()))
    finally:
        bad.unlink()
    assert status != 0
    assert "Libraries never import a service" in report and "joulie_common._layering_probe" in report, report
