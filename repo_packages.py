"""The first-party package list, in one place: the file system.

A package is a ``joulie_*`` folder with an ``__init__.py``; what kind it is follows from where it
lives (``services/`` and ``tools/``: a service; ``libs/``: a library; the simulated cluster, the
benchmark and the acceptance tests: a product). The layering test generates the contracts that
follow from the kinds, and ``packages_test.py`` checks the tool configurations that must name every
package (ruff's ``src`` and ``known-first-party``) against this list."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

REPO = Path(__file__).resolve().parent

Kind = Literal["service", "lib", "product"]
_KIND_BY_TOP = {
    "services": "service",
    "tools": "service",
    "libs": "lib",
    "simulated-cluster": "product",
    "benchmark": "product",
    "acceptance": "product",
}

# What a product may import from a service: its public surface, `api` (pure: decisions, models,
# parsers; a pure product module may use it) and `shell_api` (its I/O: clients, servers, loops);
# `testing` (test doubles and fixtures a service offers) only from test modules.
PUBLIC_SURFACE = ("api", "shell_api")
TEST_SURFACE = ("testing",)


@dataclass(frozen=True)
class Package:
    name: str
    kind: Kind
    path: Path  # the package folder (…/joulie_x)

    @property
    def source_root(self) -> Path:
        return self.path.parent

    @property
    def project_dir(self) -> str:
        """The folder ruff's `src` names (the source root, relative to the repository)."""
        return str(self.source_root.relative_to(REPO))


def discover(repo: Path = REPO) -> list[Package]:
    found: dict[str, Package] = {}
    for init in sorted([*repo.glob("*/joulie_*/__init__.py"), *repo.glob("*/*/joulie_*/__init__.py")]):
        top = init.relative_to(repo).parts[0]
        kind = _KIND_BY_TOP.get(top)
        if kind is None:
            continue  # ci/ (build tooling) is not a package of the product
        pkg = init.parent
        if pkg.name in found:
            raise ValueError(f"two packages named {pkg.name}: {found[pkg.name].path} and {pkg}")
        found[pkg.name] = Package(pkg.name, kind, pkg)  # type: ignore[arg-type]
    return sorted(found.values(), key=lambda p: (p.kind, p.name))


def _is_test_module(module: str) -> bool:
    leaf = module.rsplit(".", 1)[-1]
    return leaf.endswith("_test") or leaf == "conftest" or leaf.startswith("test_")


def allowed_import(importer: str, imported: str) -> bool:
    """May `importer` (a product module) import `imported` (a service module)?"""
    parts = imported.split(".")
    if len(parts) < 2:
        return False  # the bare package: its __init__ is empty by design, name the surface
    if parts[1] in PUBLIC_SURFACE:
        return True
    return parts[1] in TEST_SURFACE and _is_test_module(importer)


def surface_violations(graph: Any, packages: Iterable[Package]) -> list[str]:
    """Each product import of a service's internals, as `importer:line -> imported`."""
    pkgs = list(packages)
    services = {p.name for p in pkgs if p.kind == "service"}
    products = [p.name for p in pkgs if p.kind == "product"]
    bad: list[str] = []
    for product in products:
        for importer in sorted(graph.find_children(product) | graph.find_descendants(product) | {product}):
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if imported.split(".")[0] not in services or allowed_import(importer, imported):
                    continue
                details = graph.get_import_details(importer=importer, imported=imported)
                lines = ",".join(str(d["line_number"]) for d in details) or "?"
                bad.append(f"  {importer}:{lines} -> {imported}")
    return bad
