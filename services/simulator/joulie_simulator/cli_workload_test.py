"""workloadgen, traceextract and workload as a user runs them: files out, clear errors on bad input."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from joulie_simulator.cli import main
from joulie_workload.trace import load_trace


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


def _run_workload(tmp_path: Path, trace: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """`joulie-simulator workload` in its own process (signal handlers need a main thread), on an
    API server and an emulator nobody serves; returns it with its first line."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "joulie_simulator.cli", "workload", "--trace", str(trace), "--cluster", "c",
         "--kubeconfig", str(kubeconfig), "--emulator", "127.0.0.1:1", "--metrics", "", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline()  # printed once the signal handlers are in place


def test_workload_stopped_by_sigterm_exits_0_saying_what_was_unfinished(tmp_path: Path) -> None:
    # simcluster down stops the runner with SIGTERM: that is not a failure, and its log says what was left.
    trace = tmp_path / "t.jsonl"
    assert main(["workloadgen", "--jobs", "3", "--seed", "1", "--out", str(trace)]) == 0
    proc, first = _run_workload(tmp_path, trace)
    assert first.startswith("workload: 3 jobs from "), first
    proc.send_signal(signal.SIGTERM)
    rest = proc.communicate(timeout=60)[0]
    assert proc.returncode == 0, first + rest
    assert "stopped by a signal with 3 jobs unfinished" in rest


def test_workload_with_stay_outlives_its_last_job_until_signalled(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"  # no jobs: done at once
    empty.write_text("")
    proc, _ = _run_workload(tmp_path, empty, "--stay")
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("workload: 0 pods created")
    assert "all 0 jobs done; serving /metrics until stopped" in proc.stdout.readline()
    assert proc.poll() is None  # still there for its supervisor
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    proc.stdout.close()
