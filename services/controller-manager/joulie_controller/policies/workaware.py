"""Policy work_aware_v1: caps chosen from the work on each node, and a power budget that binds only
when measured power would exceed it. Pure: no I/O.

- Labels: performance for every node the policy leaves uncapped (so performance Pods, which never
  run on eco nodes, find room wherever no cap is in force), for nodes running performance Pods,
  for queue_aware_v1's set (at least one per hardware family, so a performance Pod always has
  somewhere to go), and for a capped node released because a pending performance Pod fits on no
  performance node (as cluster-autoscaler scales up for unschedulable Pods: by their requests,
  nodeSelector, required affinity and taints; only Pods our scheduler marked unschedulable);
  eco for the nodes it caps. Performance nodes are never capped.
- Caps on an eco node, per device group (its GPUs; its CPU packages): the cap with the lowest node
  energy per unit of work whose predicted slowdown stays within τ
  (WORK_AWARE_SLOWDOWN_BUDGET_PCT) for every Pod on the group (``capmodel.choose_cap``).
  Performance-class Pods, compute-bound kinds and Pods naming no kind keep their device uncapped;
  a device with no work on it is left uncapped (a cap on an idle device saves nothing, and the
  next Pod would start under a cap chosen for no one).
- Trust (TRUSTED_NAMESPACES): a Pod's class and kind count only in the namespaces an operator
  lists; any other Pod is general work of no kind (issue 36: any tenant could switch capping off).
- Budget (CLUSTER_POWER_BUDGET_W > 0): the measured cluster power plus its trend over
  WORK_AWARE_FORECAST_HORIZON, against the budget. The watts to shed are an integral of the
  excess, not the excess of one tick: shed(k+1) = max(0, shed(k) + BUDGET_GAIN · (forecast(k) -
  budget)). Measured power already has the caps in force taken off, so a policy that shed only
  this tick's excess released its caps as soon as they worked and lowered them again when power
  came back (the 200-node run flipped the GPU caps between 50 % and 79 % four times in 20
  minutes). Caps on eco nodes go down in steps until the predicted saving reaches the shed, each
  time where the model predicts the least slowdown per watt saved, past τ, down to
  CLUSTER_BUDGET_MIN_CAP_PCT. Work of no known kind is lowered too (the budget binds it like the
  rest); only declared compute-bound and performance work is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from joulie_api.names import PROFILE_PERFORMANCE
from joulie_controller.model import capmodel
from joulie_controller.model.capmodel import COMPUTE_BOUND, HOST_FEED, KIND_PRIORS, CapChoice, KindPrior, Work
from joulie_controller.model.fit import admits
from joulie_controller.model.fsm import PodInfo, excludes_eco, is_running, pod_key, tenant_view
from joulie_controller.model.hardware import HardwareView
from joulie_controller.model.lever import evaluate_per_work
from joulie_controller.model.slowdownbudget import pod_budget
from joulie_controller.policies.boardlocks import GpuGroups, GpuPlan, gpu_plan
from joulie_controller.policies.joblever import PodContext
from joulie_controller.policies.plan import (
    BoardLock,
    NodeCaps,
    PolicyInput,
    PolicyNode,
    PolicyPlan,
    performance_set,
)
from joulie_controller.policies.queueaware import queue_aware_count
from joulie_controller.settings import Settings

WORK_AWARE = "work-aware-v1"
BUDGET_STEP_PCT = 5.0
BUDGET_GAIN = 0.5
"""Of the excess over the budget, the share added to the shed each tick. Below 1 because measured
power shows a cap change a tick or two late (the agent applies it, then the rate window fills):
an integral with delay d stays stable below 2·sin(π / (2(2d + 1))), 0.62 for d = 2."""


@dataclass(frozen=True)
class Group:
    """One device group of a node and the work on it."""

    device: str
    works: tuple[Work, ...]
    max_w: float
    min_w: float
    devices: int
    ref_w: float
    """The limit "uncapped" means: a GPU's default limit (0 = its maximum), a CPU package's maximum."""


def _gpu_work(pod: PodInfo, ctx: PodContext) -> Work:
    """The Pod's GPU work: its estimate from telemetry once it has one (measured, so believed for any
    tenant), else its kind's prior; performance Pods and unknown kinds without an estimate are
    compute-bound (left fast)."""
    kind = pod.workload_kind
    prior = KIND_PRIORS.get(kind)
    tau = ctx.tau(pod)
    if excludes_eco(pod):
        return Work(pod.name, "performance", COMPUTE_BOUND, float(pod.gpu_request), tau)
    est = ctx.estimate(pod)
    if est is not None:
        return Work(pod.name, kind, KindPrior("gpu", est.c, est.u), float(pod.gpu_request), tau)
    if prior is None or prior.device != "gpu":
        return Work(pod.name, kind, COMPUTE_BOUND, float(pod.gpu_request), tau)
    return Work(pod.name, kind, prior, float(pod.gpu_request), tau)


def _cpu_work(pod: PodInfo, cores: int, ctx: PodContext) -> Work:
    kind = pod.workload_kind
    share = pod.cpu_request / cores if cores > 0 else 0.0
    tau = ctx.tau(pod)
    if excludes_eco(pod):
        return Work(pod.name, "performance", COMPUTE_BOUND, share, tau)
    prior = KIND_PRIORS.get(kind)
    if (prior is not None and prior.device == "gpu") or (prior is None and ctx.estimate(pod) is not None):
        return Work(pod.name, kind, HOST_FEED, share, tau)
    if prior is None:
        return Work(pod.name, kind, COMPUTE_BOUND, share, tau)
    return Work(pod.name, kind, prior, share, tau)


def groups(hw: HardwareView, pods: Sequence[PodInfo], ctx: PodContext | None = None) -> dict[str, Group]:
    """The node's device groups with the running Pods on each (a GPU Pod also uses the CPU: host feed)."""
    ctx = ctx or PodContext()
    out: dict[str, Group] = {}
    if hw.gpu_count > 0 and hw.gpu_max_w > 0:
        works = tuple(_gpu_work(p, ctx) for p in pods if p.gpu_request > 0)
        out["gpu"] = Group("gpu", works, hw.gpu_max_w, hw.gpu_min_w, hw.gpu_count, hw.gpu_default_w or hw.gpu_max_w)
    if hw.cpu_max_w_per_socket > 0:
        works = tuple(_cpu_work(p, hw.cpu_cores, ctx) for p in pods if p.cpu_request > 0)
        out["cpu"] = Group("cpu", works, hw.cpu_max_w_per_socket, hw.cpu_min_w_per_socket, max(1, hw.cpu_sockets),
                           hw.cpu_max_w_per_socket)
    return out


def _rest_w(g: Group, all_groups: dict[str, Group], measured_w: float | None) -> float:
    """The rest of the node's power beside the group: measured node power minus the model's uncapped
    draw of the group, else the other groups' idle draw."""
    own = capmodel.evaluate(g.device, g.works, g.max_w, g.ref_w, g.devices).power_w
    if measured_w is not None:
        return max(0.0, measured_w - own)
    rest = 0.0
    for k, o in all_groups.items():
        if k != g.device:
            model = capmodel.GPU_MODEL if k == "gpu" else capmodel.CPU_MODEL
            rest += model.idle_frac * o.max_w * o.devices
    return rest


def _other_w(g: Group, all_groups: dict[str, Group], measured_w: float | None) -> float:
    """The part of the rest of the node's power the group's work answers for while it runs, in
    proportion to how much of the group the work occupies (one job on one of eight boards does not
    answer for the whole node's platform power)."""
    used = sum(w.share for w in g.works)
    occupied = used / g.devices if g.device == "gpu" else used
    return _rest_w(g, all_groups, measured_w) * min(1.0, max(0.0, occupied))


def node_caps(node: PolicyNode, pods: Sequence[PodInfo], measured_w: float | None, tau: float,
              ctx: PodContext | None = None, boards: Mapping[tuple[str, str], tuple[int, ...]] | None = None,
              current: Mapping[int, float] | None = None) -> NodeCaps:
    """The caps (and GPU clock locks) for one eco node from the work on it, with the reason: the GPUs
    by ``boardlocks.gpu_plan`` (one cap, a lock per group of boards), the CPUs by ``choose_cap`` (caps
    only). ``boards``: each Pod's boards by (node, Pod); ``current``: the controller's locks in force, by board."""
    ctx = ctx or PodContext()
    gs = groups(node.hardware, pods, ctx)
    choices: dict[str, CapChoice] = {}
    gpu: GpuPlan | None = None
    for key, g in gs.items():
        if key == "gpu":
            gpu_pods = [p for p in pods if p.gpu_request > 0]
            where = GpuGroups(g.max_w, g.min_w, g.ref_w, g.devices, _rest_w(g, gs, measured_w))
            gpu = gpu_plan(g.works, gpu_pods, ctx, where, tau, boards or {}, current or {}, node.name)
            choices[key] = gpu.choice
        else:
            other_w = _other_w(g, gs, measured_w)
            choices[key] = capmodel.choose_cap(g.device, g.works, g.max_w, g.min_w, other_w, tau, g.devices, g.ref_w)
    if gpu is None:
        return _caps_from(choices)
    caps = _caps_from(choices, probe=gpu.lever == "probe", locks=gpu.locks)
    return replace(caps, pods=gpu.decisions, gpu_locks=gpu.locks, gpu_work_locks=gpu.work_locks)


def _boards(locks: Sequence[BoardLock]) -> str:
    return ", ".join(f"boards {','.join(map(str, b.gpus))} at {b.pct_of_max:g} %" for b in locks)


def _caps_from(choices: dict[str, CapChoice], prefix: str = "", probe: bool = False,
               locks: Sequence[BoardLock] = ()) -> NodeCaps:
    parts = []
    for key in ("gpu", "cpu"):
        c = choices.get(key)
        if c is None:
            continue
        if probe:
            parts.append(f"{key} {c.driver}: predicted +{c.predicted_slowdown * 100:.1f} % time")
        elif c.lock_pct is not None:
            cap = f"cap {c.pct_of_max:g} % of max" if c.capped else f"uncapped ({c.pct_of_max:g} % of max)"
            where = f" ({_boards(locks)})" if key == "gpu" and locks else ""
            parts.append(f"{key} clock locked at {c.lock_pct:g} % of max{where}, {cap}, bound by {c.driver}: predicted "
                         f"+{c.predicted_slowdown * 100:.1f} % time, -{c.predicted_saving * 100:.1f} % energy per work")
        elif not c.capped:
            parts.append(f"{key} uncapped ({c.pct_of_max:g} % of max): {c.driver}")
        else:
            parts.append(f"{key} {c.pct_of_max:g} % of max, bound by {c.driver}: predicted "
                         f"+{c.predicted_slowdown * 100:.1f} % time, -{c.predicted_saving * 100:.1f} % energy per work")
    cpu, gpu = choices.get("cpu"), choices.get("gpu")
    return NodeCaps(
        cpu_pct=cpu.pct_of_max if cpu else 100.0,
        gpu_pct=gpu.pct_of_max if gpu else 100.0,
        reason=prefix + ("; ".join(parts) or "no capable device"),
        cpu_slowdown_pct=round(cpu.predicted_slowdown * 100, 2) if cpu else 0.0,
        gpu_slowdown_pct=round(gpu.predicted_slowdown * 100, 2) if gpu else 0.0,
        cpu_saving_pct=round(cpu.predicted_saving * 100, 2) if cpu else 0.0,
        gpu_saving_pct=round(gpu.predicted_saving * 100, 2) if gpu else 0.0,
        cpu_driver=cpu.driver if cpu else "",
        gpu_driver=gpu.driver if gpu else "",
        capped=any(c.capped or c.lock_pct is not None for c in choices.values()),
        cpu_capped=bool(cpu and cpu.capped),
        gpu_capped=bool(gpu and (gpu.capped or gpu.lock_pct is not None)),
    )


def uncapped(node: PolicyNode, why: str) -> NodeCaps:
    """A performance node's caps: every device at its reference limit (a GPU at its default)."""
    hw = node.hardware
    choices = {}
    if hw.gpu_count > 0 and hw.gpu_max_w > 0:
        ref = hw.gpu_default_w or hw.gpu_max_w
        choices["gpu"] = CapChoice(round(min(ref, hw.gpu_max_w) / hw.gpu_max_w * 100.0, 1), 0.0, 0.0, why)
    if hw.cpu_max_w_per_socket > 0:
        choices["cpu"] = CapChoice(100.0, 0.0, 0.0, why)
    return _caps_from(choices, "performance node: ")


def _free(node: PolicyNode, pods: Sequence[PodInfo]) -> tuple[float, float]:
    """(cores, GPUs) not requested by the running Pods (the capacity NodeHardware reports)."""
    return (node.hardware.cpu_cores - sum(p.cpu_request for p in pods),
            node.hardware.gpu_count - sum(p.gpu_request for p in pods))


def _waits_for_release(pod: PodInfo, s: Settings) -> bool:
    """A Pending performance Pod (never on eco) that our scheduler tried and gave up on (issue 36:
    a Pod never tried, or for a scheduler we do not serve, released a capped node at will)."""
    return (not pod.node_name and not pod.deleting and pod.phase == "Pending" and pod.unschedulable
            and pod.scheduler_name in s.scheduler_names and excludes_eco(pod))


def _lets_in(pod: PodInfo, node: PolicyNode, profile_label: str) -> bool:
    """The node's selector labels and taints let the Pod in, matched as the performance node it
    would be on release (its profile label set to performance)."""
    if node.info is None:
        return True
    return admits(pod, node.info, labels={**node.info.labels, profile_label: PROFILE_PERFORMANCE}) is None


def _released_for_pending(
    inp: PolicyInput, pods: Sequence[PodInfo], perf: set[str], by_node: dict[str, list[PodInfo]],
    caps: dict[str, NodeCaps]
) -> list[str]:
    """Capped nodes to give back to performance work: a pending performance Pod that fits on no
    performance node would otherwise wait for a cap chosen for someone else. Each such Pod takes the
    capped node it truly fits on (requests, nodeSelector, required affinity, taints) whose caps are
    predicted to save least."""
    pending = [p for p in pods if _waits_for_release(p, inp.settings)]
    if not pending:
        return []
    free = {n.name: _free(n, by_node.get(n.name, [])) for n in inp.nodes}
    node_of = {n.name: n for n in inp.nodes}
    label = inp.settings.nodes.profile_label
    released: list[str] = []
    for pod in sorted(pending, key=lambda p: (p.namespace, p.name)):
        need = (pod.cpu_request, pod.gpu_request)

        def fits(name: str, need: tuple[float, int] = need, pod: PodInfo = pod) -> bool:
            cpu, gpu = free[name]
            return cpu + 1e-9 >= need[0] and gpu >= need[1] and _lets_in(pod, node_of[name], label)

        home = next((name for name in sorted(perf) if fits(name)), None)
        if home is None:
            capped = sorted((n for n in free if n not in perf and n not in released and fits(n)),
                            key=lambda n: (caps[n].cpu_saving_pct + caps[n].gpu_saving_pct, n))
            if not capped:
                continue
            home = capped[0]
            released.append(home)
            perf.add(home)
        cpu, gpu = free[home]
        free[home] = (cpu - need[0], gpu - need[1])
    return released


def work_aware(inp: PolicyInput) -> PolicyPlan:
    s = inp.settings
    floor = performance_set(inp.nodes, queue_aware_count(len(inp.nodes), inp.performance_pods, s))
    # Only an operator's trusted namespaces speak for their Pods' class and kind (TRUSTED_NAMESPACES).
    pods_seen = tenant_view(inp.pods, s.trusted_namespaces)
    by_node: dict[str, list[PodInfo]] = {}
    for p in pods_seen:
        if is_running(p):
            by_node.setdefault(p.node_name, []).append(p)
    tau = max(0.0, s.policy.slowdown_budget_pct) / 100.0
    ctx = PodContext(inp.job_estimates, {
        pod_key(p): pod_budget(p, s.policy.slowdown_budget_pct, s.policy.slowdown_annotation_namespaces,
                               s.policy.max_slowdown_ceiling_pct) for p in pods_seen})
    caps: dict[str, NodeCaps] = {}
    perf = set(floor)
    candidates: set[str] = set()
    for n in inp.nodes:
        pods = by_node.get(n.name, [])
        if n.name in floor:
            perf.add(n.name)
            caps[n.name] = uncapped(n, "kept for performance Pods (at least one per hardware family)")
            continue
        if any(excludes_eco(p) for p in pods):
            perf.add(n.name)
            caps[n.name] = uncapped(n, "runs performance Pods")
            continue
        candidates.add(n.name)
        c = node_caps(n, pods, inp.measured_w.get(n.name), tau, ctx, inp.gpu_boards, inp.gpu_locks.get(n.name))
        caps[n.name] = c
        if not c.capped:
            perf.add(n.name)
    for name in _released_for_pending(inp, pods_seen, perf, by_node, caps):
        node = next(n for n in inp.nodes if n.name == name)
        caps[name] = uncapped(node, "released for a pending performance Pod that fits on no performance node")
        perf.add(name)
        candidates.discard(name)
    notes: list[str] = []
    shed_w = 0.0
    if s.policy.power_budget_w > 0:
        # A cap on a node whose agent is lost would be shed on paper only (issue 36: spec 50 % while the
        # hardware sat at 30 %, controlStatus still "applied"): the budget sheds on the others.
        unreachable = sorted(candidates & inp.agent_lost)
        if unreachable:
            notes.append(f"budget: not shed on {', '.join(unreachable)} (agent-lost: no agent applies a cap there)")
        candidates -= inp.agent_lost
        caps, lowered, shed_w, note = _within_budget(inp, candidates, by_node, caps, ctx)
        perf -= lowered
        if note:
            notes.append(note)
    return PolicyPlan(WORK_AWARE, frozenset(perf), node_caps=caps, notes=tuple(notes), budget_shed_w=shed_w)


def _at(g: Group, pct: float, caps: NodeCaps) -> capmodel.Outcome:
    """The group under a cap of ``pct`` % of max, and the GPU clock locks the node's caps hold."""
    if g.device == "gpu" and caps.gpu_locks:
        return evaluate_per_work(g.works, g.max_w, g.max_w * pct / 100.0, caps.gpu_work_locks)
    return capmodel.evaluate(g.device, g.works, g.max_w, g.max_w * pct / 100.0, g.devices)


def forecast_w(inp: PolicyInput) -> float:
    """Measured cluster power plus each node's trend over the forecast horizon, or over the time the
    trend has been seen when that is shorter (``PolicyInput.trend_span_s``)."""
    horizon_s = inp.settings.policy.forecast_horizon_s
    ahead = sum(slope * min(horizon_s, inp.trend_span_s.get(node, horizon_s)) / 60.0
                for node, slope in inp.trend_w_per_min.items())
    return sum(inp.measured_w.values()) + ahead


def _within_budget(
    inp: PolicyInput, candidates: set[str], by_node: dict[str, list[PodInfo]], caps: dict[str, NodeCaps],
    ctx: PodContext | None = None,
) -> tuple[dict[str, NodeCaps], set[str], float, str]:
    """Lower caps on the ``candidates`` (nodes without performance Pods, outside the floor), least
    predicted slowdown per watt first, until the predicted saving reaches the shed (the integral of
    the excess, see the module). Returns the caps, the nodes lowered (now eco), the shed for the
    next tick and a note."""
    s = inp.settings
    forecast = forecast_w(inp)
    excess = max(0.0, inp.budget_shed_w + BUDGET_GAIN * (forecast - s.policy.power_budget_w))
    if excess <= 0:
        note = (f"budget {s.policy.power_budget_w:.0f} W: forecast {forecast:.0f} W, caps released"
                if inp.budget_shed_w > 0 else "")
        return caps, set(), 0.0, note
    pct: dict[tuple[str, str], float] = {}
    gs: dict[str, dict[str, Group]] = {}
    refs: dict[tuple[str, str], capmodel.Outcome] = {}
    for n in inp.nodes:
        if n.name not in candidates:
            continue
        gs[n.name] = groups(n.hardware, by_node.get(n.name, []), ctx)
        for key, g in gs[n.name].items():
            # Declared compute-bound work is left alone; work of no (known) kind is not: unknown work
            # under a budget is capped like the rest (issue 36: a Pod naming no kind escaped the budget).
            if g.works and all(w.prior.compute_share < capmodel.COMPUTE_BOUND_SHARE or w.kind not in KIND_PRIORS
                               for w in g.works):
                pct[(n.name, key)] = caps[n.name].gpu_pct if key == "gpu" else caps[n.name].cpu_pct
                refs[(n.name, key)] = capmodel.evaluate(g.device, g.works, g.max_w, g.ref_w, g.devices)
    start = dict(pct)
    shed = 0.0
    floor = s.policy.budget_min_cap_pct
    while shed < excess:
        best: tuple[float, tuple[str, str], float, float] | None = None
        for where, cur in pct.items():
            g = gs[where[0]][where[1]]
            lowest = max(floor, g.min_w / g.max_w * 100.0)
            nxt = max(lowest, cur - BUDGET_STEP_PCT)
            if nxt >= cur - 1e-9:
                continue
            now = _at(g, cur, caps[where[0]])
            then = _at(g, nxt, caps[where[0]])
            saved = now.power_w - then.power_w
            while saved <= 1e-6 and nxt > lowest + 1e-9:  # a cap above a locked board's draw binds nothing yet
                nxt = max(lowest, nxt - BUDGET_STEP_PCT)
                then = _at(g, nxt, caps[where[0]])
                saved = now.power_w - then.power_w
            if saved <= 1e-6:
                continue
            lost = (capmodel.worst_slowdown(g.works, refs[where], then)[0]
                    - capmodel.worst_slowdown(g.works, refs[where], now)[0])
            if best is None or lost / saved < best[0]:
                best = (lost / saved, where, nxt, saved)
        if best is None:
            break
        _, where, nxt, saved = best
        pct[where] = nxt
        shed += saved
    out = dict(caps)
    lowered: set[str] = set()
    for (name, key), p in pct.items():
        if p >= start[(name, key)] - 1e-9:
            continue
        c = out[name]
        g = gs[name][key]
        ref, at = refs[(name, key)], _at(g, p, caps[name])
        sd = round(capmodel.worst_slowdown(g.works, ref, at)[0] * 100, 2)
        # Device energy per work only: the rest of the node is not known here.
        saving = round((1.0 - (at.power_w / at.rate(g.works)) / (ref.power_w / ref.rate(g.works))) * 100, 2)
        reason = f"{c.reason}; budget: {key} lowered to {p:g} % (predicted +{sd:.1f} % time)"
        out[name] = replace(c, gpu_pct=p, reason=reason, capped=True, gpu_capped=True, gpu_slowdown_pct=sd,
                            gpu_saving_pct=saving) if key == "gpu" else replace(
            c, cpu_pct=p, reason=reason, capped=True, cpu_capped=True, cpu_slowdown_pct=sd, cpu_saving_pct=saving)
        lowered.add(name)
    met = "met" if shed >= excess else f"not met ({excess - shed:.0f} W short at the {floor:g} % floor)"
    # Short of the shed at the floor: keep what the caps can do, so the integral does not wind up.
    kept = excess if shed >= excess else shed
    return out, lowered, kept, (f"budget {s.policy.power_budget_w:.0f} W: forecast {forecast:.0f} W, "
                                f"shed {excess:.0f} W (was {inp.budget_shed_w:.0f} W), {shed:.0f} W predicted by "
                                f"lowering caps: {met}")


class WorkAware:
    """POLICY_TYPE=work_aware_v1."""

    def plan(self, inp: PolicyInput) -> PolicyPlan:
        return work_aware(inp)
