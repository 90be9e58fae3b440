"""The NodeTwin the controller owns: the spec it wants (``desired_spec``), the status it computes
(``status_content``, ``cap_decision``, ``power_status``), and the write rules that keep an idle
cluster free of API writes (``status_needs_write``: rounded values, the measured values' dead band
in ``statusband``, the per-node refresh period). Pure."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, cast

from joulie_api.generated.nodetwin import (
    CapDecision,
    CPUCapSpec,
    DeviceCapDecision,
    GPUBoardClockLock,
    GPUCapSpec,
    GPUPowerCap,
    NodeTwin,
    NodeTwinSpec,
    NodeTwinStatus,
    PodCapDecision,
    PolicyRef,
    PowerSpec,
    SchedulingSpec,
)
from joulie_api.generated.nodetwin import PowerStatus as PowerStatusModel
from joulie_api.names import FIELD_MANAGER_CONTROLLER_MANAGER
from joulie_controller.model import twin
from joulie_controller.model.caps import Caps
from joulie_controller.model.realised import Realised
from joulie_controller.policies.plan import BoardLock, NodeCaps, PodDecision
from joulie_controller.power import powerstate
from joulie_controller.reconcile.statusband import MeasuredRow, status_changed


def desired_spec(node: str, profile: str, draining: bool, caps: Caps, policy_name: str,
                 power: str | None = None, gpu_locks: Sequence[BoardLock] = ()) -> NodeTwinSpec:
    """The spec the controller owns. Its clock locks go to spec.gpu.clockLocks, one entry per group of
    boards; spec.gpu.clockLock, the whole node's, is the operator's (the controller never writes it)."""
    if caps.cpu.pct_of_max is not None:
        cpu = CPUCapSpec(package_power_cap_pct_of_max=caps.cpu.pct_of_max)
    elif caps.cpu.watts is not None and caps.cpu.watts >= 1:
        cpu = CPUCapSpec(package_power_cap_watts=caps.cpu.watts)
    else:
        cpu = CPUCapSpec()  # {}: the agent leaves the CPU cap as it is
    gpu = None
    if caps.gpu is not None:
        gpu = GPUCapSpec(power_cap=GPUPowerCap(
            scope="perGpu", cap_pct_of_max=caps.gpu.pct_of_max, cap_watts_per_gpu=caps.gpu.watts_per_gpu),
            clock_locks=board_locks(gpu_locks))
    return NodeTwinSpec(
        node_name=node,
        profile=cast(Literal["performance", "eco"], profile),
        cpu=cpu,
        gpu=gpu,
        policy=PolicyRef(name=policy_name),
        scheduling=SchedulingSpec(draining=draining),
        power=PowerSpec(state=cast(Literal["on", "off"], power)) if power is not None else None,
    )


def board_locks(locks: Sequence[BoardLock]) -> list[GPUBoardClockLock] | None:
    """spec.gpu.clockLocks (and status.capDecision.gpuClockLocks) for ``locks``; None for none."""
    return [GPUBoardClockLock(gpus=list(b.gpus), pct_of_max=round(b.pct_of_max, 1)) for b in locks] or None


def dump(model: Any) -> dict[str, Any]:
    return cast(dict[str, Any], model.model_dump(mode="json", by_alias=True, exclude_none=True))


def recorded_lock(existing: NodeTwin | None) -> float | None:
    """The clock lock the controller last chose for the node (status.capDecision.gpuClockLockPctOfMax)."""
    st = existing.status if existing is not None else None
    return st.cap_decision.gpu_clock_lock_pct_of_max if st is not None and st.cap_decision is not None else None


def applied_clock_lock(existing: NodeTwin | None) -> bool:
    """Does the controller's field manager own ``spec.gpu.clockLock`` (server-side apply records it in
    ``metadata.managedFields``, in the same request as the lock)? False where the object carries no
    managed fields (an in-memory twin): then the status record alone decides."""
    return _applied(existing, "f:clockLock")


def controllers_lock(existing: NodeTwin | None) -> float | None:
    """The spec's clock lock when it is the controller's: ``pctOfMax`` equal to the lock its status
    records choosing, or a lock the controller's field manager applied (the status record is a second
    request: a tick after a failed status write, or a new leader, still knows the lock it set). Any
    other lock in spec is an operator's."""
    recorded = recorded_lock(existing)
    lock = existing.spec.gpu.clock_lock if existing is not None and existing.spec.gpu is not None else None
    if lock is None or lock.max_mhz is not None or lock.pct_of_max is None:
        return None
    if applied_clock_lock(existing):
        return float(lock.pct_of_max)
    if recorded is None:
        return None
    return recorded if abs(lock.pct_of_max - recorded) < 1e-6 else None


def _applied(existing: NodeTwin | None, field_name: str) -> bool:
    meta = existing.metadata if existing is not None else None
    for entry in (meta or {}).get("managedFields") or []:
        if not isinstance(entry, dict) or entry.get("manager") != FIELD_MANAGER_CONTROLLER_MANAGER:
            continue
        spec = ((entry.get("fieldsV1") or {}).get("f:spec") or {})
        if isinstance(spec, dict) and field_name in (spec.get("f:gpu") or {}):
            return True
    return False


def controllers_locks(existing: NodeTwin | None) -> tuple[BoardLock, ...] | None:
    """spec.gpu.clockLocks when they are the controller's: every entry a ``pctOfMax``, and the list the
    one status.capDecision.gpuClockLocks records choosing or one the controller's field manager applied
    (as ``controllers_lock``). The list is compared whole: server-side apply owns it whole, so a list
    holding any entry the controller did not set is an operator's."""
    gpu = existing.spec.gpu if existing is not None else None
    locks = gpu.clock_locks if gpu is not None else None
    if not locks or any(e.max_mhz is not None or e.pct_of_max is None for e in locks):
        return None
    st = existing.status if existing is not None else None
    recorded = st.cap_decision.gpu_clock_locks if st is not None and st.cap_decision is not None else None
    body = [dump(e) for e in locks]
    if not _applied(existing, "f:clockLocks") and (recorded is None or [dump(e) for e in recorded] != body):
        return None
    return tuple(BoardLock(tuple(sorted(e.gpus)), float(e.pct_of_max or 0.0)) for e in locks)


def operators_locks(existing: NodeTwin | None) -> bool:
    """Does the spec hold clock locks per board the controller did not set (an operator's, left alone)?"""
    gpu = existing.spec.gpu if existing is not None else None
    return bool(gpu is not None and gpu.clock_locks) and controllers_locks(existing) is None


def operators_lock(existing: NodeTwin | None) -> bool:
    """Does the spec hold a clock lock the controller did not set (an operator's, left alone)?"""
    lock = existing.spec.gpu.clock_lock if existing is not None and existing.spec.gpu is not None else None
    return lock is not None and controllers_lock(existing) is None


def owned_spec(spec: NodeTwinSpec, controller_lock_pct: float | None = None,
               controller_locks: tuple[BoardLock, ...] | None = None) -> NodeTwinSpec:
    """The spec without the fields the controller does not own. A GPU clock lock is the controller's
    only while it is the one the work-aware policy chose (``controller_lock_pct``: a node-wide lock an
    older controller wrote; ``controller_locks``: the clockLocks list, ``controllers_locks``); any other
    is an operator's: the controller neither compares nor re-applies it, and its server-side apply
    leaves it to its owner."""
    if spec.gpu is None or (spec.gpu.clock_lock is None and not spec.gpu.clock_locks):
        return spec
    update: dict[str, Any] = {}
    lock = spec.gpu.clock_lock
    if lock is not None and not (controller_lock_pct is not None and lock.max_mhz is None
                                 and lock.pct_of_max is not None and abs(lock.pct_of_max - controller_lock_pct) < 1e-6):
        update["clock_lock"] = None
    if spec.gpu.clock_locks and controller_locks is None:
        update["clock_locks"] = None
    if not update:
        return spec
    gpu = spec.gpu.model_copy(update=update)
    return spec.model_copy(update={"gpu": gpu if dump(gpu) else None})


def spec_unchanged(existing: NodeTwinSpec, desired: NodeTwinSpec, controller_lock_pct: float | None = None,
                   controller_locks: tuple[BoardLock, ...] | None = None) -> bool:
    """Does the cluster already hold the spec the controller would write (the fields it owns)?"""
    return dump(owned_spec(existing, controller_lock_pct, controller_locks)) == dump(desired)


def _r(x: float, digits: int = 1) -> float:
    return round(x, digits) + 0.0  # + 0.0 turns -0.0 into 0.0


def cap_decision(work: NodeCaps, tau_pct: float, locks_written: Sequence[BoardLock] = (),
                 realised: Mapping[str, Realised] | None = None) -> CapDecision:
    """NodeTwin status.capDecision: the work-aware policy's choice, explained. A device held at its
    reference limit carries only the reason (no prediction: nothing was traded). ``realised``: each
    Pod's realised slowdown so far, by "namespace/name" (``model.realised``)."""

    def device(capped: bool, pct: float, driver: str, slow: float, saving: float) -> dict[str, Any] | None:
        if not driver:
            return None  # the node has no such device group
        if not capped:
            return {"cap_pct_of_max": _r(pct), "driven_by": driver[:512]}
        return {"cap_pct_of_max": _r(pct), "driven_by": driver[:512],
                "predicted_slowdown_pct": _r(max(0.0, slow), 2), "predicted_energy_saving_pct": _r(saving, 2)}

    cpu = device(work.cpu_capped, work.cpu_pct, work.cpu_driver, work.cpu_slowdown_pct, work.cpu_saving_pct)
    gpu = device(work.gpu_capped, work.gpu_pct, work.gpu_driver, work.gpu_slowdown_pct, work.gpu_saving_pct)
    return CapDecision(
        reason=work.reason[:2048],
        slowdown_budget_pct=_r(tau_pct, 2),
        cpu=DeviceCapDecision(**cpu) if cpu is not None else None,
        gpu=DeviceCapDecision(**gpu) if gpu is not None else None,
        gpu_clock_locks=board_locks(locks_written),
        pods=[pod_decision(p, (realised or {}).get(p.pod)) for p in work.pods[:32]] or None,
    )


def pod_decision(p: PodDecision, realised: Realised | None = None) -> PodCapDecision:
    r = realised
    return PodCapDecision(
        pod=p.pod[:320], lever=cast(Literal["none", "cap", "lock", "cap+lock", "probe"], p.lever),
        estimated_compute_share=_r(min(1.0, max(0.0, p.compute_share)), 3),
        estimated_draw=_r(min(1.0, max(0.0, p.draw)), 3), observations=max(0, p.observations),
        predicted_slowdown_pct=_r(max(0.0, p.predicted_slowdown_pct), 2), budget_pct=_r(max(0.0, p.budget_pct), 2),
        budget_source=p.budget_source[:256],
        realised_slowdown_pct=_r(r.slowdown_pct, 2) if r is not None else None,
        realised_slowdown_low_pct=_r(r.low_pct, 2) if r is not None else None,
        realised_slowdown_high_pct=_r(r.high_pct, 2) if r is not None else None,
        realised_seconds=_r(max(0.0, r.seconds), 0) if r is not None else None)


def power_status(status: powerstate.PowerStatus) -> PowerStatusModel:
    return PowerStatusModel(state=status.state, since=status.since, reason=status.reason or None,
                            boots=status.boots, error=status.error)


def previous_power(existing: NodeTwin | None) -> tuple[powerstate.PowerStatus, powerstate.DesiredPower]:
    """The node's power status and desired state as its NodeTwin holds them (on for a new node)."""
    spec_power = existing.spec.power if existing is not None else None
    desired: powerstate.DesiredPower = "off" if spec_power is not None and spec_power.state == "off" else "on"
    p = existing.status.power if existing is not None and existing.status is not None else None
    if p is None or p.state is None:
        return powerstate.PowerStatus(), desired
    return powerstate.PowerStatus(p.state, p.since, p.reason or "", p.boots or 0, p.error), desired


def status_content(out: twin.TwinOutput, measured_w: float | None, source: str, trend: float,
                   decision: CapDecision | None = None, power: PowerStatusModel | None = None) -> NodeTwinStatus:
    """The status the controller owns, without lastUpdated. Rounded: noise below it is not a change.
    The model of ``status_body``'s JSON form: one place says what the status holds."""
    return NodeTwinStatus.model_validate(status_body(
        out, measured_w, source, trend, dump(decision) if decision is not None else None,
        dump(power) if power is not None else None))


def status_body(out: twin.TwinOutput, measured_w: float | None, source: str, trend: float,
                decision: dict[str, Any] | None = None, power: dict[str, Any] | None = None) -> dict[str, Any]:
    """The status the controller owns as plain data (``decision`` and ``power``: their JSON forms), to
    compare with the held status. With readings moving, nearly every node's status is built every
    tick only to be compared and then dropped (about 2 in 10 are written): building its models and
    dumping them was two fifths of a tick at 10 000 Nodes. A write builds the model
    (``status_content``); ``status_body_test`` holds the two to the same JSON."""
    power_w, trend_w, headroom, cooling, psu, pue = measured_row(
        measured_w, trend, (out.headroom_score, out.cooling_stress_score, out.psu_stress_score, out.estimated_pue))
    measurement: dict[str, Any] = {"source": source}
    if power_w is not None:
        measurement["measuredNodePowerW"] = power_w
    measurement.update(
        cpuCappedPowerW=_r(out.cpu_capped_w), gpuCappedPowerW=_r(out.gpu_capped_w),
        nodeCappedPowerW=_r(out.node_capped_w), cpuTdpW=_r(out.cpu_tdp_w), gpuTdpW=_r(out.gpu_tdp_w),
        nodeTdpW=_r(out.node_tdp_w), powerTrendWPerMin=trend_w)
    body: dict[str, Any] = {
        "schedulableClass": out.schedulable_class,
        "powerMeasurement": measurement,
        "predictedPowerHeadroomScore": headroom,
        "predictedCoolingStressScore": cooling,
        "predictedPsuStressScore": psu,
        "effectiveCapState": {"cpuPct": _r(out.cpu_pct), "gpuPct": _r(out.gpu_pct)},
        "estimatedPUE": pue,
    }
    if decision is not None:
        body["capDecision"] = decision
    if power is not None:
        body["power"] = power
    return body


def measured_row(measured_w: float | None, trend: float,
                 scores: tuple[float, float, float, float]) -> MeasuredRow:
    """The measured values ``status_body`` writes for ``measured_w``, ``trend`` and the twin model's
    ``scores`` (``twin.scores``: headroom, cooling, PSU, PUE), rounded as written."""
    headroom, cooling, psu, pue = scores
    return (_r(measured_w) if measured_w is not None else None, _r(trend), _r(headroom), _r(cooling), _r(psu),
            _r(pue, 3))


def owned_status(existing: NodeTwinStatus | None) -> dict[str, Any]:
    if existing is None:
        return {}
    body = dump(existing)
    body.pop("controlStatus", None)
    body.pop("agent", None)  # owned by the liveness check (liveness.py), not by this write
    body.pop("lastUpdated", None)
    return body


def refresh_after_s(node: str, refresh_s: float) -> float:
    """The node's own refresh period: up to 25 % shorter than STATUS_REFRESH_INTERVAL, fixed per node
    name, so the refreshes of twins written together do not all land on one tick forever."""
    return refresh_s * (1.0 - 0.25 * (zlib.crc32(node.encode()) % 1000) / 1000.0)


def status_needs_write(desired: NodeTwinStatus, existing: NodeTwinStatus | None, now: datetime,
                       refresh_after: float, deadband_pct: float = 0.0, held: dict[str, Any] | None = None) -> bool:
    """Whether ``desired`` is worth a write over ``existing`` (``held``: ``owned_status(existing)``, when
    the caller already has it)."""
    held = owned_status(existing) if held is None else held
    return status_changed(dump(desired), held, deadband_pct) or refresh_due(existing, now, refresh_after)


def refresh_due(existing: NodeTwinStatus | None, now: datetime, refresh_after: float) -> bool:
    """Is the cluster's status older than the node's refresh period (or never written)?"""
    last = existing.last_updated if existing is not None else None
    return last is None or (now - last).total_seconds() >= refresh_after
