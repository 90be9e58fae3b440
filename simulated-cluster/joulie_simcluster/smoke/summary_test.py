import datetime as dt
import json

from joulie_simcluster.smoke.checks import Assertion
from joulie_simcluster.smoke.summary import (
    RunRecord,
    build_summary,
    checks_table,
    otlp_logs_line,
    otlp_metrics_line,
    run_dir_name,
    run_status,
)

T0 = dt.datetime(2026, 12, 2, 18, 0, 0, tzinfo=dt.UTC)
A = [Assertion("S06", "pass", "9 Nodes, worst error 0.40 %", "≤ 3 %", 0.4), Assertion("S11", "fail", "p on e (eco)", "none")]


def test_run_directory_and_status() -> None:
    assert run_dir_name(T0, "smoke", "fuse", "0123456789abcdef", True) == "20261202T180000Z-smoke-fuse-0123456789ab-dirty"
    assert run_status(A, timed_out=False, aborted=None) == "failure"
    assert run_status(A[:1], timed_out=False, aborted=None) == "success"
    assert run_status(A[:1], timed_out=True, aborted=None) == "timed_out"
    assert run_status([], timed_out=False, aborted="up failed") == "aborted"


def test_summary_has_the_schema_fields() -> None:
    s = build_summary(RunRecord(assertions=A, status="failure", spec="smoke", mode="fuse", scope="auto",
                                timing={"SIMCLUSTER_TIMING": "ci"}, commit="abc", dirty=False, images={"agent": "dev-0123"},
                                started=T0, finished=T0 + dt.timedelta(seconds=200), resources={"peakRssMiB": 1200.0},
                                runtime="process"))
    assert s["schema"] == "joulie.simcluster.summary/v1" and s["test.suite.run.status"] == "failure" and s["exitCode"] == 1
    assert s["failures"] == ["S11 performance-not-on-eco: p on e (eco)"]
    assert s["assertions"][0]["test.case.name"] == "S06 measured-power-matches-truth"
    assert s["assertions"][0]["test.case.result.status"] == "pass" and s["wallSeconds"] == 200.0
    assert json.loads(json.dumps(s)) == s


def test_otlp_lines_carry_one_record_and_one_point_per_check() -> None:
    logs = json.loads(otlp_logs_line(A, "smoke", "fuse", T0))
    records = logs["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert [r["eventName"] for r in records] == ["joulie.scenario.assertion.evaluated"] * 2
    assert records[1]["severityText"] == "ERROR"
    metrics = json.loads(otlp_metrics_line(A, "smoke", "fuse", T0))
    points = metrics["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0]["gauge"]["dataPoints"]
    assert [p["asDouble"] for p in points] == [0.4, 0.0]


def test_the_table_names_every_check_and_its_status() -> None:
    table = checks_table(A).splitlines()
    assert table[1].startswith("S06 measured-power-matches-truth") and "PASS" in table[1]
    assert "FAIL" in table[2] and "p on e (eco)" in table[2]


def test_summary_names_the_runtime_the_run_used() -> None:
    # Issue 40: a kubelet-runtime smoke said "runtime": "process" (hard-coded).
    for runtime in ("kubelet", "process"):
        s = build_summary(RunRecord(assertions=A[:1], status="success", spec="smoke", mode="files", scope="auto",
                                    timing={}, commit="abc", dirty=False, images={}, started=T0, finished=T0,
                                    resources={}, runtime=runtime))
        assert s["runtime"] == runtime
