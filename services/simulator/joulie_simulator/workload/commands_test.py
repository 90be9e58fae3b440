"""workloadgen, traceextract and workload as a user runs them: files out, clear errors on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from joulie_simulator.cli import main
from joulie_simulator.workload.trace import load_trace


def test_workloadgen_writes_a_trace_that_loads_and_is_the_same_per_seed(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert main(["workloadgen", "--jobs", "25", "--seed", "4", "--out", str(a)]) == 0
    assert main(["workloadgen", "--jobs", "25", "--seed", "4", "--out", str(b)]) == 0
    assert a.read_bytes() == b.read_bytes()
    assert len(load_trace(a)) == 25


def test_traceextract_reads_swf_and_reports_what_it_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    swf = tmp_path / "x.swf"
    swf.write_text("; SWF\n1 0 0 100 16 -1 -1 16 -1 -1 1 1 1 1 3 -1 -1 -1\n2 5 0 -1 4 -1 -1 4 -1 -1 5 1 1 1 1 -1 -1 -1\n")
    out = tmp_path / "t.jsonl"
    assert main(["traceextract", "--in", str(swf), "--out", str(out), "--queue-classes", "3=eco", "--time-scale", "10"]) == 0
    assert "1 jobs kept; skipped: 1 no run time" in capsys.readouterr().err
    (job,) = load_trace(out)
    assert (job.job_id, job.workload_class, job.work.cpu_units) == ("swf-1", "eco", 160.0)


def test_bad_inputs_exit_2_naming_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"job","jobId":"x","submitTimeOffsetSec":"soon","work":{"cpuUnits":1}}\n')
    assert main(["workload", "--trace", str(bad), "--cluster", "c", "--kubeconfig", str(tmp_path / "none")]) == 2
    assert f"{bad}:1: submitTimeOffsetSec: " in capsys.readouterr().err
    assert main(["workloadgen", "--perf-ratio", "2"]) == 2
    assert "--perf-ratio: 2.0 is not within 0..1" in capsys.readouterr().err
    assert main(["traceextract", "--in", str(tmp_path / "missing.swf")]) == 2
    assert "missing.swf: cannot read" in capsys.readouterr().err
