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

import grimp
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
