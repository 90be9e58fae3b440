"""The layering contracts in ``.importlinter`` hold: import-linter over every first-party package.

Pants hands this test the repository's Python files as plain files (``//:python-sources``, no
resolve), so one test in the ``importlinter`` resolve covers every service, library and tool
without installing any of them. A broken contract fails with its name and the import chain that
breaks it (module:line), as ``lint-imports`` prints them."""

from __future__ import annotations

import configparser
import io
import sys
from contextlib import redirect_stdout
from pathlib import Path

from importlinter.cli import lint_imports

CONFIG = Path(".importlinter")


def _source_roots() -> dict[str, Path]:
    """Each first-party package (``joulie_*`` with an ``__init__.py``) and the directory it lives in."""
    found = sorted(Path(".").glob("*/joulie_*/__init__.py")) + sorted(Path(".").glob("*/*/joulie_*/__init__.py"))
    return {init.parent.name: init.parent.parent.resolve() for init in found}


def test_the_import_contracts_hold() -> None:
    config = configparser.ConfigParser()
    config.read(CONFIG)
    wanted = config["importlinter"]["root_packages"].split()
    roots = _source_roots()
    missing = sorted(set(wanted) - set(roots))
    assert not missing, f"{CONFIG}: root_packages: {missing} not among the files this test was given (//:python-sources)"
    for root in sorted(set(roots.values())):
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
    out = io.StringIO()
    with redirect_stdout(out):
        status = lint_imports(config_filename=str(CONFIG), no_cache=True, no_logo=True)
    report = out.getvalue()
    assert status == 0, f"import contracts broken ({CONFIG}):\n{report}"
    assert "0 broken" in report and f"{len(config.sections()) - 1} kept" in report, report
