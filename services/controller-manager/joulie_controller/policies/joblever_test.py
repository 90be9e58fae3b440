"""work_aware_v1 per job: a Pod's estimate from telemetry replaces its kind's prior, its owner's budget
bounds what it is given, a one-tick probe where the estimate is uncertain, and each Pod's decision."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.jobestimate import JobEstimate, expected_sample, observe, prior_estimate
from joulie_controller.policies.plan import NodeCaps, PolicyInput, PolicyPlan
from joulie_controller.policies.registry import plan
from joulie_controller.policies.workaware_test import _nodes
from joulie_controller.settings import PolicySettings, Settings

MAX_W = 400.0


def _pod(name: str, kind: str = "gpu-inference", ns: str = "default", budget: str | None = None) -> PodInfo:
    return PodInfo(
        ns,
        name,
        node_name="gpu-1",
        labels={"joulie.io/workload-kind": kind} if kind else {},
        annotations={"joulie.io/max-slowdown": budget} if budget else {},
        cpu_request=4,
        gpu_request=8,
    )


def _plan(pods: list[PodInfo], estimates: dict[str, JobEstimate] | None = None, **policy: Any) -> PolicyPlan:
    s = Settings(
        policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0, **policy),
        trusted_namespaces=("default",),
    )
    nodes = _nodes()
    inp = PolicyInput(nodes, 0, 0.0, s, pods, job_estimates=estimates or {})
    return plan("work_aware_v1", nodes, 0, 0.0, s, inp)


def _seen(kind: str, c: float, u: float, ticks: int = 6, ratio: float = 1.0) -> JobEstimate:
    est = prior_estimate(kind)
    for _ in range(ticks):
        est = observe(est, [expected_sample(c, u, ratio, MAX_W)] * 8, MAX_W)
    return est


def _gpu1(p: PolicyPlan) -> NodeCaps:
    return p.node_caps["gpu-1"]


def test_an_estimate_replaces_the_kind_prior_and_a_pod_without_samples_keeps_it() -> None:
    prior = _gpu1(_plan([_pod("job")]))
    assert prior.pods[0].observations == 0 and prior.pods[0].compute_share == 0.26  # the gpu-inference prior
    # The same kind, seen to be compute-bound: left fast.
    fast = _gpu1(_plan([_pod("job")], {"default/job": _seen("gpu-inference", 0.97, 0.9)}))
    assert fast.gpu_lock_pct is None and not fast.gpu_capped and fast.pods[0].lever == "none"
    assert fast.pods[0].observations == 6 and fast.pods[0].compute_share > 0.9
    # An estimate with no observations is the prior: the decision is the prior's.
    unseen = _gpu1(_plan([_pod("job")], {"default/job": prior_estimate("gpu-inference")}))
    assert (unseen.gpu_pct, unseen.gpu_lock_pct) == (prior.gpu_pct, prior.gpu_lock_pct)


def test_an_untrusted_pod_is_left_fast_until_its_telemetry_shows_memory_bound_work() -> None:
    pod = _pod("decode", ns="tenant")
    assert _gpu1(_plan([pod])).pods[0].lever == "none"  # no kind believed: compute-bound
    seen = _gpu1(_plan([pod], {"tenant/decode": _seen("", 0.1, 0.3, ticks=8)}))
    assert seen.gpu_lock_pct is not None and seen.pods[0].lever in ("lock", "probe")


def test_the_owners_budget_goes_deeper_than_the_cluster_and_the_decision_names_its_source() -> None:
    est = {"ml/decode": _seen("gpu-inference", 0.1, 0.3)}
    est_calibrated = {k: replace(v, calibrated=True) for k, v in est.items()}
    pod = _pod("decode", ns="ml", budget="10%")
    ignored = _gpu1(_plan([pod], est_calibrated))
    honoured = _gpu1(_plan([pod], est_calibrated, slowdown_annotation_namespaces=("ml",)))
    assert ignored.pods[0].budget_pct == 3.0 and "annotation ignored" in ignored.pods[0].budget_source
    assert honoured.pods[0].budget_pct == 10.0 and honoured.pods[0].budget_source == "annotation"
    assert ignored.gpu_lock_pct is not None and honoured.gpu_lock_pct is not None
    assert honoured.gpu_lock_pct < ignored.gpu_lock_pct
    assert ignored.pods[0].predicted_slowdown_pct <= 3.0 < honoured.pods[0].predicted_slowdown_pct <= 10.0


def test_an_uncertain_estimate_gets_a_one_tick_probe_within_its_budget_and_a_calibrated_one_does_not() -> None:
    est = _seen("gpu-inference", 0.35, 0.95)  # seen at one clock ratio only: c is uncertain
    pod = _pod("job", ns="ml", budget="10%")
    p = _gpu1(_plan([pod], {"ml/job": est}, slowdown_annotation_namespaces=("ml",)))
    assert p.pods[0].lever == "probe" and p.gpu_lock_pct is not None and p.gpu_lock_pct <= 90.0
    assert p.pods[0].predicted_slowdown_pct <= 10.0 and "probe at" in p.reason
    calibrated = replace(est, calibrated=True)
    assert _gpu1(_plan([pod], {"ml/job": calibrated}, slowdown_annotation_namespaces=("ml",))).pods[0].lever != "probe"
    # The cluster's 3 % does not cover a probe at the pessimistic compute share: none is asked for.
    assert _gpu1(_plan([pod], {"ml/job": est})).pods[0].lever != "probe"
