"""What the tick reuses from the last one never hides a change: a spec edited in the cluster, a twin
deleted and made again, a NodeHardware with a new cap range, a reading that moved, a status edited
in the cluster, a refresh that is due; and what did not change is not built again."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import pytest

from joulie_api.generated.nodetwin import AgentLiveness, GPUCapSpec, GPUClockLock, NodeTwin, NodeTwinSpec
from joulie_controller.model import fsm
from joulie_controller.model.fsm import PodInfo, count_performance_pods, tenant_view
from joulie_controller.readings.values import Facility, Measurement
from joulie_controller.reconcile import tick as tick_module
from joulie_controller.reconcile.nodetwin import dump, status_body, status_content
from joulie_controller.reconcile.reconcile_test import T0, cluster, nhw, tick
from joulie_controller.reconcile.reuse import HeldStatus, Reuse, TwinFacts
from joulie_controller.reconcile.snapshot import Memory, NodeWrite, Snapshot
from joulie_controller.reconcile.statusband import MeasuredRow, measured_within, status_changed
from joulie_controller.settings import PolicySettings, ReconcileSettings, Settings

S = Settings(policy=PolicySettings(static_hp_frac=0.5))


def as_served(twin: NodeTwin, uid: str, generation: int) -> NodeTwin:
    """The twin as the API server (and so the watch cache) hands it over: with uid and generation."""
    return twin.model_copy(
        update={
            "metadata": {"name": twin.metadata["name"] if twin.metadata else "", "uid": uid, "generation": generation}
        }
    )


def steady() -> tuple[Snapshot, Memory]:
    mem = Memory()
    _, snap = tick(cluster(2), S, mem)
    snap = replace(
        snap, twins={k: as_served(t, f"uid-{k}", 1) for k, t in snap.twins.items()}, now=T0 + timedelta(seconds=5)
    )
    quiet, snap = tick(snap, S, mem)
    assert quiet.write_count == 0
    return snap, mem


def edited(snap: Snapshot, name: str, uid: str, generation: int) -> Snapshot:
    """``name``'s twin with someone else's spec.profile (the one the controller does not want)."""
    twin = snap.twins[name]
    other = "eco" if twin.spec.profile == "performance" else "performance"
    spec = twin.spec.model_copy(update={"profile": other})
    changed = as_served(twin.model_copy(update={"spec": spec}), uid, generation)
    return replace(snap, twins={**snap.twins, name: changed}, now=snap.now + timedelta(seconds=5))


def test_a_spec_edited_in_the_cluster_is_put_back_on_the_next_tick() -> None:
    snap, mem = steady()
    result, _ = tick(edited(snap, "node-0", "uid-node-0", 2), S, mem)
    assert [(w.node, w.spec is not None) for w in result.writes] == [("node-0", True)]


def test_a_twin_deleted_and_made_again_at_the_same_generation_is_rewritten() -> None:
    snap, mem = steady()
    result, _ = tick(edited(snap, "node-1", "a-new-uid", 1), S, mem)
    assert [(w.node, w.spec is not None) for w in result.writes] == [("node-1", True)]


def test_a_new_cap_range_in_nodehardware_changes_the_twin() -> None:
    snap, mem = steady()
    before = snap.twins["node-0"].status
    assert before is not None and before.power_measurement is not None
    bigger = replace(
        snap, hardware={**snap.hardware, "node-0": nhw("node-0", max_w=400)}, now=snap.now + timedelta(seconds=5)
    )
    result, after = tick(bigger, S, mem)
    assert [w.node for w in result.writes] == ["node-0"]
    status = after.twins["node-0"].status
    assert status is not None and status.power_measurement is not None
    assert (before.power_measurement.cpu_tdp_w, status.power_measurement.cpu_tdp_w) == (600, 800)


def test_whose_clock_lock_it_is_is_part_of_the_held_spec_even_at_the_same_generation() -> None:
    """Whose lock spec.gpu.clockLock holds comes from the status (capDecision), which moves no generation:
    the held spec must follow it, or a lock the controller no longer records would never be compared."""
    spec = NodeTwinSpec.model_validate({"nodeName": "gpu-0", "profile": "eco"}).model_copy(
        update={"gpu": GPUCapSpec(clock_lock=GPUClockLock.model_validate({"pctOfMax": 70.0}))}
    )
    twin = NodeTwin(metadata={"name": "gpu-0", "uid": "u1", "generation": 1}, spec=spec)
    reuse = Reuse()
    ours = reuse.held_spec("gpu-0", twin, 70.0)
    assert ours["gpu"]["clockLock"] == {"pctOfMax": 70.0}
    assert reuse.held_spec("gpu-0", twin, 70.0) is ours  # same generation, same owner: reused
    theirs = reuse.held_spec("gpu-0", twin, None)  # the status no longer records it: an operator's lock
    assert "gpu" not in theirs or "clockLock" not in theirs["gpu"]


@dataclass
class Builds:
    """The measured power of each status the tick built, in order: in its JSON form to compare with the
    cluster's (``status_body``), and as a model to write (``status_content``)."""

    compared: list[float | None] = field(default_factory=list)
    written: list[float | None] = field(default_factory=list)


def status_builds(monkeypatch: pytest.MonkeyPatch) -> Builds:
    builds = Builds()
    real_body, real_model = status_body, status_content

    def body(*args: Any, **kwargs: Any) -> dict[str, Any]:
        out = real_body(*args, **kwargs)
        builds.compared.append(out["powerMeasurement"].get("measuredNodePowerW"))
        return out

    def model(*args: Any, **kwargs: Any) -> Any:
        status = real_model(*args, **kwargs)
        builds.written.append(status.power_measurement.measured_node_power_w if status.power_measurement else None)
        return status

    monkeypatch.setattr(tick_module, "status_body", body)
    monkeypatch.setattr(tick_module, "status_content", model)
    return builds


def later(snap: Snapshot, seconds: float, **measured_w: float) -> Snapshot:
    moved = {k.replace("_", "-"): Measurement(w) for k, w in measured_w.items()}
    return replace(snap, now=snap.now + timedelta(seconds=seconds), measurements={**snap.measurements, **moved})


def test_a_status_whose_inputs_held_still_is_not_built_again(monkeypatch: pytest.MonkeyPatch) -> None:
    snap, mem = steady()
    built = status_builds(monkeypatch)
    quiet, snap = tick(later(snap, 5), S, mem)
    assert (quiet.write_count, built) == (0, Builds())
    # A reading where there was none: that node's status alone is built, and written.
    measured, snap = tick(later(snap, 5, node_0=400.0), S, mem)
    assert built == Builds([400.0], [400.0])
    assert [(w.node, w.status is not None) for w in measured.writes] == [("node-0", True)]
    status = snap.twins["node-0"].status
    assert status is not None and status.power_measurement is not None
    assert status.power_measurement.measured_node_power_w == 400.0


def test_a_reading_moving_inside_the_deadband_is_compared_not_built_and_beyond_it_written(
        monkeypatch: pytest.MonkeyPatch) -> None:
    s, mem = Settings(reconcile=ReconcileSettings(status_refresh_s=120, status_deadband_pct=1.0)), Memory()
    _, snap = tick(replace(cluster(1), measurements={"node-0": Measurement(400.0)}), s, mem)
    _, snap = tick(later(snap, 5, node_0=400.0), s, mem)  # the twin it wrote compared once
    built = status_builds(monkeypatch)
    same, snap = tick(later(snap, 5, node_0=400.0), s, mem)
    assert (same.write_count, built) == (0, Builds())
    # Only the measured values moved: they are compared as numbers, the status is neither built nor written.
    inside, snap = tick(later(snap, 60, node_0=403.5), s, mem)  # trend 3 W/min: inside its band too
    assert (inside.write_count, built) == (0, Builds())
    beyond, snap = tick(later(snap, 1, node_0=405.0), s, mem)
    assert (beyond.write_count, built) == (1, Builds([], [405.0]))  # built only to be written
    status = snap.twins["node-0"].status
    assert status is not None and status.power_measurement is not None
    assert status.power_measurement.measured_node_power_w == 405.0
    # The written status is held now: compared whole once, then by its measured values again.
    after, snap = tick(later(snap, 5, node_0=405.5), s, mem)
    assert (after.write_count, built) == (0, Builds([405.5], [405.0]))
    quiet, snap = tick(later(snap, 5, node_0=406.0), s, mem)
    assert (quiet.write_count, built) == (0, Builds([405.5], [405.0]))


def test_a_status_edited_in_the_cluster_is_put_back_though_its_inputs_held_still(
        monkeypatch: pytest.MonkeyPatch) -> None:
    snap, mem = steady()
    ours = snap.twins["node-1"].status
    assert ours is not None
    built = status_builds(monkeypatch)
    theirs = ours.model_copy(update={"predicted_psu_stress_score": 99.0})
    edited = snap.twins["node-1"].model_copy(update={"status": theirs})
    result, snap = tick(replace(later(snap, 5), twins={**snap.twins, "node-1": edited}), S, mem)
    assert built == Builds([None], [None])  # node-1's, built again to compare with the edited one, and written
    assert [(w.node, w.spec, w.status is not None) for w in result.writes] == [("node-1", None, True)]
    back = snap.twins["node-1"].status
    assert back is not None and back.predicted_psu_stress_score == ours.predicted_psu_stress_score


def test_a_status_that_held_still_is_still_refreshed_when_its_period_is_due(monkeypatch: pytest.MonkeyPatch) -> None:
    snap, mem = steady()
    built = status_builds(monkeypatch)
    refresh, snap = tick(later(snap, S.reconcile.status_refresh_s), S, mem)
    assert built == Builds([], [None, None])  # built to be written, not to tell whether it changed
    assert sorted(w.node for w in refresh.writes if w.status is not None) == ["node-0", "node-1"]
    assert all(t.status is not None and t.status.last_updated == snap.now for t in snap.twins.values())


def test_the_deadband_leaves_the_status_it_compares_as_it_was() -> None:
    """The JSON forms compared are kept between ticks (``Reuse``): putting old values back must copy."""
    desired: dict[str, Any] = {
        "powerMeasurement": {"measuredNodePowerW": 403.5, "powerTrendWPerMin": 0.0, "cpuTdpW": 600.0},
        "estimatedPUE": 1.2, "capDecision": {"reason": "r"}}
    held: dict[str, Any] = {
        "powerMeasurement": {"measuredNodePowerW": 400.0, "powerTrendWPerMin": 0.0, "cpuTdpW": 600.0},
        "estimatedPUE": 1.201}
    before_desired, before_held = copy.deepcopy(desired), copy.deepcopy(held)
    out = measured_within(desired, held, 1.0)
    assert (desired, held) == (before_desired, before_held)
    assert out == {**desired, "powerMeasurement": {**desired["powerMeasurement"], "measuredNodePowerW": 400.0},
                   "estimatedPUE": 1.201}
    assert out["capDecision"] is desired["capDecision"]  # what is not put back is shared, not copied


def test_the_performance_pods_follow_pods_added_moved_deleted_and_trusted_from_tick_to_tick() -> None:
    mem = Memory()
    snap = cluster(3)
    perf = {"joulie.io/workload-class": "performance"}
    a = PodInfo("team", "a", node_name="node-0", annotations=perf)
    b = PodInfo("tenant", "b", node_name="node-1", annotations=perf)
    steps: list[tuple[list[PodInfo], tuple[str, ...]]] = [
        ([a, b], ("team",)),
        ([a, b, PodInfo("team", "c", node_name="node-1", annotations=perf)], ("team",)),  # added
        ([replace(a, node_name="node-2"), b], ("team",)),  # moved (c gone)
        ([replace(a, node_name="node-2"), b], ("team", "tenant")),  # b's namespace trusted
        ([replace(a, node_name="node-2", phase="Succeeded"), b], ("*",)),  # a done
        ([], ("*",)),  # deleted
    ]
    for pods, trusted_namespaces in steps:
        s = Settings(policy=PolicySettings(type="work_aware_v1"), trusted_namespaces=trusted_namespaces)
        result, snap = tick(replace(snap, pods=pods, now=snap.now + timedelta(seconds=5)), s, mem)
        want = count_performance_pods(tenant_view(pods, trusted_namespaces))
        assert {o.node: o.performance_pods for o in result.outcomes} == {
            n: want.get(n, 0) for n in ("node-0", "node-1", "node-2")}, (pods, trusted_namespaces)


def test_a_twin_edited_in_the_cluster_is_read_again_though_its_name_is_the_same() -> None:
    snap, mem = steady()
    twin = snap.twins["node-0"]
    assert twin.spec.scheduling is not None and not twin.spec.scheduling.draining
    first = mem.reuse.twin_facts("node-0", twin)
    assert mem.reuse.twin_facts("node-0", twin) is first  # the same object: read once
    draining = twin.model_copy(update={"spec": twin.spec.model_copy(update={
        "profile": "eco", "scheduling": twin.spec.scheduling.model_copy(update={"draining": True})})})
    result, _ = tick(replace(later(snap, 5), twins={**snap.twins, "node-0": draining}), S, mem)
    outcome = next(o for o in result.outcomes if o.node == "node-0")
    assert outcome.previous_state == fsm.State.DRAINING_PERFORMANCE
    assert status_of_agent(twin, "agent-lost").agent_lost and not first.agent_lost


def status_of_agent(twin: NodeTwin, state: str) -> TwinFacts:
    status = twin.status.model_copy(update={"agent": AgentLiveness.model_validate({"state": state})}) \
        if twin.status is not None else None
    return Reuse().twin_facts("node-0", twin.model_copy(update={"status": status}))


def test_the_spec_compared_again_only_for_another_held_or_desired_form() -> None:
    reuse = Reuse()
    held, desired = {"profile": "eco", "cpu": {}}, {"profile": "eco", "cpu": {}}
    assert reuse.spec_same("node-0", held, desired)
    assert reuse.spec_same("node-0", held, desired)
    assert not reuse.spec_same("node-0", held, {"profile": "performance", "cpu": {}})  # a new desired spec
    assert not reuse.spec_same("node-0", {"profile": "performance"}, desired)  # a new held one
    assert reuse.spec_same("node-0", held, desired)
    reuse.forget(set(), set())
    assert reuse.specs_same == {}


def compared_whole(self: Reuse, node: str, fixed: object, moving: object, measured: Callable[[], MeasuredRow],
                   build: Callable[[], dict[str, Any]], held: HeldStatus, deadband_pct: float) -> bool:
    """``Reuse.status`` without its memo: every status built and compared whole (``status_changed``)."""
    return status_changed(build(), held.body, deadband_pct)


def as_written(writes: list[NodeWrite]) -> list[tuple[str, Any, str | None, Any]]:
    return [(w.node, dump(w.spec) if w.spec else None, w.label, dump(w.status) if w.status else None) for w in writes]


def step(rnd: random.Random, snap: Snapshot, levels: dict[str, float]) -> tuple[Snapshot, dict[str, Any]]:
    """The next tick's inputs: readings moving a little, some jumping, some gone (another source) or all
    held still, the outdoor ambient, IT power and Pods changing now and then, and a held status someone
    else edited."""
    for name in levels:
        if rnd.random() < 0.15:
            levels[name] *= rnd.choice((0.8, 0.95, 1.05, 1.3))
    measurements: Mapping[str, Measurement] = {
        name: Measurement(w * (1 + rnd.uniform(-0.006, 0.006))) for name, w in levels.items() if rnd.random() > 0.1}
    seconds = rnd.choice((5, 10, 30))
    if rnd.random() < 0.3:
        # Held still, at times on the same instant (the trend holds too): what else moved is all that moves.
        measurements, seconds = snap.measurements, rnd.choice((0, seconds))
    pods = snap.pods
    if rnd.random() < 0.2:
        pods = [PodInfo("default", f"p{i}", node_name=rnd.choice(sorted(levels)),
                        annotations={"joulie.io/workload-class": "performance"}) for i in range(rnd.randrange(3))]
    facility = snap.facility
    if rnd.random() < 0.2:
        facility = replace(facility, outdoor_ambient_c=rnd.choice((None, 18.0, 30.0)),
                           it_power_w=rnd.choice((0.0, 20_000.0, 20_100.0)))
    edits: dict[str, Any] = {}
    if rnd.random() < 0.2 and snap.twins:
        name = rnd.choice(sorted(snap.twins))
        status = snap.twins[name].status
        if status is not None:
            edits[name] = status.model_copy(update=rnd.choice((
                {"predicted_psu_stress_score": 99.0}, {"schedulable_class": "draining"},
                {"estimated_pue": (status.estimated_pue or 1.0) + rnd.choice((0.001, 0.1))})))
    return replace(snap, now=snap.now + timedelta(seconds=seconds), measurements=measurements,
                   pods=pods, facility=facility), edits


def edited_twins(snap: Snapshot, edits: dict[str, Any]) -> Snapshot:
    return replace(snap, twins={**snap.twins, **{k: snap.twins[k].model_copy(update={"status": v})
                                                 for k, v in edits.items() if k in snap.twins}})


@pytest.mark.parametrize("seed", range(24))
def test_the_status_compared_by_its_measured_values_writes_what_the_whole_comparison_writes(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rnd = random.Random(seed)
    s = Settings(policy=PolicySettings(static_hp_frac=0.5), reconcile=ReconcileSettings(
        status_refresh_s=120, status_deadband_pct=rnd.choice((0.0, 1.0, 5.0))))
    nodes = cluster(6)
    nodes = replace(nodes, nodes=[replace(n, labels={**n.labels, "joulie.io/rack": f"rack-{i % 2}"}) if i % 3 else n
                                  for i, n in enumerate(nodes.nodes)], facility=Facility())
    levels = {n.name: rnd.uniform(150, 550) for n in nodes.nodes}
    fast_mem, whole_mem = Memory(), Memory()
    fast = whole = nodes
    for _ in range(50):
        inputs, edits = step(rnd, fast, levels)
        fast_result, fast = tick(edited_twins(replace(fast, now=inputs.now, measurements=inputs.measurements,
                                                      pods=inputs.pods, facility=inputs.facility), edits), s, fast_mem)
        with monkeypatch.context() as m:
            m.setattr(Reuse, "status", compared_whole)
            whole_result, whole = tick(edited_twins(replace(whole, now=inputs.now, measurements=inputs.measurements,
                                                            pods=inputs.pods, facility=inputs.facility), edits),
                                       s, whole_mem)
        assert as_written(fast_result.writes) == as_written(whole_result.writes)
        assert fast_result.outcomes == whole_result.outcomes
