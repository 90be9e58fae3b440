"""What a scenario run writes without a cluster: its assertions in the smoke's summary.json (a failed
assert step makes the exit code 1), timeline.csv and timeline.png."""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

from joulie_simcluster.scenario.conditions import TIMELINE_FIELDS, Observation, timeline_row
from joulie_simcluster.scenario.plot import plot_timeline
from joulie_simcluster.scenario.run import ScenarioAssertion, write_timeline
from joulie_simcluster.smoke.summary import RunRecord, build_summary, checks_table, run_status

T0 = dt.datetime(2026, 12, 3, 18, 0, tzinfo=dt.UTC)


def summary(assertions: list[ScenarioAssertion]) -> dict[str, object]:
    return build_summary(RunRecord(assertions=assertions, status=run_status(assertions, False, None), spec="smoke",
                                   mode="fuse", scope="auto", timing={}, commit="abc", dirty=False, images={},
                                   started=T0, finished=T0 + dt.timedelta(seconds=90), resources={},
                                   runtime="process"))


def test_an_assert_step_is_one_assertion_named_by_the_step_and_a_failure_exits_1() -> None:
    ok = ScenarioAssertion("A01", "pass", "cluster power (prometheus) 1.8e+04 W", "≥ 500 W", 18000.0, step="power measured")
    bad = ScenarioAssertion("A02", "fail", "spec.profile: a 'eco'", "= 'performance'", 0.0, step="all performance")
    s = summary([ok, bad])
    assert s["exitCode"] == 1 and s["test.suite.run.status"] == "failure"
    assert s["failures"] == ["A02 all performance: spec.profile: a 'eco'"]
    assertions = s["assertions"]
    assert isinstance(assertions, list) and assertions[0]["test.case.name"] == "A01 power measured"
    assert "A02 all performance" in checks_table([ok, bad])
    assert summary([ok])["exitCode"] == 0


def test_the_timeline_is_written_as_csv_and_drawn(tmp_path: Path) -> None:
    o = Observation(agents=["a"], truth={"a": {"host": {"powerW": 500.0}, "caps": {"cpuPackageW": [150.0]}}},
                    prometheus_power_w=510.0, jobs={"running": 1.0}, facility={"ambientC": 22.0, "pue": 1.16})
    rows = [timeline_row(0.0, "start", o), timeline_row(3.0, "start", Observation()),
            timeline_row(6.0, "ambient up", o)]
    write_timeline(tmp_path, rows)
    with (tmp_path / "timeline.csv").open() as f:
        read = list(csv.DictReader(f))
    assert list(read[0]) == list(TIMELINE_FIELDS)
    assert read[0]["truth_power_w"] == "500.000" and read[1]["truth_power_w"] == "" and read[2]["step"] == "ambient up"
    plot_timeline(rows, [(0.0, "start"), (6.0, "ambient up")], "test", tmp_path / "timeline.png")
    assert (tmp_path / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
