from __future__ import annotations

from joulie_simcluster.chaos.observe import mismatches
from joulie_simcluster.chaos.report import Outcome, chaos_section, markdown, per_fault
from joulie_simcluster.smoke.checks import Assertion


def outcome(fault: str, rep: int, survived: bool, recover_s: float | None, lost: int = 0) -> Outcome:
    return Outcome(fault, rep, "x", "2026-12-03T12:00:00Z", survived, recover_s, lost, 1, 0, 1, 0, 0, 0,
                   "" if survived else "not running: agent-x")


def test_one_row_per_fault_with_sums_and_the_recovery_times_of_the_survived() -> None:
    rows = per_fault([outcome("agent-kill", 1, True, 4.0), outcome("agent-kill", 2, True, 8.0),
                      outcome("etcd-kill", 1, False, None, lost=3)])
    assert rows[0] == {"fault": "agent-kill", "injected": 2, "survived": 2, "writesLost": 0, "writesLate": 2,
                       "driftDetected": 0, "restarts": 2, "crashes": 0, "podsFailed": 0, "podsStuck": 0,
                       "recoverMedianS": 6.0, "recoverMaxS": 8.0}
    assert rows[1]["survived"] == 0 and rows[1]["writesLost"] == 3 and rows[1]["recoverMaxS"] is None


def test_the_report_names_what_did_not_survive() -> None:
    section = chaos_section([outcome("agent-kill", 1, True, 4.0), outcome("etcd-kill", 1, False, None)], 7, 1)
    md = markdown(section, "chaos")
    assert "| agent-kill | 1 | 1 | 0 | 1 | 0 | 1 | 0 | 0 | 0 | 4.0 | 4.0 |" in md
    assert "- etcd-kill #1 on x at 2026-12-03T12:00:00Z: not running: agent-x" in md
    assert not section["survivedAll"]


def test_mismatched_caps_are_counted_from_the_assertion() -> None:
    ok = Assertion("S04", "pass", "9 caps match", "")
    assert mismatches(ok) == 0
    two = Assertion("S04", "fail", "a: package 0 cap 1 W ≠ 2 W; a: package 1 cap 1 W ≠ 2 W", "")
    assert mismatches(two) == 2
    many = Assertion("S04", "fail", "; ".join(["x"] * 6) + "; … 4 more", "")
    assert mismatches(many) == 10


def test_what_a_fault_showed_is_listed_under_its_injection() -> None:
    shown = Outcome("extender-slow", 1, "extender", "2026-12-03T12:00:00Z", True, 2.0, 0, 0, 0, 0, 0, 0, 0,
                    note="probe Pod bound 10 s after creation")
    md = markdown(chaos_section([shown, outcome("agent-kill", 1, True, 4.0)], 7, 1), "chaos")
    assert "## What the faults showed" in md
    assert "- extender-slow #1 on extender: probe Pod bound 10 s after creation" in md and "agent-kill #1 on x:" not in md
