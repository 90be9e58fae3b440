"""Policy work_aware_v1: caps from the Pods on each node, labels that keep performance Pods placeable,
and a budget that binds only on measured power."""

from __future__ import annotations

import itertools

from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import HardwareView
from joulie_controller.policies.plan import PolicyInput, PolicyNode, PolicyPlan
from joulie_controller.policies.registry import plan
from joulie_controller.settings import PolicySettings, Settings

GPU = HardwareView(gpu_model="H100 NVL", gpu_count=8, gpu_min_w=200, gpu_max_w=400, gpu_default_w=310,
                   cpu_model="Xeon", cpu_sockets=2, cpu_cores=64, cpu_min_w_per_socket=50, cpu_max_w_per_socket=350)
CPU = HardwareView(cpu_model="Xeon 8260", cpu_sockets=2, cpu_cores=48, cpu_min_w_per_socket=50, cpu_max_w_per_socket=165)


def _nodes() -> list[PolicyNode]:
    return [PolicyNode("gpu-0", GPU, "performance"), PolicyNode("gpu-1", GPU, "eco"),
            PolicyNode("cpu-0", CPU, "performance"), PolicyNode("cpu-1", CPU, "eco"), PolicyNode("cpu-2", CPU, "eco")]


def _pod(name: str, node: str, kind: str, cpu: float, gpu: int = 0, performance: bool = False) -> PodInfo:
    return PodInfo("default", name, node_name=node, phase="Running", labels={"joulie.io/workload-kind": kind},
                   annotations={"joulie.io/workload-class": "performance"} if performance else {},
                   cpu_request=cpu, gpu_request=gpu)


def _plan(pods: list[PodInfo], measured: dict[str, float] | None = None, power_budget_w: float = 0.0) -> PolicyPlan:
    s = Settings(policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0,
                                       power_budget_w=power_budget_w), trusted_namespaces=("default",))
    nodes = _nodes()
    return plan("work_aware_v1", nodes, 0, 0.0, s, PolicyInput(nodes, 0, 0.0, s, pods, measured_w=measured or {}))


def test_memory_bound_work_is_capped_compute_bound_work_is_not_and_the_reason_says_so() -> None:
    p = _plan([_pod("infer", "gpu-1", "gpu-inference", 4, gpu=4), _pod("stream", "cpu-1", "cpu-memory", 44),
               _pod("crunch", "cpu-2", "cpu-compute", 44)])
    assert p.policy_name == "work-aware-v1"
    gpu1, cpu1, cpu2 = p.node_caps["gpu-1"], p.node_caps["cpu-1"], p.node_caps["cpu-2"]
    # The GPU lever is a cap, a clock lock or both (whichever saves most within τ): one of them binds.
    assert gpu1.capped and (gpu1.gpu_pct < 77.5 or gpu1.gpu_lock_pct is not None)
    assert "bound by infer (gpu-inference)" in gpu1.reason
    assert 0 < gpu1.gpu_slowdown_pct <= 3.0 and gpu1.gpu_saving_pct > 0
    assert cpu1.capped and cpu1.cpu_pct < 100
    assert not cpu2.capped and "crunch (cpu-compute) is not capped" in cpu2.reason
    # Capped nodes are eco; nodes left at their reference limits are performance, so a performance Pod
    # fits there; one node per hardware family is kept performance whatever runs.
    assert "gpu-1" not in p.performance and "cpu-1" not in p.performance
    assert p.performance == frozenset({"gpu-0", "cpu-0", "cpu-2"})
    assert "kept for performance Pods" in p.node_caps["cpu-0"].reason


def test_an_idle_node_and_a_node_running_performance_pods_stay_uncapped_at_the_gpu_default() -> None:
    p = _plan([_pod("fast", "gpu-1", "gpu-inference", 4, gpu=4, performance=True)])
    assert p.performance == frozenset({"gpu-0", "gpu-1", "cpu-0", "cpu-1", "cpu-2"})
    assert p.node_caps["gpu-1"].gpu_pct == 77.5  # 310 W of 400: the default limit, never raised to the maximum
    assert p.node_caps["gpu-1"].reason.startswith("performance node:") and "runs performance Pods" in p.node_caps["gpu-1"].reason


def test_a_pod_without_a_kind_is_treated_as_compute_bound() -> None:
    p = _plan([_pod("mystery", "gpu-1", "", 4, gpu=4)])
    assert not p.node_caps["gpu-1"].capped and "mystery (no kind) is not capped" in p.node_caps["gpu-1"].reason


def test_the_budget_binds_only_when_measured_power_would_exceed_it() -> None:
    pods = [_pod("infer", "gpu-1", "gpu-inference", 4, gpu=8), _pod("stream", "cpu-1", "cpu-memory", 44)]
    free = _plan(pods, {"gpu-1": 3000.0, "cpu-1": 400.0}, power_budget_w=10_000.0)
    tight = _plan(pods, {"gpu-1": 3000.0, "cpu-1": 400.0}, power_budget_w=3000.0)
    assert free.notes == ()
    assert free.node_caps["gpu-1"].gpu_pct >= tight.node_caps["gpu-1"].gpu_pct
    lowered = tight.node_caps["gpu-1"].gpu_pct < free.node_caps["gpu-1"].gpu_pct or \
        tight.node_caps["cpu-1"].cpu_pct < free.node_caps["cpu-1"].cpu_pct
    assert lowered and "budget 3000 W" in tight.notes[0]
    assert tight.node_caps["gpu-1"].gpu_pct >= 50.0  # 200 W minimum of the board
    # The prediction follows the lowered cap: past tau, and the reason says why.
    t_gpu, f_gpu, t_cpu, f_cpu = (tight.node_caps["gpu-1"], free.node_caps["gpu-1"], tight.node_caps["cpu-1"],
                                  free.node_caps["cpu-1"])
    assert (t_gpu.gpu_slowdown_pct > f_gpu.gpu_slowdown_pct and "budget: gpu lowered to" in t_gpu.reason) or (
        t_cpu.cpu_slowdown_pct > f_cpu.cpu_slowdown_pct and "budget: cpu lowered to" in t_cpu.reason)


def _budget_tick(pods: list[PodInfo], measured: dict[str, float], shed_w: float, budget_w: float) -> PolicyPlan:
    s = Settings(policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0,
                                       power_budget_w=budget_w), trusted_namespaces=("default",))
    nodes = _nodes()
    return plan("work_aware_v1", nodes, 0, 0.0, s,
                PolicyInput(nodes, 0, 0.0, s, pods, measured_w=measured, budget_shed_w=shed_w))


def test_the_budget_settles_instead_of_flapping_when_its_own_caps_lower_measured_power() -> None:
    # A plant whose measured power shows the shed one tick late (the rate window), the demand
    # 400 W over the budget. A shed of this tick's excess alone released the caps as soon as they
    # worked and lowered them again the tick after: the 200-node run's 50 % <-> 79 % flapping.
    pods = [_pod("infer", "gpu-1", "gpu-inference", 4, gpu=8), _pod("stream", "cpu-1", "cpu-memory", 44)]
    demand = {"gpu-1": 3000.0, "cpu-1": 400.0}
    budget = 3000.0
    shed, applied = 0.0, 0.0
    caps: list[float] = []
    totals: list[float] = []
    for _ in range(14):
        measured = {"gpu-1": demand["gpu-1"] - applied, "cpu-1": demand["cpu-1"]}
        totals.append(sum(measured.values()))
        p = _budget_tick(pods, measured, shed, budget)
        applied, shed = shed, p.budget_shed_w  # what was set last tick shows in this tick's measurement
        caps.append(p.node_caps["gpu-1"].gpu_pct)
    # The shed converges on the excess; measured power ends within 2 % of the budget ...
    assert abs(shed - 400.0) < 20.0, shed
    assert all(abs(t - budget) / budget < 0.02 for t in totals[-4:]), totals
    # ... and the caps, once they go down, never go back up while the demand stays (no flapping).
    assert all(later <= earlier + 1e-9 for earlier, later in itertools.pairwise(caps)), caps
    assert caps[-1] < caps[0] or caps[0] < 77.5
    # When the demand falls under the budget the shed decays to nothing and the caps come back.
    free = _budget_tick(pods, dict(demand), 0.0, 10_000.0).node_caps["gpu-1"].gpu_pct
    for _ in range(12):
        p = _budget_tick(pods, {"gpu-1": 2200.0, "cpu-1": 400.0}, shed, budget)
        shed = p.budget_shed_w
    assert shed == 0.0 and p.node_caps["gpu-1"].gpu_pct == free and "caps released" not in " ".join(p.notes)


def test_a_pending_performance_pod_that_fits_no_performance_node_releases_a_capped_one() -> None:
    running = [_pod("infer", "gpu-1", "gpu-inference", 4, gpu=4), _pod("busy", "gpu-0", "gpu-training", 8, gpu=8)]
    waiting = PodInfo("default", "urgent", phase="Pending", annotations={"joulie.io/workload-class": "performance"},
                      cpu_request=4, gpu_request=2, unschedulable=True)
    before = _plan(running)
    assert "gpu-1" not in before.performance and before.node_caps["gpu-1"].capped
    after = _plan([*running, waiting])
    assert "gpu-1" in after.performance and not after.node_caps["gpu-1"].capped
    assert "released for a pending performance Pod" in after.node_caps["gpu-1"].reason
    # One that fits on a performance node (gpu-0 has no GPU free, but a CPU Pod fits cpu-0) releases nothing.
    cpu_only = PodInfo("default", "urgent-cpu", phase="Pending", annotations={"joulie.io/workload-class": "performance"},
                       cpu_request=4, unschedulable=True)
    assert _plan([*running, cpu_only]).node_caps["gpu-1"].capped


def test_a_start_up_ramp_seen_for_seconds_does_not_shed_against_a_budget_four_times_the_draw() -> None:
    """Issue 36: at deploy the first two samples, 6 s apart, rise from idle to load; extrapolated over
    the whole two-minute horizon that ramp forecast 8x the real draw and sent every eco cap to the floor."""
    pods = [_pod("infer", "gpu-1", "gpu-inference", 4, gpu=8), _pod("stream", "cpu-1", "cpu-memory", 44)]
    s = Settings(policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0,
                                       power_budget_w=4 * 3400.0, forecast_horizon_s=120.0),
                 trusted_namespaces=("default",))
    nodes = _nodes()
    measured = {"gpu-1": 3000.0, "cpu-1": 400.0}
    ramp = {"gpu-1": 2000.0 / 0.1, "cpu-1": 200.0 / 0.1}  # W/min: +2000 W and +200 W in 6 s

    def tick(span_s: dict[str, float]) -> PolicyPlan:
        inp = PolicyInput(nodes, 0, 0.0, s, pods, measured_w=measured, trend_w_per_min=ramp, trend_span_s=span_s)
        return plan("work_aware_v1", nodes, 0, 0.0, s, inp)

    seen_6s = tick({"gpu-1": 6.0, "cpu-1": 6.0})
    assert seen_6s.budget_shed_w == 0.0 and seen_6s.notes == ()
    # The same slope seen over the whole horizon is a real forecast: the budget acts on it.
    seen_long = tick({"gpu-1": 120.0, "cpu-1": 120.0})
    assert seen_long.budget_shed_w > 0 and "budget" in seen_long.notes[0]
