"""RunRecord.finish: what a whole-cluster command (suspend, suspend-live, tenants, daemonset) leaves
behind when it ends, whatever its tear-down does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from joulie_simcluster.smoke.results import RunRecord, open_run


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RunRecord:
    monkeypatch.setattr("joulie_simcluster.smoke.results.git_state", lambda: ("abc123", False))
    return open_run(tmp_path / "runs", "suspend")


def test_summary_is_on_disk_before_the_tear_down_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run(tmp_path, monkeypatch)
    seen: list[bool] = []
    rc = run.finish({"status": "pass", **run.stamp()}, [("a", True, "fine")],
                    lambda: seen.append((run.dir / "summary.json").is_file()), width=10)
    assert seen == [True]
    assert rc == 0
    assert json.loads((run.dir / "summary.json").read_text())["commit"] == "abc123"


def test_a_failed_check_fails_the_run_and_every_line_is_in_the_log(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run(tmp_path, monkeypatch)
    rc = run.finish({"status": "fail"}, [("first", True, "ok"), ("second", False, "off by 9 %")], lambda: None,
                    width=8, noun="cases", notes=["timeline: off +3.0"], detail=" in 12s")
    assert rc == 1
    log = (run.dir / "suspend.log").read_text()
    assert "PASS  first    ok" in log
    assert "FAIL  second   off by 9 %" in log
    assert "timeline: off +3.0" in log
    assert f"FAILED: 1/2 cases in 12s; {run.dir / 'summary.json'}" in log
