"""work_aware_v1 against tenant input (issue 36): a Pod's class and kind count only in the namespaces
an operator trusts (TRUSTED_NAMESPACES), unknown work is shed by the budget like the rest, and a
Pending Pod releases a capped node only when the scheduler marked it unschedulable, with our
scheduler's name, and it truly fits there (selector, affinity, taints)."""

from __future__ import annotations

from dataclasses import replace

from joulie_controller.model.fsm import PodInfo, Requirement, Toleration
from joulie_controller.model.hardware import NodeInfo, Taint
from joulie_controller.policies.plan import PolicyInput, PolicyNode, PolicyPlan
from joulie_controller.policies.registry import plan
from joulie_controller.policies.workaware_test import CPU, GPU
from joulie_controller.settings import PolicySettings, Settings

PERF = {"joulie.io/workload-class": "performance"}


def _nodes() -> list[PolicyNode]:
    return [PolicyNode("gpu-0", GPU, "performance"), PolicyNode("gpu-1", GPU, "eco"),
            PolicyNode("cpu-0", CPU, "performance"), PolicyNode("cpu-1", CPU, "eco")]


def _plan(pods: list[PodInfo], nodes: list[PolicyNode] | None = None, measured: dict[str, float] | None = None,
          budget_w: float = 0.0, trusted_namespaces: tuple[str, ...] = ()) -> PolicyPlan:
    s = Settings(policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0,
                                       power_budget_w=budget_w), trusted_namespaces=trusted_namespaces)
    ns = nodes or _nodes()
    return plan("work_aware_v1", ns, 0, 0.0, s, PolicyInput(ns, 0, 0.0, s, pods, measured_w=measured or {}))


def _running(ns: str, name: str, node: str, kind: str, gpu: int, annotations: dict[str, str] | None = None,
             cpu: float = 4) -> PodInfo:
    return PodInfo(ns, name, node_name=node, labels={"joulie.io/workload-kind": kind} if kind else {},
                   annotations=annotations or {}, cpu_request=cpu, gpu_request=gpu)


def test_a_performance_annotation_in_an_untrusted_namespace_does_not_uncap_its_node() -> None:
    # The live probe: a Pod annotated performance took its node out of the budget's shed, 62.5 -> 100 %.
    pods = [_running("tenant", "sneaky", "gpu-1", "gpu-inference", 8, PERF, cpu=8)]
    over = {"gpu-1": 3000.0, "cpu-1": 300.0}

    def gpu1(trusted_namespaces: tuple[str, ...] = ()) -> tuple[bool, str]:
        p = _plan(pods, measured=over, budget_w=2500.0, trusted_namespaces=trusted_namespaces)
        return p.node_caps["gpu-1"].capped and "gpu-1" not in p.performance, p.node_caps["gpu-1"].reason

    capped, reason = gpu1()  # the safe default trusts no namespace: general work of no kind
    assert capped and "budget: gpu lowered to" in reason and "sneaky (no kind)" in reason
    assert gpu1(trusted_namespaces=("ml-team",))[0]
    for trusting in (("tenant",), ("*",)):
        capped, reason = gpu1(trusted_namespaces=trusting)
        assert not capped and "runs performance Pods" in reason


def test_an_untrusted_kind_is_ignored_and_unknown_work_is_shed_by_the_budget() -> None:
    # cpu-compute would keep cpu-1 uncapped; untrusted, it is work of no kind, and the budget caps it.
    pods = [_running("tenant", "crunch", "cpu-1", "cpu-compute", 0, cpu=44)]
    measured = {"cpu-1": 400.0, "gpu-1": 1000.0}
    trusted = _plan(pods, measured=measured, budget_w=500.0, trusted_namespaces=("tenant",))
    assert not trusted.node_caps["cpu-1"].capped  # an operator's word that it is compute-bound holds
    shed = _plan(pods, measured=measured, budget_w=500.0)
    assert shed.node_caps["cpu-1"].capped and "budget: cpu lowered to" in shed.node_caps["cpu-1"].reason
    # A trusted Pod naming no kind is unknown work too: capped by the budget, not exempt from it.
    unnamed = [_running("tenant", "mystery", "cpu-1", "", 0, cpu=44)]
    assert _plan(unnamed, measured=measured, budget_w=500.0, trusted_namespaces=("tenant",)).node_caps["cpu-1"].capped
    # Without a budget, work of no kind is still left uncapped by tau (its slowdown is unknown).
    assert not _plan(unnamed).node_caps["cpu-1"].capped


def _waiting(**kw: object) -> PodInfo:
    base = PodInfo("team", "urgent", phase="Pending", annotations=PERF, cpu_request=4, gpu_request=2,
                   unschedulable=True)
    return replace(base, **kw)  # type: ignore[arg-type]


def _with_info(taints: tuple[Taint, ...] = ()) -> list[PolicyNode]:
    return [replace(n, info=NodeInfo(n.name, labels={"kubernetes.io/hostname": n.name,
                                                     "joulie.io/power-profile": n.current_profile},
                                     taints=taints if n.name == "gpu-1" else ())) for n in _nodes()]


def _released(pod: PodInfo, nodes: list[PolicyNode] | None = None) -> bool:
    busy = [_running("team", "infer", "gpu-1", "gpu-inference", 4), _running("team", "busy", "gpu-0", "gpu-training", 8)]
    p = _plan([*busy, pod], nodes=nodes or _with_info(), trusted_namespaces=("team",))
    return "gpu-1" in p.performance and not p.node_caps["gpu-1"].capped


def test_a_pending_pod_releases_a_capped_node_only_when_unschedulable_by_our_scheduler_and_it_fits() -> None:
    assert _released(_waiting())
    assert not _released(_waiting(namespace="tenant"))  # untrusted: its class does not count
    assert not _released(_waiting(unschedulable=False))  # the scheduler has not given up on it
    assert not _released(_waiting(scheduler_name="bogus-scheduler"))  # no scheduler we serve places it
    assert not _released(_waiting(node_selector={"kubernetes.io/hostname": "nowhere"}))  # the live probe's case
    assert not _released(_waiting(required_terms=((Requirement("kubernetes.io/hostname", "In", ("cpu-0",)),),)))
    tainted = _with_info((Taint("dedicated", "ml", "NoSchedule"),))
    assert not _released(_waiting(), tainted)  # the taint rules gpu-1 out
    tolerant = _waiting(tolerations=(Toleration("dedicated", "Equal", "ml", "NoSchedule"),))
    assert _released(tolerant, tainted)
    # Its nodeSelector names the profile it needs: gpu-1 is released to performance, so that counts as met.
    assert _released(replace(tolerant, node_selector={"kubernetes.io/hostname": "gpu-1",
                                                      "joulie.io/power-profile": "performance"}), tainted)
