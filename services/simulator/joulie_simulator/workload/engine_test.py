"""The job engine: a cap slows a job as the physics says, completion, loads, metric values."""

from __future__ import annotations

from dataclasses import replace

import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.physics import gpu as physics_gpu
from joulie_simulator.physics import node as node_physics
from joulie_simulator.physics.model import Load, initial_state
from joulie_simulator.workload.engine import Engine, NodeSpeed, gpu_factor, speed_from_state
from joulie_workload.trace import Job


def job(jid: str, submit: float = 0.0, cpu: float = 4, gpu: int = 0, cpu_units: float = 40.0, gpu_units: float = 0.0,
        cls: str = "general", s_cpu: float = 1.0) -> Job:
    return Job.model_validate({"type": "job", "jobId": jid, "submitTimeOffsetSec": submit, "class": cls,
                               "requests": {"cpu": cpu, "gpu": gpu}, "work": {"cpuUnits": cpu_units, "gpuUnits": gpu_units},
                               "sensitivity": {"cpu": s_cpu, "gpu": 1.0}})


def test_full_speed_job_finishes_at_its_ideal_runtime_inside_the_tick() -> None:
    e = Engine([job("a", cpu_units=40.0)])  # 4 cores, 10 s
    assert [j.job_id for j in e.due(0.0)] == ["a"]
    e.bind("a", "n1", 0.0, 0)
    assert e.step(0.0, 7.0, {}) == []
    done = e.step(7.0, 7.0, {})
    assert [(c.job_id, c.node) for c in done] == [("a", "n1")]
    assert done[0].at_s == pytest.approx(10.0)
    assert e.runs["a"].slowdown == pytest.approx(1.0)
    assert e.submitted_total == {"general": 1} and e.completed_total == {("general", "n1"): 1}
    assert e.completion_seconds == [pytest.approx(10.0)]
    assert e.finished


def test_a_cpu_at_half_clock_halves_a_compute_bound_job_and_less_a_memory_bound_one() -> None:
    e = Engine([job("s", cpu_units=40.0, s_cpu=1.0), job("i", cpu_units=40.0, s_cpu=0.5)])
    e.due(0.0)
    e.bind("s", "n", 0.0, 0)
    e.bind("i", "n", 0.0, 0)
    done = {c.job_id: c.at_s for t in range(40) for c in e.step(float(t), 1.0, {"n": NodeSpeed(cpu=0.5)})}
    assert done["s"] == pytest.approx(20.0)
    assert done["i"] == pytest.approx(10.0 * (0.5 / 0.5 + 0.5))  # half the time follows the clock: 10 s -> 15 s


def test_rapl_cap_in_the_physics_slows_the_job() -> None:
    prof = builtin_profile("intel-xeon-2s-rapl")
    st = replace(initial_state(prof, "n"), load=Load(cpu_util=1.0))
    free = node_physics.step_node(prof, node_physics.step_node(prof, st, 1.0), 1.0)
    capped_state = replace(st, sockets=tuple(replace(s, rapl_requested_w=80.0, rapl_settled_w=80.0) for s in st.sockets))
    capped = node_physics.step_node(prof, node_physics.step_node(prof, capped_state, 1.0), 1.0)
    assert speed_from_state(prof, free).cpu == pytest.approx(1.0)
    slow = speed_from_state(prof, capped).cpu
    assert 0.3 < slow < 0.8, slow


def test_gpu_factor_is_the_clock_the_board_sustains_under_its_limit() -> None:
    g = builtin_profile("nvidia-h100-nvl-8gpu").physics.gpu
    assert g is not None
    assert gpu_factor(g, 0.9, 400.0) == pytest.approx(1.0)
    r = gpu_factor(g, 1.0, 250.0)
    assert 0.5 < r < 1.0 and physics_gpu.power_at_clock_w(g, 1.0, r) == pytest.approx(250.0)
    assert gpu_factor(g, 0.0, 200.0) == 1.0


def test_a_gpu_cap_slows_memory_bound_work_less_than_compute_bound_work() -> None:
    e = Engine([Job.model_validate({"type": "job", "jobId": jid, "submitTimeOffsetSec": 0, "requests": {"cpu": 1, "gpu": 1},
                                    "work": {"gpuUnits": 100.0}, "sensitivity": {"cpu": 0.0, "gpu": c}})
                for jid, c in (("train", 0.52), ("decode", 0.26))])
    e.due(0.0)
    e.bind("train", "n", 0.0, 2)
    e.bind("decode", "n", 0.0, 2)
    done = {c.job_id: c.at_s for t in range(300) for c in e.step(float(t), 1.0, {"n": NodeSpeed(gpus=(0.8, 0.8))})}
    assert done["train"] == pytest.approx(100.0 * (0.52 / 0.8 + 0.48))
    assert done["decode"] == pytest.approx(100.0 * (0.26 / 0.8 + 0.74)) and done["decode"] < done["train"]


def test_loads_follow_jobs_and_gpus_go_to_free_boards() -> None:
    e = Engine([job("c", cpu=48), job("g1", cpu=4, gpu=2, cpu_units=4, gpu_units=20), job("g2", cpu=4, gpu=1, cpu_units=4, gpu_units=10)])
    e.due(0.0)
    e.bind("c", "cpu-node", 0.0, 0)
    assert e.bind("g1", "gpu-node", 0.0, 4).gpu_indices == (0, 1)
    assert e.bind("g2", "gpu-node", 0.0, 4).gpu_indices == (2,)
    loads = e.loads({"cpu-node": 96, "gpu-node": 64, "idle": 8}, {"gpu-node": 4})
    assert loads["cpu-node"].cpu_util == pytest.approx(48 * 0.9 / 96)
    assert loads["gpu-node"].gpu_util == (0.9, 0.9, 0.9, 0.0)
    assert loads["idle"] == Load(cpu_util=0.0, gpu_util=())


# Issue 34: serving phases and the clock lock in job progress.

NVL = builtin_profile("nvidia-h100-nvl-8gpu")
NVL_G = NVL.physics.gpu or pytest.fail("the NVL profile has GPU physics")
MIX = ((0.2, 0.9, 0.95), (0.8, 0.14, 0.3))  # (timeShare, c, u): prefill, decode
PHASES: list[dict[str, object]] = [
    {"name": name, "timeShare": s, "sensitivity": {"gpu": c}, "utilization": {"gpu": u}}
    for name, (s, c, u) in zip(("prefill", "decode"), MIX, strict=True)
]


def serving_job(jid: str, phases: list[dict[str, object]] | None) -> Job:
    # Top-level c and u are the phases' time-weighted means, as a generator writes them.
    rec = {"type": "job", "jobId": jid, "submitTimeOffsetSec": 0, "requests": {"cpu": 1, "gpu": 1},
           "work": {"gpuUnits": 100.0}, "sensitivity": {"cpu": 0.0, "gpu": 0.292}, "utilization": {"gpu": 0.43}}
    return Job.model_validate({**rec, **({"phases": phases} if phases is not None else {})})


def _run_on_nvl(e: Engine, limit_w: float, lock_mhz: float | None = None, ticks: int = 400) -> dict[str, float]:
    """Step the jobs on one NVL node whose boards hold ``limit_w`` (and ``lock_mhz``), as the benchmark does."""
    st = initial_state(NVL, "n")
    st = replace(st, gpus=tuple(replace(g, limit_w=limit_w, enforced_w=limit_w, lock_max_mhz=lock_mhz) for g in st.gpus))
    done: dict[str, float] = {}
    for t in range(ticks):
        st = node_physics.step_node(NVL, replace(st, load=e.loads({"n": 64}, {"n": 8})["n"]), 1.0)
        done.update({c.job_id: c.at_s for c in e.step(float(t), 1.0, {"n": speed_from_state(NVL, st)})})
    return done


def test_a_phased_job_slows_by_its_phase_mix_and_an_unphased_one_exactly_as_before() -> None:
    """Under 250 W the prefill phase (20 % of the time, 389 W natural) is throttled and the decode
    phase (150 W) is not: the job takes 100 s / OperatingPoint.throughput; the same job without
    phases (its mean draw 0.43 runs below 250 W) is not slowed at all."""
    e = Engine([serving_job("mix", PHASES), serving_job("flat", None)])
    e.due(0.0)
    e.bind("mix", "n", 0.0, 8)
    e.bind("flat", "n", 0.0, 8)
    done = _run_on_nvl(e, 250.0)
    mix = tuple(physics_gpu.Phase(s, c, u) for s, c, u in MIX)
    op = physics_gpu.board_operating_point(NVL_G, mix, 250.0)
    assert op.clock_ratios[0] < 0.9 and op.clock_ratios[1] == 1.0
    assert done["mix"] == pytest.approx(100.0 / op.throughput, rel=1e-6) and done["mix"] > 101.0
    assert done["flat"] == pytest.approx(100.0)


def test_a_clock_lock_slows_every_job_on_the_board_and_the_lower_of_cap_and_lock_wins() -> None:
    """A 1071 MHz lock (60 % of 1785) slows a compute-bound job to 60 % whatever the limit; a 1700 MHz
    lock above the clock a 250 W limit leaves changes nothing."""
    compute = Job.model_validate({"type": "job", "jobId": "c", "submitTimeOffsetSec": 0, "requests": {"cpu": 1, "gpu": 1},
                                  "work": {"gpuUnits": 60.0}, "sensitivity": {"cpu": 0.0, "gpu": 1.0},
                                  "utilization": {"gpu": 0.9}})
    for limit_w, lock, want in ((400.0, 1071.0, 100.0), (310.0, 1071.0, 100.0)):
        e = Engine([compute])
        e.due(0.0)
        e.bind("c", "n", 0.0, 8)
        assert _run_on_nvl(e, limit_w, lock)["c"] == pytest.approx(want, rel=1e-6)
    capped = physics_gpu.clock_ratio_for_limit(NVL_G, 0.9, 250.0)
    for lock_mhz in (None, 1700.0):
        e = Engine([compute])
        e.due(0.0)
        e.bind("c", "n", 0.0, 8)
        assert _run_on_nvl(e, 250.0, lock_mhz)["c"] == pytest.approx(60.0 / capped, rel=1e-6)


def test_loads_carry_phases_only_for_nodes_running_phased_jobs() -> None:
    e = Engine([serving_job("mix", PHASES), serving_job("flat", None)])
    e.due(0.0)
    e.bind("mix", "a", 0.0, 2)
    e.bind("flat", "b", 0.0, 2)
    loads = e.loads({"a": 8, "b": 8}, {"a": 2, "b": 2})
    assert loads["b"] == Load(cpu_util=loads["b"].cpu_util, gpu_util=(0.43, 0.0), gpu_jobs=loads["b"].gpu_jobs,
                              cpu_jobs=loads["b"].cpu_jobs)
    assert loads["a"].gpu_util == (0.43, 0.0)
    assert [len(p) for p in loads["a"].gpu_phases] == [2, 0] and loads["a"].gpu_phases[0][0].share == 0.2


def test_loads_name_the_pod_holding_each_busy_board_and_its_compute_share() -> None:
    from joulie_simulator.physics.gpusignals import mean_compute_share
    from joulie_simulator.physics.model import GpuJob

    e = Engine([serving_job("mix", PHASES), serving_job("flat", None)])
    e.due(0.0)
    e.bind("mix", "a", 0.0, 2)
    e.bind("flat", "b", 0.0, 2)
    loads = e.loads({"a": 8, "b": 8, "c": 8}, {"a": 2, "b": 2, "c": 2})
    flat = e.runs["flat"].job
    assert loads["b"].gpu_jobs == (GpuJob(0, "flat", flat.sensitivity.gpu, flat.namespace, "sim-flat", "work"),)
    assert loads["a"].gpu_jobs[0].compute_share == pytest.approx(mean_compute_share(loads["a"].gpu_phases[0]))
    assert loads["c"].gpu_jobs == ()  # an idle node's boards are free


def test_speed_from_state_takes_the_lower_of_the_cap_clock_and_the_lock() -> None:
    st = initial_state(NVL, "n")
    st = replace(st, gpus=tuple(replace(g, util=0.9, enforced_w=250.0, lock_max_mhz=(892.5 if g.index == 0 else 1785.0))
                                for g in st.gpus))
    sp = speed_from_state(NVL, st)
    assert sp.gpus[0] == 0.5 and sp.gpus[1] == gpu_factor(NVL_G, 0.9, 250.0) == sp.gpus[2]
    assert sp.gpu_locks[:2] == (0.5, 1.0) and sp.gpu_limits_w[0] == 250.0


def test_loads_name_each_running_pods_busy_cores_shared_out_when_they_ask_for_more_than_the_node() -> None:
    def job(i: str, cores: int) -> Job:
        return Job.model_validate({"jobId": i, "submitTimeOffsetSec": 0, "requests": {"cpu": cores},
                                   "work": {"cpuUnits": 1e9}, "utilization": {"cpu": 0.5}})

    e = Engine([job("x", 8), job("y", 24)])
    e.due(0.0)
    e.bind("x", "a", 0.0, 0)
    e.bind("y", "a", 0.0, 0)
    fits = {j.pod: j.busy_cores for j in e.loads({"a": 32}, {"a": 0})["a"].cpu_jobs}
    assert fits == {"sim-x": pytest.approx(4.0), "sim-y": pytest.approx(12.0)}  # request x utilisation
    over = {j.pod: j.busy_cores for j in e.loads({"a": 8}, {"a": 0})["a"].cpu_jobs}
    assert over == {"sim-x": pytest.approx(2.0), "sim-y": pytest.approx(6.0)}  # 16 busy on 8 cores: 1:3 kept
