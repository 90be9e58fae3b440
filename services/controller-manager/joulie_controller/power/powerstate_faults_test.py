"""The power policy under the faults a live probe found (issue 37), decided tick by tick."""

from __future__ import annotations

from datetime import timedelta

from joulie_controller.power.powerstate import BmcReading, PowerInput, decide
from joulie_controller.power.powerstate_test import ON, T0, actions, node, pn, pod, run
from joulie_controller.power.refusal import Refusal

FULL = pod("filler", "busy", cpu=32)


def test_a_node_back_on_but_still_cordoned_takes_the_pending_pod_and_no_other_node_wakes() -> None:
    nodes = [
        pn(node("busy")),
        pn(node("a", cordoned=True), "resuming", since=T0 - timedelta(minutes=4)),
        pn(node("b", cordoned=True), "off", desired="off"),
    ]
    d = run(nodes, [FULL, pod("job", cpu=4)], bmc={"a": "on", "b": "off"})
    assert actions(d) == {("a", "uncordon")}
    assert d.status["b"].state == "off"


def test_the_floor_counts_a_node_back_on_but_still_cordoned() -> None:
    nodes = [
        pn(node("a", cordoned=True), "resuming", since=T0 - timedelta(minutes=4)),
        pn(node("b", cordoned=True), "off", desired="off"),
    ]
    assert actions(run(nodes, bmc={"a": "on", "b": "off"})) == {("a", "uncordon")}


def _resuming_refused(count: int, ago_s: float) -> PowerInput:
    nodes = [pn(node("busy")), pn(node("a", cordoned=True), "resuming", since=T0 - timedelta(seconds=ago_s + 5))]
    refusal = Refusal("on", "node a: On: HTTP 500 Internal Server Error", T0 - timedelta(seconds=ago_s), count)
    return PowerInput(
        T0, nodes, [FULL, pod("job", cpu=4)], {"busy": BmcReading("on"), "a": BmcReading("off", refused=refusal)}, {}
    )


def test_a_refused_power_on_is_retried_once_the_backoff_has_passed() -> None:
    # RESUME_RETRY_BACKOFF 30s, doubling: the first retry 30 s after the refusal, the second 60 s after.
    assert decide(_resuming_refused(1, 20), ON).actions == []
    retry = decide(_resuming_refused(1, 30), ON)
    assert actions(retry) == {("a", "on")} and retry.status["a"].state == "resuming"
    assert "retry 1 of 3" in retry.status["a"].reason and "HTTP 500" in retry.status["a"].reason
    assert decide(_resuming_refused(2, 59), ON).actions == []
    assert actions(decide(_resuming_refused(2, 60), ON)) == {("a", "on")}


def test_a_power_on_refused_past_the_retry_budget_fails_the_node_with_the_bmc_reason() -> None:
    d = decide(_resuming_refused(4, 1), ON)
    assert actions(d) == {("a", "fail")} and d.status["a"].state == "failed"
    assert "refused power-on 4 times (RESUME_RETRIES=3)" in d.status["a"].reason
    assert "HTTP 500 Internal Server Error" in d.status["a"].reason


def test_a_hand_written_power_off_on_a_running_node_is_set_back_and_said() -> None:
    d = run([pn(node("a"), desired="off"), pn(node("busy"))], [FULL])
    assert d.desired["a"] == "on"
    assert any("spec.power.state off written outside the controller" in note for note in d.notes)
    off = run([pn(node("busy")), pn(node("a", cordoned=True), "off", desired="on")], [FULL], bmc={"a": "off"})
    assert off.desired["a"] == "off" and off.actions == []


def test_resume_timeout_caps_the_retries() -> None:
    d = decide(_resuming_refused(1, 16 * 60), ON)
    assert actions(d) == {("a", "fail")} and "RESUME_TIMEOUT (15m)" in d.status["a"].reason
    assert "HTTP 500" in d.status["a"].reason


def test_a_refusal_shows_as_the_error_while_resuming_but_not_once_an_operator_cleared_the_node() -> None:
    inp = _resuming_refused(1, 5)
    resuming = decide(inp, ON)
    assert resuming.status["a"].error == "power on failed: node a: On: HTTP 500 Internal Server Error"
    # failed, then the operator removed the taint and uncordoned: the refusal is history
    cleared = PowerInput(
        inp.now,
        [inp.nodes[0], pn(node("a"), "failed")],
        inp.pods,
        {**inp.bmc, "a": BmcReading("on", refused=inp.bmc["a"].refused)},
        {},
    )
    d = decide(cleared, ON)
    assert d.status["a"].state == "on" and d.status["a"].error is None
