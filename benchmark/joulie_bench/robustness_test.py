"""Issue 35's benchmark parts: physics variants (the emulator moved, the controller's view not), E0 (E without
the power budget) and the budget's share of the slowdowns, the gpu-busy preset."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from joulie_bench.arms import ARMS, SLOWDOWN_BUDGET_PCT, describe_settings, settings_for
from joulie_bench.cli import build_parser, main, parse_nodes, parse_variants
from joulie_bench.estimates import EstimateLog
from joulie_bench.nodes import node_hardware
from joulie_bench.presets import PRESETS, apply_preset
from joulie_bench.result import RunResult
from joulie_bench.sim import CLUSTER, _Run, run
from joulie_bench.taushare import added_slowdowns_pct, budget_part, tau_shares
from joulie_workload.gen import GenOptions, generate
from joulie_workload.pods import pod_manifest


def test_e0_is_e_without_the_power_budget() -> None:
    nodes = parse_nodes("intel-xeon-2s-rapl*2,nvidia-h100-nvl-8gpu*1")
    e, e0 = ARMS["E"], ARMS["E0"]
    assert (e0.controller_policy, e0.power_policy, e0.placement, e0.writes_caps, e0.packs) == (
        e.controller_policy, e.power_policy, e.placement, e.writes_caps, e.packs)
    assert e.budget and not e0.budget
    assert settings_for("E", nodes, 0.6).policy.power_budget_w == pytest.approx(0.6 * sum(n.tdp_w for n in nodes))
    assert settings_for("E0", nodes, 0.6).policy.power_budget_w == 0.0
    assert settings_for("E0", nodes, 0.6).policy.slowdown_budget_pct == SLOWDOWN_BUDGET_PCT
    assert "no power budget" in describe_settings("E0", nodes, 0.6)
    assert "CLUSTER_POWER_BUDGET_W=" in describe_settings("E", nodes, 0.6)


def _result(policy: str, seed: int, run_s: dict[str, float]) -> RunResult:
    return RunResult(policy=policy, seed=seed, it_energy_kwh=1, facility_energy_kwh=1, makespan_s=1, jobs_total=len(run_s),
                     jobs_completed=len(run_s), p95_slowdown=1, mean_it_power_w=1, reconciles=0, cap_writes=0, end_s=1,
                     idle_it_w=1, idle_pue=1, run_s=run_s)


def test_the_share_of_jobs_past_tau_is_paired_per_job_and_the_budget_part_is_e_minus_e0() -> None:
    a = {1: _result("A", 1, {"j1": 100, "j2": 100, "j3": 100, "j4": 100}),
         2: _result("A", 2, {"j1": 100, "j2": 100})}
    results = [*a.values(),
               _result("E", 1, {"j1": 110, "j2": 103.5, "j3": 100, "j4": 102}),  # 2 of 4 past 3 %
               _result("E", 2, {"j1": 150, "j2": 100}),  # 1 of 2, worst +50 %
               _result("E0", 1, {"j1": 104, "j2": 100, "j3": 100, "j4": 100}),  # 1 of 4
               _result("E0", 2, {"j1": 100, "j2": 100})]  # none
    assert added_slowdowns_pct(results[2], a[1]) == pytest.approx([10.0, 3.5, 0.0, 2.0])
    shares = {s.policy: s for s in tau_shares(results, ["A", "E", "E0"], 3.0)}
    assert shares["E"].per_seed == {1: 50.0, 2: 50.0} and shares["E"].worst_pct == pytest.approx(50.0)
    assert shares["E0"].per_seed == {1: 25.0, 2: 0.0} and shares["E0"].over_pct.mean == pytest.approx(12.5)
    part = budget_part(list(shares.values()))
    assert part is not None and part.mean == pytest.approx(37.5)  # (25 + 50) / 2 percentage points


def test_the_gpu_busy_preset_sets_the_scenario_and_a_flag_beside_it_wins() -> None:
    p = build_parser()
    assert apply_preset(p, ["--preset", "gpu-busy", "--out", "x"]) is PRESETS["gpu-busy"]
    args = p.parse_args(["--preset", "gpu-busy", "--out", "x"])
    assert args.kind_shares.startswith("gpu-training=0.4,gpu-inference=0.4")
    assert (args.mean_interarrival_s, args.jobs, args.nodes) == (60.0, 300, "intel-xeon-2s-rapl*4,nvidia-h100-nvl-8gpu*2")
    p = build_parser()
    apply_preset(p, ["--preset", "gpu-busy", "--mean-interarrival-s", "90", "--out", "x"])
    args = p.parse_args(["--preset", "gpu-busy", "--mean-interarrival-s", "90", "--out", "x"])
    assert args.mean_interarrival_s == 90.0 and args.jobs == 300
    plain = build_parser().parse_args(["--out", "x"])
    assert (plain.mean_interarrival_s, plain.jobs, plain.kind_shares) == (40.0, 120, "")  # the default mix untouched
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--preset", "cpu-idle", "--out", "x"])


def test_physics_variants_parse_from_repeats_and_commas() -> None:
    assert parse_variants(None) == ["calibrated"]
    assert parse_variants(["gpu-exp-2.0,all", "gpu-exp-2.0", " compute-bound "]) == ["gpu-exp-2.0", "all", "compute-bound"]
    with pytest.raises(ValueError, match="--physics-variant: physics variant 'noisy'"):
        parse_variants(["noisy"])


def test_a_variant_moves_the_emulator_and_leaves_the_controllers_view_calibrated() -> None:
    nodes = parse_nodes("intel-xeon-2s-rapl*1,nvidia-h100-nvl-8gpu*1")
    jobs = generate(GenOptions(jobs=3, seed=1, kind_shares={"gpu-inference": 1.0}))
    r = _Run(jobs, nodes, ARMS["E"], settings_for("E", nodes, 0.6), 10.0, "all")
    gpu = nodes[1]
    true_gpu, seen_gpu, emu_gpu = (r.true_profile[gpu.name].physics.gpu, gpu.profile.physics.gpu,
                                   r.emu.node(gpu.name).profile.physics.gpu)
    assert true_gpu is not None and seen_gpu is not None and emu_gpu is not None
    assert true_gpu.clock_power_exponent == 2.0
    assert seen_gpu.clock_power_exponent == 2.5  # the nodes the controller reads stay calibrated
    assert r.hardware[gpu.name] == node_hardware(gpu)
    assert emu_gpu.clock_power_exponent == 2.0  # the emulator runs the variant
    # The engine's jobs are more compute-bound; the Pods (what the controller reads) are the same.
    engine_job = r.engine.runs[jobs[0].job_id].job
    assert engine_job.sensitivity.gpu > jobs[0].sensitivity.gpu
    assert r.manifests[jobs[0].job_id] == pod_manifest(jobs[0], CLUSTER, with_class_constraints=True, placement="soft")
    assert r.manifests[jobs[0].job_id] == pod_manifest(engine_job, CLUSTER, with_class_constraints=True, placement="soft")


def test_the_controller_sees_jobs_more_compute_bound_than_their_kind_through_their_telemetry() -> None:
    # Serving jobs the Pods call gpu-inference (a memory-bound prior), made compute-bound in the emulator: the
    # Pods are the same, so only the GPUs' telemetry can tell the controller; its estimates follow the truth.
    nodes = parse_nodes("nvidia-h100-nvl-8gpu*2")
    jobs = generate(GenOptions(jobs=12, seed=2, mean_interarrival_s=30, perf_ratio=0, eco_ratio=0,
                               kind_shares={"gpu-inference": 1.0}))

    def last_estimates(variant: str) -> tuple[float, float]:
        log = EstimateLog()
        e = run(jobs, nodes, "E0", 2, dt_s=10, variant=variant, estimates=log)
        assert e.variant == variant and e.jobs_completed == len(jobs)
        final = [pts[-1] for pts in log.by_job().values()]
        return sum(p.est_c for p in final) / len(final), sum(p.true_c for p in final) / len(final)

    (est_cal, true_cal), (est_cb, true_cb) = last_estimates("calibrated"), last_estimates("compute-bound")
    assert true_cb > true_cal + 0.2  # the variant moved the truth (0.26 -> 0.56 for the kind's mean)
    assert est_cb > est_cal + 0.15  # and the controller, reading only telemetry, followed it


def test_a_short_run_per_variant_says_which_and_sets_them_side_by_side(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench"
    rc = main(["--seeds", "1", "--jobs", "6", "--mean-interarrival-s", "30", "--eco-ratio", "0", "--nodes",
               "intel-xeon-2s-rapl*1,nvidia-h100-nvl-8gpu*1", "--dt", "10", "--policies", "A,E,E0",
               "--physics-variant", "calibrated", "--physics-variant", "all", "--out", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert "physics variant: calibrated:" in printed and "physics variant: all: all at once" in printed
    for v in ("calibrated", "all"):
        rows = list(csv.DictReader((out / v / "runs.csv").open()))
        assert {r["policy"] for r in rows} == {"A", "E", "E0"} and {r["physics_variant"] for r in rows} == {v}
        assert all(0 <= float(r["gpu_allocated"]) <= 1 for r in rows)
        md = (out / v / "results.md").read_text()
        assert f"physics variant {v}" in md and "Jobs slowed past τ = 3 %" in md and "power budget's part" in md
        assert "## GPU allocation per arm" in md
    table = (out / "variants.md").read_text()
    assert "| calibrated | E work-aware |" in table and "| all | E0 work-aware, no budget |" in table
    assert "- all: all at once" in table and "GPU allocated" in printed
    assert main(["--physics-variant", "noisy", "--out", str(tmp_path / "bad")]) == 2
    assert "--physics-variant: physics variant 'noisy'" in capsys.readouterr().err
