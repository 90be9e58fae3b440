"""The SM clock locks on the cluster: the controller writes the locks its policy chose to
spec.gpu.clockLocks (one entry per group of boards), releases them when the policy drops them, releases
the node-wide lock an older controller wrote, and never takes over or removes an operator's lock;
per-Pod estimates kept across ticks."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.generated.nodetwin import GPUCapSpec, NodeTwin
from joulie_controller.model.caps import Caps, CpuCap, GpuCap
from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.model.jobestimate import expected_sample
from joulie_controller.policies.plan import BoardLock, NodeCaps
from joulie_controller.reconcile.estimates import realised
from joulie_controller.reconcile.nodetwin import (
    cap_decision,
    controllers_lock,
    controllers_locks,
    desired_spec,
    operators_lock,
    operators_locks,
    spec_unchanged,
)
from joulie_controller.reconcile.snapshot import Memory, Snapshot, apply_in_memory
from joulie_controller.reconcile.tick import reconcile
from joulie_controller.settings import PolicySettings, Settings

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CAPS = Caps(CpuCap(pct_of_max=100.0), GpuCap(pct_of_max=77.5))


def _twin(lock: dict[str, float] | None, recorded: float | None) -> NodeTwin:
    spec = desired_spec("gpu-1", "eco", False, CAPS, "work-aware-v1")
    if lock is not None:
        assert spec.gpu is not None
        spec = spec.model_copy(
            update={
                "gpu": spec.gpu.model_copy(
                    update={"clock_lock": GPUCapSpec.model_validate({"clockLock": lock}).clock_lock}
                )
            }
        )
    # ``recorded``: the node-wide lock an older controller recorded in status (gpuClockLockPctOfMax).
    decision = cap_decision(NodeCaps(100.0, 77.5, "r"), 3.0).model_dump(by_alias=True, exclude_none=True)
    if recorded is not None:
        decision["gpuClockLockPctOfMax"] = recorded
    status = {"capDecision": decision}
    return NodeTwin.model_validate(
        {"metadata": {"name": "gpu-1"}, "spec": spec.model_dump(by_alias=True, exclude_none=True), "status": status}
    )


LOCKS = (BoardLock((0, 1, 2, 3), 62.5),)


def test_the_policys_locks_are_written_per_board_and_never_to_the_node_wide_lock() -> None:
    spec = desired_spec("gpu-1", "eco", False, CAPS, "work-aware-v1", gpu_locks=LOCKS)
    assert spec.gpu is not None and spec.gpu.clock_lock is None and spec.gpu.clock_locks is not None
    (entry,) = spec.gpu.clock_locks
    assert entry.gpus == [0, 1, 2, 3] and entry.pct_of_max == 62.5 and entry.max_mhz is None
    assert spec.gpu.power_cap is not None and spec.gpu.power_cap.cap_pct_of_max == 77.5


def test_an_older_controllers_node_wide_lock_is_its_own_and_released_by_a_write() -> None:
    ours = _twin({"pctOfMax": 62.5}, 62.5)
    assert controllers_lock(ours) == 62.5 and not operators_lock(ours)
    without = desired_spec("gpu-1", "eco", False, CAPS, "work-aware-v1")
    assert not spec_unchanged(ours.spec, without, controllers_lock(ours))  # dropping it is a write


def _with_locks(locks: list[dict[str, object]], recorded: list[dict[str, object]] | None) -> NodeTwin:
    twin = _twin(None, None)
    body = twin.model_dump(by_alias=True, exclude_none=True)
    body["spec"]["gpu"]["clockLocks"] = locks
    if recorded is not None:
        body["status"]["capDecision"]["gpuClockLocks"] = recorded
    return NodeTwin.model_validate(body)


def test_per_board_locks_are_the_controllers_only_as_the_whole_list_its_status_records() -> None:
    mine = [{"gpus": [0, 1, 2, 3], "pctOfMax": 62.5}]
    ours = _with_locks(mine, mine)
    assert controllers_locks(ours) == LOCKS and not operators_locks(ours)
    assert spec_unchanged(ours.spec, desired_spec("gpu-1", "eco", False, CAPS, "work-aware-v1", gpu_locks=LOCKS),
                          None, controllers_locks(ours))
    assert not spec_unchanged(ours.spec, desired_spec("gpu-1", "eco", False, CAPS, "work-aware-v1"), None,
                              controllers_locks(ours))  # dropping them is a write
    # An entry the status does not record makes the list an operator's: not compared, not written over.
    extra = _with_locks([*mine, {"gpus": [6], "maxMhz": 1200}], mine)
    unrecorded = _with_locks(mine, None)
    for theirs in (extra, unrecorded):
        assert operators_locks(theirs) and controllers_locks(theirs) is None
        assert spec_unchanged(theirs.spec, desired_spec("gpu-1", "eco", False, CAPS, "work-aware-v1"), None, None)


def test_any_other_lock_is_an_operators_and_is_no_reason_to_write() -> None:
    for twin in (_twin({"pctOfMax": 70}, None), _twin({"maxMhz": 1500}, 62.5), _twin({"pctOfMax": 70}, 62.5)):
        assert operators_lock(twin) and controllers_lock(twin) is None
        assert spec_unchanged(
            twin.spec, desired_spec("gpu-1", "eco", False, CAPS, "work-aware-v1"), controllers_lock(twin)
        )


def _managed(twin: NodeTwin, manager: str) -> NodeTwin:
    """The twin as the API server serves it after ``manager`` applied its spec.gpu.clockLock."""
    fields: dict[str, object] = {"f:spec": {"f:gpu": {"f:clockLock": {"f:pctOfMax": {}}}}}
    entry = {"manager": manager, "operation": "Apply", "apiVersion": "joulie.io/v1alpha1", "fieldsV1": fields}
    return twin.model_copy(update={"metadata": {"name": "gpu-1", "managedFields": [entry]}})


def test_a_lock_the_controller_applied_stays_its_own_when_the_status_write_after_it_failed() -> None:
    """The lock and its record are two requests: a failed status write (or a new leader) must not turn
    the controller's lock into an operator's, never to be released. managedFields, written with the lock,
    say whose it is."""
    unrecorded = _twin({"pctOfMax": 62.5}, None)
    ours = _managed(unrecorded, "joulie-controller-manager")
    assert controllers_lock(ours) == 62.5 and not operators_lock(ours)
    assert not spec_unchanged(ours.spec, desired_spec("gpu-1", "eco", False, CAPS, "work-aware-v1"), 62.5)
    theirs = _managed(unrecorded, "kubectl-client-side-apply")
    assert operators_lock(theirs) and controllers_lock(theirs) is None


def _gpu_cluster(pods: list[PodInfo]) -> Snapshot:
    nodes = [NodeInfo(f"gpu-{i}", {"joulie.io/managed": "true"}) for i in range(2)]
    hw = {
        n.name: NodeHardware.model_validate(
            {
                "spec": {"nodeName": n.name},
                "status": {
                    "cpu": {
                        "model": "xeon",
                        "sockets": 2,
                        "totalCores": 64,
                        "capRange": {"minWattsPerSocket": 50, "maxWattsPerSocket": 350},
                    },
                    "gpu": {
                        "present": True,
                        "model": "H100 NVL",
                        "count": 8,
                        "capRangePerGpu": {"minWatts": 200, "maxWatts": 400, "defaultWatts": 400},
                    },
                },
            }
        )
        for n in nodes
    }
    return Snapshot(now=T0, nodes=nodes, pods=pods, hardware=hw, twins={}, measurements={})


def test_estimates_follow_each_pods_samples_across_ticks_and_go_with_the_pod() -> None:
    s = Settings(policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0))
    pod = PodInfo(
        "ml",
        "decode",
        node_name="gpu-1",
        gpu_request=4,
        cpu_request=8,
        labels={"joulie.io/workload-kind": "gpu-inference"},
    )
    snap, mem = _gpu_cluster([pod]), Memory()
    sample = expected_sample(0.1, 0.3, 1.0, 400.0)
    for i in range(4):
        snap = replace(snap, now=T0 + timedelta(minutes=i), gpu_samples={"ml/decode": [sample] * 4})
        result = reconcile(snap, s, mem)
        snap = apply_in_memory(snap, result, s.nodes.profile_label)
    est = mem.job_estimates["ml/decode"]
    assert est.observations == 4 and est.c < 0.2 and abs(est.u - 0.3) < 0.05
    reconcile(replace(snap, pods=[], gpu_samples={}), s, mem)
    assert mem.job_estimates == {}


def test_a_decode_pod_seen_memory_bound_gets_its_lock_written_and_explained_then_released() -> None:
    s = Settings(policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0))
    pod = PodInfo("ml", "decode", node_name="gpu-1", gpu_request=8, cpu_request=8)
    snap, mem = _gpu_cluster([pod]), Memory()
    for i in range(6):
        snap = replace(
            snap, now=T0 + timedelta(minutes=i), gpu_samples={"ml/decode": [expected_sample(0.05, 0.3, 1.0, 400.0)] * 8}
        )
        snap = apply_in_memory(snap, reconcile(snap, s, mem), s.nodes.profile_label)
    twin = snap.twins["gpu-1"]
    # No board map (no hw.gpu.allocation): one entry over every board, as a node-wide lock.
    assert twin.spec.gpu is not None and twin.spec.gpu.clock_locks is not None and twin.spec.gpu.clock_lock is None
    (entry,) = twin.spec.gpu.clock_locks
    lock = entry.pct_of_max
    assert entry.gpus == list(range(8)) and lock is not None and 20.0 <= lock < 100.0
    d = twin.status.cap_decision if twin.status is not None else None
    assert d is not None and d.gpu_clock_locks == twin.spec.gpu.clock_locks and d.pods is not None
    row = d.pods[0]
    assert row.pod == "ml/decode" and row.lever in ("lock", "cap+lock") and (row.observations or 0) >= 5
    assert 0 < (row.predicted_slowdown_pct or 0) <= 3.0 and row.budget_source == "cluster"
    # The Pod finishes: its lock goes with it in one spec write.
    done = reconcile(replace(snap, pods=[], gpu_samples={}, now=T0 + timedelta(minutes=7)), s, mem)
    spec = next(w.spec for w in done.writes if w.node == "gpu-1")
    assert spec is not None and (spec.gpu is None or not spec.gpu.clock_locks)


def test_an_operators_lock_stays_whatever_the_policy_would_choose() -> None:
    s = Settings(policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0))
    pod = PodInfo("ml", "decode", node_name="gpu-1", gpu_request=8, cpu_request=8)
    snap, mem = _gpu_cluster([pod]), Memory()
    snap = apply_in_memory(snap, reconcile(snap, s, mem), s.nodes.profile_label)
    twin = snap.twins["gpu-1"]
    assert twin.spec.gpu is not None
    held = twin.model_copy(
        update={
            "spec": twin.spec.model_copy(
                update={
                    "gpu": twin.spec.gpu.model_copy(
                        update={"clock_lock": GPUCapSpec.model_validate({"clockLock": {"maxMhz": 1500}}).clock_lock}
                    )
                }
            )
        }
    )
    snap = replace(snap, twins={**snap.twins, "gpu-1": held})
    log: list[str] = []
    for i in range(4):
        snap = replace(
            snap,
            now=T0 + timedelta(minutes=i + 1),
            gpu_samples={"ml/decode": [expected_sample(0.05, 0.3, 1.0, 400.0)] * 8},
        )
        result = reconcile(snap, s, mem)
        log += result.log
        for w in result.writes:
            assert w.spec is None or w.spec.gpu is None or (w.spec.gpu.clock_lock is None and not w.spec.gpu.clock_locks)
    assert [line for line in log if "spec.gpu.clockLock is an operator's: kept" in line]


def test_estimates_moving_with_each_ticks_noise_do_not_write_the_status_every_tick() -> None:
    s = Settings(policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0))
    pod = PodInfo("ml", "decode", node_name="gpu-1", gpu_request=8, cpu_request=8)
    snap, mem = _gpu_cluster([pod]), Memory()
    status_writes = []
    for i in range(24):
        u = 0.3 + (0.01 if i % 2 else -0.01)  # noise on the draw, a steady job
        snap = replace(
            snap,
            now=T0 + timedelta(seconds=30 * i),
            gpu_samples={"ml/decode": [expected_sample(0.05, u, 1.0, 400.0)] * 8},
        )
        result = reconcile(snap, s, mem)
        status_writes.append(sum(w.status is not None for w in result.writes if w.node == "gpu-1"))
        snap = apply_in_memory(snap, result, s.nodes.profile_label)
    # The first ticks settle the estimate and the lever (the lock deepens as c is learnt); once the
    # choice holds, noise moves nothing: the status is written only at the refresh period (2 min, every
    # fourth 30 s tick).
    assert status_writes[-8:].count(1) == 2, status_writes


def test_the_status_reports_the_slowdown_the_pods_measured_clock_realised_and_it_goes_with_the_pod() -> None:
    # Defaults 400 W: a decode Pod draws less than any limit, so only a clock below full is slowdown.
    s = Settings(policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0))
    pod = PodInfo("ml", "decode", node_name="gpu-1", gpu_request=8, cpu_request=8)
    snap, mem = _gpu_cluster([pod]), Memory()
    clocks = [1.0, 1.0, 0.6, 0.6, 0.6]
    for i, r in enumerate(clocks):
        snap = replace(snap, now=T0 + timedelta(minutes=i),
                       gpu_samples={"ml/decode": [expected_sample(0.2, 0.3, r, 400.0)] * 8})
        snap = apply_in_memory(snap, reconcile(snap, s, mem), s.nodes.profile_label)
    # Busy seconds (the samples say 90 % utilisation); the first tick counts one interval.
    assert mem.clock_logs["ml/decode"].seconds == pytest.approx({1.0: 108.0, 0.6: 162.0})
    est = mem.job_estimates["ml/decode"]
    work_s = 108.0 + 162.0 / (est.c / 0.6 + 1.0 - est.c)
    written = realised("ml/decode", mem.job_estimates, mem.clock_logs, mem.views["gpu-1"])
    assert written is not None and written.slowdown_pct == pytest.approx(100.0 * (270.0 / work_s - 1.0))
    twin = snap.twins["gpu-1"]
    d = twin.status.cap_decision if twin.status is not None else None
    assert d is not None and d.pods is not None
    row = d.pods[0]
    assert row.realised_seconds is not None and row.realised_seconds > 0
    assert row.realised_slowdown_pct is not None and row.realised_slowdown_low_pct is not None
    assert row.realised_slowdown_low_pct <= row.realised_slowdown_pct <= (row.realised_slowdown_high_pct or 0.0)
    # A stale sample adds no time; the Pod gone takes its log with it.
    stale = replace(expected_sample(0.2, 0.3, 0.6, 400.0), age_s=600.0)
    reconcile(replace(snap, now=T0 + timedelta(minutes=5), gpu_samples={"ml/decode": [stale] * 8}), s, mem)
    assert mem.clock_logs["ml/decode"].total_s == pytest.approx(270.0)
    # Idle boards sit at their lowest clock whatever the limit: no slowdown, no time.
    idle = replace(expected_sample(0.2, 0.3, 0.2, 400.0), utilization=0.0, sm_active=0.0)
    reconcile(replace(snap, now=T0 + timedelta(minutes=6), gpu_samples={"ml/decode": [idle] * 8}), s, mem)
    assert mem.clock_logs["ml/decode"].total_s == pytest.approx(270.0)
    # Boards reporting neither utilisation nor SM activity: how much was busy is unknown, no time.
    blind = replace(expected_sample(0.2, 0.3, 0.2, 400.0), utilization=None, sm_active=None)
    reconcile(replace(snap, now=T0 + timedelta(minutes=6, seconds=30), gpu_samples={"ml/decode": [blind] * 8}), s, mem)
    assert mem.clock_logs["ml/decode"].total_s == pytest.approx(270.0)
    reconcile(replace(snap, pods=[], gpu_samples={}, now=T0 + timedelta(minutes=7)), s, mem)
    assert mem.clock_logs == {}


def test_a_decode_pod_and_a_compute_bound_pod_on_one_node_lock_only_the_decode_pods_boards() -> None:
    s = Settings(policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0),
                 trusted_namespaces=("ml",))
    decode = PodInfo("ml", "decode", node_name="gpu-1", gpu_request=4, cpu_request=8,
                     labels={"joulie.io/workload-kind": "gpu-inference"})
    train = PodInfo("ml", "train", node_name="gpu-1", gpu_request=4, cpu_request=8,
                    labels={"joulie.io/workload-kind": "gpu-training"})
    snap, mem = _gpu_cluster([decode, train]), Memory()
    boards = {("gpu-1", "ml/decode"): (0, 1, 2, 3), ("gpu-1", "ml/train"): (4, 5, 6, 7)}
    spec_writes = []
    for i in range(8):
        samples = {"ml/decode": [expected_sample(0.05, 0.3, 1.0, 400.0)] * 4,
                   "ml/train": [expected_sample(0.97, 0.9, 1.0, 400.0)] * 4}
        snap = replace(snap, now=T0 + timedelta(minutes=i), gpu_samples=samples, gpu_boards=boards)
        result = reconcile(snap, s, mem)
        spec_writes.append(sum(w.spec is not None for w in result.writes if w.node == "gpu-1"))
        snap = apply_in_memory(snap, result, s.nodes.profile_label)
    twin = snap.twins["gpu-1"]
    assert twin.spec.gpu is not None and twin.spec.gpu.clock_locks is not None
    (entry,) = twin.spec.gpu.clock_locks
    assert entry.gpus == [0, 1, 2, 3] and entry.pct_of_max is not None and entry.pct_of_max < 100.0
    d = twin.status.cap_decision if twin.status is not None else None
    assert d is not None and d.gpu_clock_locks == twin.spec.gpu.clock_locks and d.pods is not None
    rows = {p.pod: p for p in d.pods}
    assert rows["ml/decode"].lever in ("lock", "probe") and rows["ml/train"].lever == "none"
    for row in rows.values():
        assert (row.predicted_slowdown_pct or 0.0) <= (row.budget_pct or 0.0)
    # Once chosen, the list is the controller's: no spec write while the choice holds.
    assert spec_writes[-3:] == [0, 0, 0], spec_writes
