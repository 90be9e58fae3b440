"""The benchmark keeps working at a tiny scale (nothing here looks at the timings)."""

import pytest

from joulie_controller.bench import main


def test_bench_prints_ticks_memory_and_the_list_read(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--nodes", "8", "--pods", "1200", "--ticks", "1", "--list"]) == 0
    out = capsys.readouterr().out
    assert "writes per tick [0]" in out, "a steady tick writes nothing"
    assert "memory:" in out and "paged (500 a page)" in out and "json.loads whole" in out


def test_bench_moves_the_readings_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--nodes", "8", "--pods", "80", "--ticks", "2", "--warmup", "1", "--jitter-pct", "0.3",
                 "--jump-pct", "50"]) == 0
    out = capsys.readouterr().out
    assert "readings within ±0.3 %, 50 % of nodes jumping, after 1 untimed ticks" in out
    assert "writes per tick [0, 0]" not in out, "half the nodes jump 5-20 % each tick: their twins are written"
