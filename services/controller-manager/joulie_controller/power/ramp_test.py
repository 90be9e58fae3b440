"""The power ramp limit and per-pool floors as an operator sees them: a burst that needs many nodes
powers them on spaced by their boot draw, each waiting node saying until when; a pool's own floor."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import timedelta

import pytest

from joulie_common.settingsgrammar import SettingError
from joulie_controller.power.history import PowerHistory
from joulie_controller.power.powerstate import BmcReading, PowerDecision, PowerInput, PowerNode, decide
from joulie_controller.power.powerstate_test import IDLE_11M, ON, T0, actions, node, pn, pod
from joulie_controller.power.ramp import RampBucket, ready_at
from joulie_controller.settings import Settings

RAMP = replace(ON, suspend=replace(ON.suspend, max_concurrent=8, min_powered=0, ramp_limit_w_per_sec=10.0))
"""10 W/s: a 1000 W boot step every 100 s."""


def off_nodes(count: int, watts: float = 1000.0) -> list[PowerNode]:
    return [pn(node(f"n{i}", cordoned=True), "off", T0 - timedelta(hours=1), "off", rank_w=watts) for i in range(count)]


def tick(nodes: list[PowerNode], hist: PowerHistory, at: timedelta, s: Settings = RAMP) -> PowerDecision:
    """One reconcile as the controller runs it: the bucket from the history, the power-ons drawn from it."""
    now = T0 + at
    boot_w = {n.info.name: n.rank_w for n in nodes}
    readings = {
        n.info.name: BmcReading({"off": "off", "resuming": "powering-on"}.get(n.status.state, "on"))  # type: ignore[arg-type]
        for n in nodes
    }
    # Three 32-core Pods: each needs a node of its own.
    pods = [pod(f"p{i}", cpu=32.0) for i in range(3)]
    inp = PowerInput(now, nodes, pods, readings, {}, ramp_room_w=hist.ramp_room(now, boot_w, s.suspend))
    d = decide(inp, s)
    hist.observe_ramp(now, d, boot_w, s.suspend)
    return d


def test_the_bucket_refills_at_the_limit_up_to_one_nodes_step() -> None:
    full = RampBucket()
    assert full.room(T0, 10.0, 1000.0) == 1000.0
    assert full.room(T0, 0.0, 1000.0) == math.inf  # no limit
    drawn = full.after(T0, [1000.0], 10.0, 1000.0)
    assert drawn.room(T0, 10.0, 1000.0) == 0.0
    assert drawn.room(T0 + timedelta(seconds=30), 10.0, 1000.0) == pytest.approx(300.0)
    assert drawn.room(T0 + timedelta(hours=1), 10.0, 1000.0) == 1000.0  # never more than one step
    assert ready_at(300.0, 1000.0, T0, 10.0) == T0 + timedelta(seconds=70)


def test_a_burst_powers_nodes_on_spaced_by_their_boot_step_and_the_waiting_node_says_until_when() -> None:
    nodes, hist = off_nodes(3), PowerHistory()
    first = tick(nodes, hist, timedelta(0))
    assert actions(first) == {("n0", "on")}  # not all three at once: 3000 W in one step
    waiting = first.status["n1"].reason
    assert "POWER_RAMP_LIMIT_W_PER_S=10" in waiting and "until about 2026-12-03T12:01:40Z" in waiting
    nodes[0] = replace(nodes[0], status=first.status["n0"], desired="on")
    nodes[1] = replace(nodes[1], status=first.status["n1"])
    assert actions(tick(nodes, hist, timedelta(seconds=60))) == set()  # 600 W of room: not yet
    assert actions(tick(nodes, hist, timedelta(seconds=100))) == {("n1", "on")}


def test_without_a_limit_the_burst_powers_on_every_node_it_needs_at_once() -> None:
    unlimited = replace(RAMP, suspend=replace(RAMP.suspend, ramp_limit_w_per_sec=0.0))
    d = tick(off_nodes(3), PowerHistory(), timedelta(0), unlimited)
    assert actions(d) == {("n0", "on"), ("n1", "on"), ("n2", "on")}


def test_small_nodes_fit_the_room_a_large_step_leaves() -> None:
    # 10 W/s with a 3000 W largest step: three 1000 W nodes after a rest fit at once.
    nodes = [*off_nodes(3), pn(node("big", cordoned=True), "off", T0, "off", rank_w=3000.0)]
    d = tick(nodes, PowerHistory(), timedelta(0))
    assert actions(d) == {("n0", "on"), ("n1", "on"), ("n2", "on")}


def test_a_pool_floor_of_its_own_keeps_its_node_and_another_pool_sleeps_to_zero() -> None:
    s = replace(ON, suspend=replace(ON.suspend, min_powered=1, min_powered_by_pool=(("gpu", 0),)))
    gpu, cpu = {"joulie.io/pool": "gpu"}, {"joulie.io/pool": "cpu"}
    nodes = [pn(node("a", gpus=8, labels=gpu)), pn(node("b", labels=cpu)), pn(node("c", labels=cpu))]
    readings = {n.info.name: BmcReading("on") for n in nodes}
    d = decide(PowerInput(T0, nodes, [], readings, IDLE_11M), s)
    assert ("a", "cordon") in actions(d)  # the GPU pool's floor is 0
    kept = [k for k in ("b", "c") if (k, "cordon") not in actions(d)]
    assert len(kept) == 1  # the CPU pool keeps SUSPEND_MIN_POWERED=1
    assert d.status[kept[0]].reason == "kept on: the floor of pool cpu, 1 powered (SUSPEND_MIN_POWERED=1)"


def test_the_floor_restored_for_a_pool_names_its_own_setting() -> None:
    s = replace(ON, suspend=replace(ON.suspend, min_powered=0, min_powered_by_pool=(("cpu", 1),)))
    nodes = [pn(node("b", labels={"joulie.io/pool": "cpu"}, cordoned=True), "off", T0, "off")]
    d = decide(PowerInput(T0, nodes, [], {"b": BmcReading("off")}, {}), s)
    assert actions(d) == {("b", "on")}
    assert "under its floor 1 (SUSPEND_MIN_POWERED_BY_POOL)" in d.status["b"].reason


def test_pool_floors_and_the_ramp_limit_read_from_the_environment_and_bad_values_name_the_variable() -> None:
    s = Settings.from_env({"SUSPEND_MIN_POWERED_BY_POOL": "gpu=0, cpu=2", "POWER_RAMP_LIMIT_W_PER_S": "250"})
    assert s.suspend.min_powered_by_pool == (("cpu", 2), ("gpu", 0))
    assert s.suspend.ramp_limit_w_per_sec == 250.0
    assert Settings.from_env({}).suspend.min_powered_by_pool == ()
    for env, words in (
        ({"SUSPEND_MIN_POWERED_BY_POOL": "gpu"}, "pool=nodes"),
        ({"SUSPEND_MIN_POWERED_BY_POOL": "gpu=-1"}, "pool=nodes"),
        ({"SUSPEND_MIN_POWERED_BY_POOL": "gpu=0,gpu=1"}, "named twice"),
        ({"POWER_RAMP_LIMIT_W_PER_S": "-5"}, "0 (no limit) or more watts per second"),
    ):
        with pytest.raises(SettingError, match=re.escape(words)) as err:
            Settings.from_env(env)
        assert next(iter(env)) in str(err.value)


def test_the_ramp_and_floor_reasons_name_their_cause_for_kubectl_joulie() -> None:
    from joulie_api import powerreason

    nodes, hist = off_nodes(2), PowerHistory()
    waiting = tick(nodes, hist, timedelta(0)).status["n1"].reason
    assert powerreason.cause(waiting) == "rate limit"
    s = replace(ON, suspend=replace(ON.suspend, min_powered=0, min_powered_by_pool=(("cpu", 1),)))
    off = [pn(node("b", labels={"joulie.io/pool": "cpu"}, cordoned=True), "off", T0, "off")]
    restored = decide(PowerInput(T0, off, [], {"b": BmcReading("off")}, {}), s).status["b"].reason
    assert powerreason.cause(restored) == "floor"
