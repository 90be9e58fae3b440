"""Workload classification, power states and the downgrade guard."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from joulie_api.names import ANNOTATION_WORKLOAD_CLASS, WORKLOAD_CLASS_PERFORMANCE
from joulie_controller.model.fsm import (
    GuardedProfile,
    PodInfo,
    Requirement,
    State,
    WorkloadClass,
    assignment_state,
    classify_pod,
    count_performance_pods,
    count_performance_pods_of_tenants,
    guard_downgrade,
    is_running,
    tenant_view,
    transition_result,
)

KEY = "joulie.io/power-profile"


def pod(**kw: object) -> PodInfo:
    base: dict[str, object] = {"namespace": "default", "name": "p", "node_name": "n1", "phase": "Running"}
    base.update(kw)
    return PodInfo(**base)  # type: ignore[arg-type]


def affinity(*reqs: Requirement) -> tuple[tuple[Requirement, ...], ...]:
    return (tuple(reqs),)


@pytest.mark.parametrize(("p", "cls"), [
    (pod(), WorkloadClass.GENERAL),
    (pod(annotations={"joulie.io/workload-class": " performance "}), WorkloadClass.PERFORMANCE),
    (pod(annotations={"joulie.io/workload-class": "standard"}), WorkloadClass.GENERAL),
    (pod(node_selector={KEY: "performance"}), WorkloadClass.PERFORMANCE),
    (pod(node_selector={KEY: "eco"}), WorkloadClass.ECO),
    (pod(node_selector={KEY: "turbo"}), WorkloadClass.UNKNOWN),
    (pod(required_terms=affinity(Requirement(KEY, "NotIn", ("eco",)))), WorkloadClass.PERFORMANCE),
    (pod(required_terms=affinity(Requirement(KEY, "In", ("performance",)))), WorkloadClass.PERFORMANCE),
    (pod(required_terms=affinity(Requirement(KEY, "In", ("eco",)))), WorkloadClass.ECO),
    (pod(required_terms=affinity(Requirement(KEY, "NotIn", ("performance",)))), WorkloadClass.ECO),
    (pod(required_terms=affinity(Requirement(KEY, "In", ("eco", "performance")))), WorkloadClass.GENERAL),
    (pod(required_terms=affinity(Requirement(KEY, "Exists"))), WorkloadClass.GENERAL),
    (pod(required_terms=affinity(Requirement(KEY, "DoesNotExist"))), WorkloadClass.UNKNOWN),
    (pod(required_terms=affinity(Requirement("zone", "In", ("a",)))), WorkloadClass.GENERAL),
    # "performance OR eco" as two terms: one performance term is enough (conservative).
    (pod(required_terms=((Requirement(KEY, "In", ("performance",)),), (Requirement(KEY, "In", ("eco",)),))),
     WorkloadClass.PERFORMANCE),
])
def test_classification(p: PodInfo, cls: WorkloadClass) -> None:
    assert classify_pod(p) == cls


def test_only_running_performance_or_unknown_pods_count() -> None:
    pods = [
        pod(name="a", node_selector={KEY: "performance"}),
        pod(name="b", node_selector={KEY: "turbo"}),  # unknown counts, for safety
        pod(name="c", node_selector={KEY: "performance"}, phase="Pending"),
        pod(name="d", node_selector={KEY: "performance"}, phase="Succeeded"),
        pod(name="e", node_selector={KEY: "performance"}, deleting=True),
        pod(name="f"),
        pod(name="g", node_selector={KEY: "performance"}, node_name="n2"),
        pod(name="h", node_selector={KEY: "performance"}, node_name="", phase="Running"),
    ]
    assert count_performance_pods(pods) == {"n1": 2, "n2": 1}


@pytest.mark.parametrize(("profile", "draining", "state"), [
    ("performance", False, State.ACTIVE_PERFORMANCE), ("eco", False, State.ACTIVE_ECO),
    ("eco", True, State.DRAINING_PERFORMANCE), ("", False, State.UNKNOWN)])
def test_assignment_state(profile: str, draining: bool, state: State) -> None:
    assert assignment_state(profile, draining) == state


@pytest.mark.parametrize(("desired", "current", "pods", "expected"), [
    ("eco", State.ACTIVE_PERFORMANCE, 2, GuardedProfile("eco", True, State.DRAINING_PERFORMANCE, 2)),
    ("eco", State.DRAINING_PERFORMANCE, 1, GuardedProfile("eco", True, State.DRAINING_PERFORMANCE, 1)),
    ("eco", State.DRAINING_PERFORMANCE, 0, GuardedProfile("eco", False, State.ACTIVE_ECO, 0)),
    ("eco", State.ACTIVE_PERFORMANCE, 0, GuardedProfile("eco", False, State.ACTIVE_ECO, 0)),
    ("eco", State.UNKNOWN, 1, GuardedProfile("eco", True, State.DRAINING_PERFORMANCE, 1)),
    # Already eco: a pod pinned by nodeName does not bring the node back to draining.
    ("eco", State.ACTIVE_ECO, 3, GuardedProfile("eco", False, State.ACTIVE_ECO, 3)),
    ("performance", State.DRAINING_PERFORMANCE, 4, GuardedProfile("performance", False, State.ACTIVE_PERFORMANCE, 4)),
])
def test_downgrade_guard(desired: str, current: State, pods: int, expected: GuardedProfile) -> None:
    assert guard_downgrade(desired, current, pods) == expected


def test_guard_is_idempotent() -> None:
    first = guard_downgrade("eco", State.ACTIVE_PERFORMANCE, 1)
    assert guard_downgrade("eco", first.state, 1) == first


@pytest.mark.parametrize(("prev", "new", "result"), [
    (State.ACTIVE_PERFORMANCE, State.DRAINING_PERFORMANCE, "deferred"),
    (State.DRAINING_PERFORMANCE, State.DRAINING_PERFORMANCE, None),  # not once per tick
    (State.DRAINING_PERFORMANCE, State.ACTIVE_ECO, "applied"),
    (State.ACTIVE_PERFORMANCE, State.ACTIVE_ECO, "applied"),
    (State.ACTIVE_ECO, State.ACTIVE_PERFORMANCE, "applied"),
    (State.UNKNOWN, State.ACTIVE_ECO, None),
])
def test_transition_accounting(prev: State, new: State, result: str | None) -> None:
    assert transition_result(prev, new) == result


def test_an_untrusted_pod_is_read_as_general_work_of_no_kind() -> None:
    claims = PodInfo("tenant", "p", node_selector={KEY: "performance", "zone": "a"},
                     required_terms=((Requirement(KEY, "In", ("performance",)), Requirement("zone", "In", ("a",))),),
                     annotations={"joulie.io/workload-class": "performance", "team": "x"},
                     labels={"joulie.io/workload-kind": "cpu-compute", "app": "y"})
    seen = tenant_view([claims], ("ml-team",))[0]
    assert classify_pod(seen) == WorkloadClass.GENERAL and seen.workload_kind == ""
    # What is not a claim about power stays: the scheduler's constraints still apply to it.
    assert seen.node_selector == {"zone": "a"} and seen.required_terms == ((Requirement("zone", "In", ("a",)),),)
    assert seen.annotations == {"team": "x"} and seen.labels == {"app": "y"}
    assert tenant_view([claims], ("tenant",)) == [claims] == tenant_view([claims], ("*",))


@pytest.mark.parametrize("seed", range(5))
def test_the_tenant_view_copies_only_pods_that_claim_something(seed: int) -> None:
    pods = [*random_pods(seed), pod(namespace="tenant", name="kind", labels={"joulie.io/workload-kind": "x"}),
            pod(namespace="tenant", name="akind", annotations={"joulie.io/workload-kind": "x"})]
    seen = tenant_view(pods, ("team",))
    for p, s in zip(pods, seen, strict=True):
        if p.namespace == "team":
            assert s is p
            continue
        # What the full copy would say, whether or not the Pod was copied.
        full = replace(p, annotations={k: v for k, v in p.annotations.items()
                                       if k not in ("joulie.io/workload-class", "joulie.io/workload-kind")},
                       labels={k: v for k, v in p.labels.items() if k != "joulie.io/workload-kind"},
                       node_selector={k: v for k, v in p.node_selector.items() if k != KEY},
                       required_terms=tuple(tuple(r for r in t if r.key != KEY) for t in p.required_terms))
        assert s == full
        assert (s is p) == (full == p)  # copied exactly when the Pod claimed something


def random_pods(seed: int, count: int = 200) -> list[PodInfo]:
    """Pods of every kind the counts tell apart: running or not, deleting, unbound, trusted or not,
    performance by annotation, selector or affinity, unknown, eco, general."""
    rnd = random.Random(seed)
    shapes: list[dict[str, object]] = [
        {}, {"annotations": {ANNOTATION_WORKLOAD_CLASS: WORKLOAD_CLASS_PERFORMANCE}},
        {"node_selector": {KEY: "performance"}}, {"node_selector": {KEY: "eco"}},
        {"required_terms": affinity(Requirement(KEY, "NotIn", ("eco",)))},
        {"required_terms": affinity(Requirement(KEY, "Gt", ("1",)))},
        {"required_terms": affinity(Requirement(KEY, "In", ("eco",)))},
    ]
    return [pod(namespace=rnd.choice(("team", "tenant", "other")), name=f"p{i}",
                node_name=rnd.choice(("", "n1", "n2", "n3")), phase=rnd.choice(("Running", "Pending", "Succeeded")),
                deleting=rnd.random() < 0.1, **rnd.choice(shapes))
            for i in range(count)]


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("namespaces", [(), ("team",), ("team", "tenant"), ("*",)])
def test_the_tenants_count_in_one_walk_is_the_count_of_the_tenant_view(seed: int, namespaces: tuple[str, ...]) -> None:
    pods = random_pods(seed)
    assert count_performance_pods_of_tenants(pods, namespaces) == (
        count_performance_pods(pods), count_performance_pods(tenant_view(pods, namespaces)))
    assert count_performance_pods(pods) == reference_count(pods)


def reference_count(pods: list[PodInfo]) -> dict[str, int]:
    """``count_performance_pods`` as the rules read, without its inlining."""
    counts: dict[str, int] = {}
    for p in pods:
        if is_running(p) and classify_pod(p) in (WorkloadClass.PERFORMANCE, WorkloadClass.UNKNOWN):
            counts[p.node_name] = counts.get(p.node_name, 0) + 1
    return counts
