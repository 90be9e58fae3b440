"""The benchmark keeps working (tiny scale; nothing here looks at the timings)."""

import pytest

from joulie_extender.bench.loopback import main


def test_bench_runs_both_modes_and_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--nodes", "20", "--pods", "3", "--warmup", "1"]) == 0
    out = capsys.readouterr().out
    assert "nodeCacheCapable" in out and "full Nodes" in out and "pods/s" in out
