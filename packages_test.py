"""Every tool configuration that names the first-party packages agrees with the file system.

The package list has one home (repo_packages.py); ruff needs it spelled out (its `src` folders and
`known-first-party`, because Pants runs ruff on one batch of files at a time). A package added,
moved or renamed without telling ruff fails here, naming what is missing."""

from __future__ import annotations

import tomllib

from repo_packages import REPO, discover


def test_ruff_knows_every_package_as_first_party_and_its_folder_as_a_source_root() -> None:
    ruff = tomllib.loads((REPO / "ruff.toml").read_text())
    first_party = set(ruff["lint"]["isort"]["known-first-party"])
    src = set(ruff["src"])
    packages = discover()
    missing_names = sorted(p.name for p in packages if p.name not in first_party)
    missing_dirs = sorted({p.project_dir for p in packages} - src)
    assert not missing_names, f"ruff.toml [lint.isort] known-first-party lacks {missing_names}"
    assert not missing_dirs, f"ruff.toml src lacks {missing_dirs}"


def test_the_package_kinds_follow_from_the_folders() -> None:
    kinds = {p.name: p.kind for p in discover()}
    assert kinds["joulie_agent"] == "service" and kinds["joulie_kubectl"] == "service"
    assert kinds["joulie_common"] == "lib" and kinds["joulie_api"] == "lib"
    assert kinds["joulie_simcluster"] == "product" and kinds["joulie_bench"] == "product"
