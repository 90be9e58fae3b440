"""The bump command on a temporary copy of the repository layout."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from release import versions

DAY = dt.date(2026, 12, 2)
AGENT_LOG = "# Changelog: joulie-agent\n\nVersions of the node agent.\n\n## 0.1.0 — 2026-12-01\n\n- First release.\n"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    layout = {
        "services/agent/joulie_agent/VERSION": "0.1.0\n",
        "services/agent/CHANGELOG.md": AGENT_LOG,
        "services/controller-manager/joulie_controller/VERSION": "1.4.9\n",
        "services/controller-manager/CHANGELOG.md": "# Changelog: joulie-controller-manager\n\n## 1.4.9 — 2026-11-30\n\n- x\n",
        "tools/kubectl-joulie/joulie_kubectl/VERSION": "0.1.0\n",
        "tools/kubectl-joulie/CHANGELOG.md": "# Changelog: kubectl-joulie\n\n## 0.1.0 — 2026-12-01\n\n- y\n",
    }
    for rel, text in layout.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


@pytest.mark.parametrize(("old", "part", "new"), [
    ("0.1.0", "patch", "0.1.1"), ("0.1.9", "minor", "0.2.0"), ("1.4.9", "major", "2.0.0"), ("0.9.3", "patch", "0.9.4"),
])
def test_bumped(old: str, part: str, new: str) -> None:
    assert versions.bumped(old, part) == new


@pytest.mark.parametrize("bad", ["1.2", "v1.2.3", "01.2.3", "1.2.3-rc1", ""])
def test_bumped_rejects_non_semver(bad: str) -> None:
    with pytest.raises(versions.ReleaseError, match="MAJOR.MINOR.PATCH"):
        versions.bumped(bad, "patch")


def test_units_found_in_services_and_tools(repo: Path) -> None:
    assert sorted(versions.units(repo)) == ["agent", "controller-manager", "kubectl-joulie"]


def test_bump_writes_version_and_prepends_entry(repo: Path) -> None:
    assert versions.bump(repo, "agent", "minor", ["Pool mode.", "  GPU caps on MI300X  "], DAY) == ("0.1.0", "0.2.0")
    assert (repo / "services/agent/joulie_agent/VERSION").read_text() == "0.2.0\n"
    log = (repo / "services/agent/CHANGELOG.md").read_text()
    assert log == (
        "# Changelog: joulie-agent\n\nVersions of the node agent.\n\n"
        "## 0.2.0 — 2026-12-02\n\n- Pool mode.\n- GPU caps on MI300X\n\n"
        "## 0.1.0 — 2026-12-01\n\n- First release.\n"
    )
    # Only that service changed.
    assert (repo / "services/controller-manager/joulie_controller/VERSION").read_text() == "1.4.9\n"
    assert versions.check(repo) == []


def test_bump_creates_a_missing_changelog(repo: Path) -> None:
    (repo / "tools/kubectl-joulie/CHANGELOG.md").unlink()
    versions.bump(repo, "kubectl-joulie", "patch", ["Fix"], DAY)
    assert (repo / "tools/kubectl-joulie/CHANGELOG.md").read_text() == "# Changelog: kubectl-joulie\n\n## 0.1.1 — 2026-12-02\n\n- Fix\n"


def test_bump_refuses_without_notes_unknown_service_or_stale_changelog(repo: Path) -> None:
    with pytest.raises(versions.ReleaseError, match="at least one -m"):
        versions.bump(repo, "agent", "patch", ["  "], DAY)
    with pytest.raises(versions.ReleaseError, match="unknown service 'kepler'; known: agent, controller-manager, kubectl-joulie"):
        versions.bump(repo, "kepler", "patch", ["x"], DAY)
    (repo / "services/agent/joulie_agent/VERSION").write_text("0.1.5\n")
    with pytest.raises(versions.ReleaseError, match="newest entry is 0.1.0, VERSION is 0.1.5"):
        versions.bump(repo, "agent", "patch", ["x"], DAY)
    assert (repo / "services/agent/joulie_agent/VERSION").read_text() == "0.1.5\n"  # untouched on refusal


def test_check_reports_mismatch_and_missing(repo: Path) -> None:
    (repo / "services/controller-manager/joulie_controller/VERSION").write_text("1.5.0\n")
    (repo / "tools/kubectl-joulie/CHANGELOG.md").unlink()
    problems = versions.check(repo)
    assert problems == [
        "controller-manager: newest CHANGELOG.md entry is 1.4.9, VERSION is 1.5.0",
        f"kubectl-joulie: {repo}/tools/kubectl-joulie/CHANGELOG.md is missing",
    ]


def test_cli_bump_and_errors(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert versions.main(["--repo", str(repo), "bump", "controller-manager", "patch", "-m", "Faster twin"]) == 0
    assert "controller-manager: 1.4.9 -> 1.4.10" in capsys.readouterr().out
    assert (repo / "services/controller-manager/CHANGELOG.md").read_text().split("\n")[2].startswith("## 1.4.10 — ")
    assert versions.main(["--repo", str(repo), "bump", "nope", "patch", "-m", "x"]) == 1
    assert "release: unknown service 'nope'" in capsys.readouterr().err
    assert versions.main(["--repo", str(repo), "check"]) == 0
    assert versions.main(["--repo", str(repo), "list"]) == 0
    assert "agent\t0.1.0\tjoulie-agent\t" in capsys.readouterr().out
