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
