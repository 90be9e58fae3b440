"""The work-aware policy's GPU decision per node: the lever (``model.lever.choose_gpu_lever``) over the
Pods' own estimates and budgets, a one-tick probe where an estimate is too uncertain, and what each
Pod is told (``PodDecision``, status.capDecision.pods). Pure: no I/O.

A probe is a lock at a second clock ratio for one tick, so the estimator sees the Pod at two ratios
and its compute share stops resting on the model's DRAM constants (``jobestimate``). It is asked only
by a Pod already seen once whose estimate is still uncertain, at the shallowest ratio every asking Pod's
budget covers at its pessimistic compute share (``probe_request``), and only when every other Pod on
the boards stays within its own budget at that lock too. A lever that already locks the clock by
TWO_POINT_MIN_GAP or more shows the Pods a second ratio by itself: no probe then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from joulie_controller.model.capmodel import CapChoice, Work, over_budget, worst_slowdown
from joulie_controller.model.fsm import PodInfo, pod_key
from joulie_controller.model.jobestimate import TWO_POINT_MIN_GAP, JobEstimate, probe_request
from joulie_controller.model.lever import choose_gpu_lever, evaluate_locked
from joulie_controller.model.slowdownbudget import SOURCE_CLUSTER, SlowdownBudget
from joulie_controller.policies.plan import PodDecision


@dataclass(frozen=True)
class PodContext:
    """What the policy knows of each Pod beyond its metadata, by "namespace/name"."""

    estimates: Mapping[str, JobEstimate] = field(default_factory=dict)
    budgets: Mapping[str, SlowdownBudget] = field(default_factory=dict)

    def estimate(self, pod: PodInfo) -> JobEstimate | None:
        """The Pod's estimate when telemetry has moved it (else the policy keeps the kind's prior)."""
        est = self.estimates.get(pod_key(pod))
        return est if est is not None and est.observations > 0 else None

    def tau(self, pod: PodInfo) -> float | None:
        b = self.budgets.get(pod_key(pod))
        return b.tau if b is not None else None


def _probe(
    works: Sequence[Work],
    pods: Sequence[PodInfo],
    ctx: PodContext,
    max_w: float,
    ref_w: float,
    tau: float,
    choice: CapChoice,
    cap_pct: float | None = None,
) -> CapChoice | None:
    """A one-tick lock at a second clock ratio (see the module), or None; under the node's cap when
    ``cap_pct`` fixes one."""
    if choice.lock_pct is not None and choice.lock_pct <= (1.0 - TWO_POINT_MIN_GAP) * 100.0 + 1e-9:
        return None
    asked = []
    for w, p in zip(works, pods, strict=True):
        est = ctx.estimate(p)
        if est is None or w.kind == "performance":
            continue
        req = probe_request(est, w.tau if w.tau is not None else tau)
        if req is not None:
            asked.append(req)
    if not asked:
        return None
    ratio = max(r.clock_ratio for r in asked)
    ref_pct = round(ref_w / max_w * 100.0, 1)
    capped = cap_pct is not None and cap_pct < ref_pct - 1e-9
    pct = cap_pct if cap_pct is not None and capped else ref_pct
    base = evaluate_locked(works, max_w, ref_w, 1.0)
    at = evaluate_locked(works, max_w, max_w * pct / 100.0 if capped else ref_w, ratio)
    if over_budget(works, base, at, tau):
        return None
    sd, _ = worst_slowdown(works, base, at)
    slowdowns = tuple(a / max(b, 1e-9) - 1.0 for a, b in zip(base.speeds, at.speeds, strict=True))
    return CapChoice(
        pct,
        max(0.0, sd),
        0.0,
        f"probe at {ratio * 100:g} % clock for one tick: {asked[0].reason}",
        capped=capped,
        lock_pct=round(ratio * 100.0, 1),
        slowdowns=slowdowns,
    )


def gpu_decision(
    works: Sequence[Work],
    pods: Sequence[PodInfo],
    ctx: PodContext,
    max_w: float,
    min_w: float,
    other_w: float,
    tau: float,
    ref_w: float,
    current_lock_pct: float | None = None,
    cap_pct: float | None = None,
) -> tuple[CapChoice, str, tuple[PodDecision, ...]]:
    """The GPU group's choice, its lever (none, cap, lock, cap+lock, probe) and each Pod's decision
    (``works[i]`` is ``pods[i]``'s work). ``cap_pct``: the node's cap, fixed (one group of boards among
    several: only the group's lock is chosen)."""
    choice = choose_gpu_lever(
        works, max_w, min_w, other_w, tau, ref_w, current_lock_pct=current_lock_pct, cap_pct=cap_pct
    )
    lever = choice.lever
    probe = _probe(works, pods, ctx, max_w, min(max_w, ref_w) if ref_w > 0 else max_w, tau, choice, cap_pct)
    if probe is not None:
        choice, lever = probe, "probe"
    decisions = []
    for i, (w, p) in enumerate(zip(works, pods, strict=True)):
        est = ctx.estimate(p)
        budget = ctx.budgets.get(pod_key(p))
        sd = choice.slowdowns[i] if i < len(choice.slowdowns) else 0.0
        decisions.append(
            PodDecision(
                pod=pod_key(p),
                lever=lever if lever != "none" else "none",
                compute_share=w.prior.compute_share,
                draw=w.prior.natural_draw,
                observations=est.observations if est is not None else 0,
                predicted_slowdown_pct=round(max(0.0, sd) * 100.0, 2),
                budget_pct=round((w.tau if w.tau is not None else tau) * 100.0, 2),
                budget_source=budget.source if budget is not None else SOURCE_CLUSTER,
            )
        )
    return choice, lever, tuple(decisions)
