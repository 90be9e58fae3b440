"""``simcluster logs`` after ``down``: the state's logs/ is gone, the last run's copy is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from joulie_simcluster.logs import print_log
from joulie_simcluster.state import StateDir


def test_after_down_an_agents_log_is_read_from_the_last_run(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    state = StateDir(tmp_path / "state")
    run = state.runs / "20261205T200000Z-smoke-files-abc"
    (run / "logs").mkdir(parents=True)
    (run / "logs" / "agent-intel-0.log").write_text("one\ntwo\n")
    (state.runs / "latest").symlink_to(run.name)
    assert print_log(state, "agent", "intel-0", 1) == 0
    out = capsys.readouterr()
    assert out.out == "two\n"
    assert "is gone (down); the copy of run 20261205T200000Z-smoke-files-abc" in out.err  # never passed off as this cluster's
    assert print_log(state, "agent", "intel-1", 1) == 1
