"""What the tick reuses from the last one never hides a change: a spec edited in the cluster, a twin
deleted and made again, a NodeHardware with a new cap range."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from joulie_api.generated.nodetwin import GPUCapSpec, GPUClockLock, NodeTwin, NodeTwinSpec
from joulie_controller.reconcile.reconcile_test import T0, cluster, nhw, tick
from joulie_controller.reconcile.reuse import Reuse
from joulie_controller.reconcile.snapshot import Memory, Snapshot
from joulie_controller.settings import PolicySettings, Settings

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
