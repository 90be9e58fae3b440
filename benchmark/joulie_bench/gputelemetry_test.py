"""The controller gets each GPU Pod's per-board telemetry, the locks it writes reach the boards, and its
estimates of each job move toward the truth the benchmark knows."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from joulie_api.generated.nodetwin import NodeTwinSpec
from joulie_bench.agentcaps import AgentCaps
from joulie_bench.cli import main, parse_nodes
from joulie_bench.estimates import EstimateLog
from joulie_bench.gputelemetry import GpuTelemetry
from joulie_bench.nodes import node_hardware
from joulie_bench.sim import run
from joulie_controller.api import prior_estimate
from joulie_simulator.api import Emulator, Engine, Load
from joulie_workload.gen import GenOptions, generate
from joulie_workload.trace import Job


def _job(job_id: str, c: float, u: float = 0.8, gpus: int = 2) -> Job:
    return Job.model_validate(
        {
            "jobId": job_id,
            "submitTimeOffsetSec": 0,
            "class": "general",
            "workloadKind": "gpu-training",
            "requests": {"cpu": 4, "gpu": gpus},
            "work": {"cpuUnits": 10, "gpuUnits": 36000},
            "utilization": {"cpu": 0.5, "gpu": u},
            "sensitivity": {"cpu": 0.5, "gpu": c},
        }
    )


def _cluster(*jobs: Job) -> tuple[Emulator, Engine, AgentCaps, str]:
    nodes = parse_nodes("nvidia-h100-nvl-8gpu*1")
    emu = Emulator([(n.name, n.profile) for n in nodes], tick_s=5.0, clock=lambda: 0.0)
    emu.frozen = True
    engine = Engine(list(jobs))
    name = nodes[0].name
    for j in jobs:
        engine.due(0.0)
        engine.bind(j.job_id, name, 0.0, nodes[0].gpus)
    load = engine.loads({name: nodes[0].cpus}, {name: nodes[0].gpus})[name]
    emu.set_load(name, load)
    emu.step(2)
    caps = AgentCaps.for_nodes(emu, [(n.name, n.profile) for n in nodes], {n.name: node_hardware(n) for n in nodes})
    return emu, engine, caps, name


def test_each_gpu_pod_gets_one_sample_per_board_it_holds_and_no_truth_in_them() -> None:
    emu, engine, caps, node = _cluster(_job("mem", 0.2), _job("comp", 0.9, gpus=3))
    tel = GpuTelemetry(seed=1)
    got = tel.samples(emu, engine, caps.profiles, {"mem": "default/mem", "comp": "default/comp"})
    assert sorted(got) == ["default/comp", "default/mem"]
    assert len(got["default/mem"]) == 2 and len(got["default/comp"]) == 3
    boards = emu.node(node).state.gpus
    for s in got["default/mem"]:
        assert s.power_w is not None and s.power_w == pytest.approx(boards[0].power_w, rel=0.2)
        assert s.clock_ratio is not None and 0.9 < s.clock_ratio <= 1.0 and s.age_s == 0.0

    def mean(signal: str, key: str) -> float:
        return sum(float(getattr(s, signal)) for s in got[key]) / len(got[key])

    assert mean("dram_active", "default/mem") > mean("dram_active", "default/comp") + 0.2
    assert mean("tensor_active", "default/comp") > mean("tensor_active", "default/mem") + 0.1
    assert not hasattr(got["default/mem"][0], "compute_share")


def test_a_clock_lock_the_controller_writes_shows_in_the_samples_of_the_pods_on_that_node() -> None:
    emu, engine, caps, node = _cluster(_job("j", 0.5))
    caps.apply(
        node, NodeTwinSpec.model_validate({"nodeName": node, "profile": "eco", "gpu": {"clockLock": {"pctOfMax": 60}}})
    )
    emu.set_load(node, Load(cpu_util=0.1, gpu_util=(0.8, 0.8)))
    emu.step(2)
    ratios = [
        s.clock_ratio for s in GpuTelemetry(seed=1).samples(emu, engine, caps.profiles, {"j": "default/j"})["default/j"]
    ]
    assert all(r is not None and 0.55 < r < 0.63 for r in ratios), ratios


def test_a_node_that_is_off_exports_nothing() -> None:
    emu, engine, caps, node = _cluster(_job("j", 0.5))
    emu.power_off(node, graceful=False)
    assert GpuTelemetry(seed=1).samples(emu, engine, caps.profiles, {"j": "default/j"}) == {}


def _gpu_trace(seed: int) -> list[Job]:
    return generate(
        GenOptions(
            jobs=14,
            seed=seed,
            mean_interarrival_s=120.0,
            perf_ratio=0.0,
            eco_ratio=0.0,
            kind_shares={"gpu-training": 0.5, "gpu-inference": 0.5},
        )
    )


def test_the_work_aware_arm_learns_each_job_from_its_telemetry_and_moves_toward_the_truth() -> None:
    nodes = parse_nodes("intel-xeon-2s-rapl*1,nvidia-h100-nvl-8gpu*1")
    log = EstimateLog()
    r = run(_gpu_trace(3), nodes, "E0", 3, dt_s=10.0, estimates=log)
    assert r.jobs_completed == r.jobs_total
    jobs = log.by_job()
    assert len(jobs) >= 5
    observed = [p for pts in jobs.values() for p in pts if p.note != "prior"]
    assert observed, "the controller never moved an estimate: no telemetry reached it"
    # Before any telemetry the controller has only the kind's prior; each job's own c lies around it.
    prior = sum(abs(prior_estimate(p[0].kind).c - p[0].true_c) for p in jobs.values()) / len(jobs)
    last = sum(abs(p[-1].est_c - p[-1].true_c) for p in jobs.values()) / len(jobs)
    assert last < 0.8 * prior, (prior, last)


def test_estimates_plot_writes_the_png_and_the_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, png = tmp_path / "bench", tmp_path / "est" / "estimates.png"
    rc = main(
        [
            "--seeds",
            "1",
            "--first-seed",
            "3",
            "--jobs",
            "8",
            "--mean-interarrival-s",
            "120",
            "--eco-ratio",
            "0",
            "--perf-ratio",
            "0",
            "--kind-shares",
            "gpu-training=0.5,gpu-inference=0.5",
            "--policies",
            "A,E0",
            "--nodes",
            "intel-xeon-2s-rapl*1,nvidia-h100-nvl-8gpu*1",
            "--dt",
            "10",
            "--out",
            str(out),
            "--estimates-plot",
            str(png),
            "--estimates-arm",
            "E0",
        ]
    )
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader(png.with_suffix(".csv").open()))
    assert rows and {r["kind"] for r in rows} <= {"gpu-training", "gpu-inference"}
    assert all(0.0 <= float(r["true_c"]) <= 1.0 and 0.0 <= float(r["est_c"]) <= 1.0 for r in rows)
    assert "GPU jobs observed; mean |c estimate - truth|" in printed
    assert main(["--seeds", "1", "--out", str(out), "--estimates-plot", str(png), "--estimates-arm", "Z"]) == 2
