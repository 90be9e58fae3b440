"""Rows the plugin shows, computed from plain API objects. Pure: no I/O, time comes in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from joulie_api.names import ANNOTATION_ENERGY_RECEIPT
from joulie_api.powerreason import cause
from joulie_api.quantity import QuantityError, parse_quantity
from joulie_api.receipt import EnergyReceipt, ReceiptFormatError, ReceiptTotal, parse_annotation, roll_up

ANNOTATION_WORKLOAD_CLASS: Final = "joulie.io/workload-class"
GPU_RESOURCES: Final = ("nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915")
# Same threshold as the extender's default: an older twin is not acted on.
STALE_AFTER: Final = timedelta(minutes=5)

def quantity(value: object) -> float:
    """A Kubernetes quantity as a float; 0 for anything unreadable (display only)."""
    try:
        return parse_quantity(value)
    except QuantityError:
        return 0.0


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def workload_class(pod: Mapping[str, Any]) -> str:
    value = _get(pod, "metadata", "annotations", ANNOTATION_WORKLOAD_CLASS)
    return value if isinstance(value, str) and value else "standard"


@dataclass
class Requests:
    cpu_cores: float = 0.0
    memory_bytes: float = 0.0
    gpus: float = 0.0
    pods: int = 0
    performance_pods: int = 0


def pod_requests(pod: Mapping[str, Any]) -> tuple[float, float, float]:
    """Summed container requests: cores, bytes, GPUs."""
    cpu = mem = gpu = 0.0
    for c in _get(pod, "spec", "containers") or []:
        req = _get(c, "resources", "requests") or {}
        if not isinstance(req, Mapping):
            continue
        cpu += quantity(req.get("cpu"))
        mem += quantity(req.get("memory"))
        gpu += sum(quantity(req.get(k)) for k in GPU_RESOURCES)
    return cpu, mem, gpu


def requests_by_node(pods: Iterable[Mapping[str, Any]]) -> dict[str, Requests]:
    out: dict[str, Requests] = {}
    for pod in pods:
        node = _get(pod, "spec", "nodeName")
        if not node or _get(pod, "status", "phase") in ("Succeeded", "Failed"):
            continue
        r = out.setdefault(node, Requests())
        cpu, mem, gpu = pod_requests(pod)
        r.cpu_cores += cpu
        r.memory_bytes += mem
        r.gpus += gpu
        r.pods += 1
        r.performance_pods += workload_class(pod) == "performance"
    return out


@dataclass
class NodeRow:
    """One node as `status` shows it. Percentages 0..100, watts, None when unknown."""

    node: str
    profile: str = "-"
    schedulable_class: str = "unknown"
    measured_w: float | None = None
    capped_w: float | None = None
    tdp_w: float | None = None
    headroom_pct: float | None = None
    cooling_pct: float | None = None
    psu_pct: float | None = None
    cpu_cap: str = "-"
    gpu_cap: str = "-"
    cpu_control: str = "-"
    gpu_control: str = "-"
    cpu_req_pct: float | None = None
    mem_req_pct: float | None = None
    gpu_req_pct: float | None = None
    gpu_count: int = 0
    pods: int = 0
    performance_pods: int = 0
    last_updated: datetime | None = None
    stale: bool = True
    hardware: str = "-"
    raw_twin: Mapping[str, Any] = field(default_factory=dict)
    raw_hardware: Mapping[str, Any] = field(default_factory=dict)
    decision: list[tuple[str, str]] = field(default_factory=list)
    """The work-aware policy's explanation (NodeTwin status.capDecision), as (label, text) lines."""
    power_state: str = "-"
    """NodeTwin status.power.state (on, suspending, off, resuming, failed); "-" without a power policy."""
    power_since: datetime | None = None
    power: list[tuple[str, str]] = field(default_factory=list)
    """The power policy's status.power as (label, text) lines: state and since, reason, boots, BMC error."""
    gpu_lock: str = "-"
    """spec.gpu.clockLock: "1500 MHz" or "70% of max"; "-" without one."""
    gpu_lock_control: str = "-"
    """controlStatus.gpu.clockLock as the boards read it back, e.g. "applied, held at 1500 MHz: …"."""


def power_lines(power: Any, now: datetime) -> list[tuple[str, str]]:
    """status.power as `node` shows it."""
    if not isinstance(power, Mapping) or not power.get("state"):
        return []
    since = _time(power.get("since"))
    state = str(power["state"])
    out = [("Power state", state + (f" since {since.isoformat()}" if since is not None else ""))]
    if power.get("reason"):
        out.append(("Power reason", str(power["reason"])))
        out.append(("Why", cause(str(power["reason"]))))
    if _num(power.get("boots")) is not None:
        out.append(("Boots (resumes)", f"{_num(power.get('boots')):g}"))
    if power.get("error"):
        out.append(("BMC error", str(power["error"])))
    return out


def decision_lines(decision: Any) -> list[tuple[str, str]]:
    """status.capDecision as `node` shows it: the reason, the slowdown budget, then per device the cap,
    the Pod that bound it and the predicted slowdown and saving."""
    if not isinstance(decision, Mapping) or not decision:
        return []
    out = [("Cap decision", str(decision.get("reason") or "-"))]
    tau = _num(decision.get("slowdownBudgetPct"))
    if tau is not None:
        out.append(("Slowdown budget", f"{tau:g} %"))
    for dev in ("gpu", "cpu"):
        d = decision.get(dev)
        if not isinstance(d, Mapping):
            continue
        cap, sd, save = _num(d.get("capPctOfMax")), _num(d.get("predictedSlowdownPct")), _num(d.get("predictedEnergySavingPct"))
        text = f"{cap:g} % of max" if cap is not None else "-"
        if sd is not None and save is not None:
            text += f", driven by {d.get('drivenBy') or '?'}: predicted +{sd:g} % time, -{save:g} % energy per work"
        elif d.get("drivenBy"):
            text += f", uncapped: {d.get('drivenBy')}"
        out.append((f"{dev.upper()} decision", text))
    return out


def _cap(spec_part: Any, watts_key: str, pct_key: str, effective_pct: float | None) -> str:
    watts, pct = _num(_get(spec_part, watts_key)), _num(_get(spec_part, pct_key))
    if watts is not None:
        return f"{watts:.0f} W"
    if pct is not None:
        return f"{pct:.0f}%"
    return f"{effective_pct:.0f}%" if effective_pct is not None else "-"


def _gpu_cap(twin: Any, st: Any) -> str:
    """The GPU cap, and the SM clock lock beside it ("400 W, lock 1500 MHz")."""
    cap = _cap(_get(twin, "spec", "gpu", "powerCap"), "capWattsPerGpu", "capPctOfMax",
               _num(_get(st, "effectiveCapState", "gpuPct")))
    lock = _locks_text(twin)
    return cap if lock == "-" else f"{cap}, lock {lock}"


def _control(status: Any, agent_lost: bool = False) -> str:
    """What the agent reports, e.g. "applied (rapl)"; "+ drift" when it found the cap lost and
    re-applied it; "agent-lost" when the controller manager has not heard from it (issue 23)."""
    if agent_lost:
        return "agent-lost"
    result = _get(status, "result")
    backend = _get(status, "backend")
    if not result and not backend:
        return "-"
    return f"{result or '?'} ({backend or '?'})" + (" + drift" if _get(status, "drift") else "")


def _locks_text(twin: Any) -> str:
    """spec.gpu.clockLock and each spec.gpu.clockLocks entry ("70% of max; 62.5% of max on GPUs 0,1")."""
    parts = [lock_text(_get(twin, "spec", "gpu", "clockLock"))]
    entries = _get(twin, "spec", "gpu", "clockLocks")
    for e in entries if isinstance(entries, list) else []:
        gpus = _get(e, "gpus")
        where = ",".join(str(g) for g in gpus) if isinstance(gpus, list) else "?"
        parts.append(f"{lock_text(e)} on GPUs {where}")
    return "; ".join(p for p in parts if p != "-") or "-"


def lock_text(lock: Any) -> str:
    """spec.gpu.clockLock as `status` and `node` show it."""
    mhz, pct = _num(_get(lock, "maxMhz")), _num(_get(lock, "pctOfMax"))
    if mhz is not None:
        return f"{mhz:.0f} MHz"
    return f"{pct:g}% of max" if pct is not None else "-"


def lock_control(status: Any, agent_lost: bool = False) -> str:
    """controlStatus.gpu.clockLock: the result, the ceiling the boards report holding, the drift the
    agent found and re-applied, and the agent's message."""
    if agent_lost:
        return "agent-lost"
    result = _get(status, "result")
    if not result:
        return "-"
    held = _num(_get(status, "lockedMaxMhz"))
    text = str(result) + (f", held at {held:.0f} MHz" if held is not None else "")
    if _get(status, "drift"):
        text += f" + drift ({_get(status, 'drift')})"
    return text + (f": {_get(status, 'message')}" if _get(status, "message") else "")


def _pct(used: float, total: float) -> float | None:
    return used / total * 100.0 if total > 0 else None


def node_rows(
    twins: Iterable[Mapping[str, Any]],
    hardware: Iterable[Mapping[str, Any]],
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    now: datetime,
) -> list[NodeRow]:
    """One row per NodeTwin, keyed by spec.nodeName, sorted by node name."""
    hw_by_node = {str(_get(h, "spec", "nodeName")): h for h in hardware}
    alloc_by_node = {str(_get(n, "metadata", "name")): _get(n, "status", "allocatable") or {} for n in nodes}
    reqs = requests_by_node(pods)
    rows = []
    for twin in twins:
        node = str(_get(twin, "spec", "nodeName") or _get(twin, "metadata", "name"))
        st = _get(twin, "status") or {}
        pm = _get(st, "powerMeasurement") or {}
        hw = hw_by_node.get(node, {})
        alloc = alloc_by_node.get(node, {})
        r = reqs.get(node, Requests())
        draining = bool(_get(twin, "spec", "scheduling", "draining"))
        lost = _get(st, "agent", "state") == "agent-lost"
        updated = _time(_get(st, "lastUpdated"))
        gpu_alloc = sum(quantity(alloc.get(k)) for k in GPU_RESOURCES)
        gpu_count = int(_num(_get(hw, "status", "gpu", "count")) or gpu_alloc)
        cpu_model = _get(hw, "status", "cpu", "model") or _get(hw, "status", "cpu", "rawModel") or "?"
        gpu_model = _get(hw, "status", "gpu", "model") or _get(hw, "status", "gpu", "rawModel")
        rows.append(NodeRow(
            node=node,
            profile=str(_get(twin, "spec", "profile") or "-"),
            schedulable_class="draining" if draining else str(_get(st, "schedulableClass") or "unknown"),
            measured_w=_num(pm.get("measuredNodePowerW")),
            capped_w=_num(pm.get("nodeCappedPowerW")),
            tdp_w=_num(pm.get("nodeTdpW")),
            headroom_pct=_num(_get(st, "predictedPowerHeadroomScore")),
            cooling_pct=_num(_get(st, "predictedCoolingStressScore")),
            psu_pct=_num(_get(st, "predictedPsuStressScore")),
            cpu_cap=_cap(_get(twin, "spec", "cpu"), "packagePowerCapWatts", "packagePowerCapPctOfMax",
                         _num(_get(st, "effectiveCapState", "cpuPct"))),
            gpu_cap=_gpu_cap(twin, st) if gpu_count else "-",
            cpu_control=_control(_get(st, "controlStatus", "cpu"), lost),
            gpu_control=_control(_get(st, "controlStatus", "gpu"), lost) if gpu_count else "-",
            cpu_req_pct=_pct(r.cpu_cores, quantity(alloc.get("cpu"))),
            mem_req_pct=_pct(r.memory_bytes, quantity(alloc.get("memory"))),
            gpu_req_pct=_pct(r.gpus, gpu_alloc) if gpu_count else None,
            gpu_count=gpu_count,
            pods=r.pods,
            performance_pods=r.performance_pods,
            last_updated=updated,
            stale=updated is None or now - updated > STALE_AFTER,
            hardware=f"{cpu_model}" + (f" + {gpu_count}x {gpu_model or 'GPU'}" if gpu_count else "") if hw else "-",
            raw_twin=twin,
            raw_hardware=hw,
            decision=decision_lines(_get(st, "capDecision")),
            power_state=str(_get(st, "power", "state") or "-"),
            power_since=_time(_get(st, "power", "since")),
            power=power_lines(_get(st, "power"), now),
            gpu_lock=lock_text(_get(twin, "spec", "gpu", "clockLock")),
            gpu_lock_control=lock_control(_get(st, "controlStatus", "gpu", "clockLock"), lost),
        ))
    return sorted(rows, key=lambda row: row.node)


@dataclass(frozen=True)
class Summary:
    nodes: int
    by_class: dict[str, int]
    measured_w: float
    capped_w: float
    avg_headroom_pct: float | None
    avg_cooling_pct: float | None
    peak_cooling: tuple[str, float] | None
    avg_psu_pct: float | None
    stale: int
    running_pods: int


def _avg(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(rows: list[NodeRow], pods: Iterable[Mapping[str, Any]]) -> Summary:
    by_class = {c: 0 for c in ("eco", "performance", "draining", "unknown")}
    for row in rows:
        by_class[row.schedulable_class if row.schedulable_class in by_class else "unknown"] += 1
    cooling = [(r.node, r.cooling_pct) for r in rows if r.cooling_pct is not None]
    running = sum(1 for p in pods if _get(p, "spec", "nodeName") and _get(p, "status", "phase") == "Running")
    return Summary(
        nodes=len(rows),
        by_class=by_class,
        measured_w=sum(r.measured_w or 0.0 for r in rows),
        capped_w=sum(r.capped_w or 0.0 for r in rows),
        avg_headroom_pct=_avg([max(r.headroom_pct, 0.0) for r in rows if r.headroom_pct is not None]),
        avg_cooling_pct=_avg([c for _, c in cooling]),
        peak_cooling=max(cooling, key=lambda nc: nc[1]) if cooling else None,
        avg_psu_pct=_avg([r.psu_pct for r in rows if r.psu_pct is not None]),
        stale=sum(r.stale for r in rows),
        running_pods=running,
    )


@dataclass(frozen=True)
class PodRow:
    namespace: str
    name: str
    workload_class: str
    node: str
    node_class: str
    phase: str
    misplaced: bool


def pod_rows(pods: Iterable[Mapping[str, Any]], rows: list[NodeRow]) -> list[PodRow]:
    """Pods with a workload class or on a Joulie node; `misplaced`: a performance pod on eco/draining."""
    node_class = {r.node: r.schedulable_class for r in rows}
    out = []
    for pod in pods:
        node = str(_get(pod, "spec", "nodeName") or "")
        cls = workload_class(pod)
        ncls = node_class.get(node, "-") if node else "-"
        if ncls == "-" and _get(pod, "metadata", "annotations", ANNOTATION_WORKLOAD_CLASS) is None:
            continue
        out.append(PodRow(
            namespace=str(_get(pod, "metadata", "namespace") or ""),
            name=str(_get(pod, "metadata", "name") or ""),
            workload_class=cls,
            node=node or "<pending>",
            node_class=ncls,
            phase=str(_get(pod, "status", "phase") or "-"),
            misplaced=cls == "performance" and ncls in ("eco", "draining"),
        ))
    return sorted(out, key=lambda p: (p.workload_class, p.node, p.namespace, p.name))


@dataclass(frozen=True)
class ReceiptRow:
    """One Pod's energy receipt (``joulie.io/energy-receipt``), or why it cannot be read."""

    namespace: str
    name: str
    receipt: EnergyReceipt | None
    problem: str = ""


def receipt_rows(pods: Iterable[Mapping[str, Any]]) -> list[ReceiptRow]:
    """The Pods that carry a receipt, by namespace and name; a malformed one with its problem."""
    out = []
    for pod in pods:
        raw = _get(pod, "metadata", "annotations", ANNOTATION_ENERGY_RECEIPT)
        if raw is None:
            continue
        ns, name = str(_get(pod, "metadata", "namespace") or ""), str(_get(pod, "metadata", "name") or "")
        try:
            out.append(ReceiptRow(ns, name, parse_annotation(str(raw))))
        except ReceiptFormatError as exc:
            out.append(ReceiptRow(ns, name, None, f"{ANNOTATION_ENERGY_RECEIPT}: {exc}"))
    return sorted(out, key=lambda r: (r.namespace, r.name))


def receipt_totals(rows: Iterable[ReceiptRow]) -> tuple[dict[str, ReceiptTotal], ReceiptTotal]:
    """Per-namespace totals and the cluster's (over the rows given: one namespace, or all)."""
    return roll_up((row.namespace, row.receipt) for row in rows if row.receipt is not None)


def receipt_json(row: ReceiptRow) -> dict[str, Any]:
    """One receipt as ``-o json`` prints it: the Pod and its annotation's fields."""
    r = row.receipt
    if r is None:
        return {"namespace": row.namespace, "name": row.name, "problem": row.problem}
    return {"namespace": row.namespace, "name": row.name, "node": r.node, "state": r.state, "heldS": r.held_s,
            "energyJ": {**r.energy_j, "total": r.total_j}, "savedJ": r.saved_j, "savedRangeJ": list(r.saved_range_j),
            "addedS": r.added_s, "method": r.method, "updated": r.updated}


@dataclass(frozen=True)
class JobRow:
    """One GPU Pod's decision as the controller wrote it (NodeTwin status.capDecision.pods)."""

    node: str
    pod: str
    lever: str
    compute_share: float | None
    draw: float | None
    observations: int
    predicted_slowdown_pct: float | None
    budget_pct: float | None
    budget_source: str
    setting: str
    """What the lever is on the node: the GPU cap and clock lock the spec holds."""
    realised_slowdown_pct: float | None = None
    """How much longer its work has taken so far than at the reference limit, from its boards' measured
    SM clock (the controller's figure; None before a measured clock)."""
    realised_low_pct: float | None = None
    realised_high_pct: float | None = None
    realised_s: float | None = None
    """The run time the realised figure covers."""


def job_rows(twins: Iterable[Mapping[str, Any]]) -> list[JobRow]:
    """Every Pod decision in the twins, by node then Pod."""
    out = []
    for twin in twins:
        node = str(_get(twin, "spec", "nodeName") or _get(twin, "metadata", "name") or "")
        decision = _get(twin, "status", "capDecision")
        pods = _get(decision, "pods")
        if not isinstance(pods, list):
            continue
        cap = _num(_get(twin, "spec", "gpu", "powerCap", "capPctOfMax"))
        lock = _locks_text(twin)
        setting = ", ".join(p for p in ((f"cap {cap:g}% of max" if cap is not None else ""),
                                        (f"lock {lock}" if lock != "-" else "")) if p) or "-"
        for p in pods:
            if not isinstance(p, Mapping):
                continue
            obs = _num(p.get("observations"))
            out.append(JobRow(
                node=node, pod=str(p.get("pod") or "-"), lever=str(p.get("lever") or "-"),
                compute_share=_num(p.get("estimatedComputeShare")), draw=_num(p.get("estimatedDraw")),
                observations=int(obs) if obs is not None else 0,
                predicted_slowdown_pct=_num(p.get("predictedSlowdownPct")), budget_pct=_num(p.get("budgetPct")),
                budget_source=str(p.get("budgetSource") or "-"), setting=setting,
                realised_slowdown_pct=_num(p.get("realisedSlowdownPct")),
                realised_low_pct=_num(p.get("realisedSlowdownLowPct")),
                realised_high_pct=_num(p.get("realisedSlowdownHighPct")), realised_s=_num(p.get("realisedSeconds")),
            ))
    return sorted(out, key=lambda r: (r.node, r.pod))
