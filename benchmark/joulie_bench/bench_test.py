"""A short benchmark run end to end: every policy completes the trace and the outputs are written."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from joulie_bench.cli import main, parse_nodes, parse_policies, progress_bar
from joulie_bench.idlepower import measure_idle_by_kind_w
from joulie_bench.paired import METRICS as PAIRED_METRICS
from joulie_bench.paired import REGIMES
from joulie_bench.sim import run
from joulie_workload.gen import GenOptions, generate
from joulie_workload.trace import Job, write_trace


def test_short_bench_writes_csv_and_png_and_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench"
    # No eco jobs: with one GPU node, which B keeps performance, an eco GPU job would never be placed
    # (seed 2 draws one since workloadgen draws kinds) and the run would stop at its horizon.
    rc = main(["--seeds", "2", "--jobs", "10", "--mean-interarrival-s", "20", "--eco-ratio", "0", "--nodes",
               "intel-xeon-2s-rapl*2,nvidia-h100-nvl-8gpu*1", "--dt", "10", "--out", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert "accelerated clock" in printed and "joulie_controller.reconcile" in printed
    assert "Energy saved vs A" in printed and "Energy split" in printed
    rows = list(csv.DictReader((out / "runs.csv").open()))
    assert sorted({r["policy"] for r in rows}) == ["A", "A-placement", "B", "C", "D", "E", "ES", "S"] and len(rows) == 16
    assert all(r["jobs_completed"] == "10" for r in rows), rows
    assert all(float(r["it_energy_kwh"]) > 0 and float(r["makespan_s"]) > 0 for r in rows)
    for r in rows:
        it, idle, dyn = float(r["it_energy_kwh"]), float(r["idle_it_energy_kwh"]), float(r["dynamic_it_energy_kwh"])
        assert idle > 0 and dyn > 0 and idle + dyn == pytest.approx(it, abs=2e-4), r
        assert sum(float(r[f"{k}_energy_kwh"]) for k in ("cpu", "gpu", "other")) == pytest.approx(it, abs=5e-4), r
        assert sum(float(r[f"{k}_idle_kwh"]) for k in ("cpu", "gpu", "other")) == pytest.approx(idle, abs=5e-4), r
        assert float(r["gpu_idle_kwh"]) > 0 and float(r["cpu_idle_kwh"]) > 0
        assert float(r["energy_per_job_kwh"]) == pytest.approx(float(r["facility_energy_kwh"]) / 10, abs=1e-4)
        assert 1.0 - 1e-6 <= float(r["p50_slowdown"]) <= float(r["p95_slowdown"]) <= float(r["p99_slowdown"]), r
    summary = list(csv.DictReader((out / "summary.csv").open()))
    assert {r["metric"] for r in summary} >= {"it_energy_kwh", "facility_energy_kwh", "makespan_s", "p95_slowdown"}
    for png in (out / "energy_vs_makespan.png", out / "energy_split.png", out / "paired_change.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "results.md").read_text()
    assert "| E work-aware |" in md and "| A-placement A + E's placement |" in md and "open: throughput" in md
    per_seed = list(csv.DictReader((out / "paired_seeds.csv").open()))
    assert {r["seed"] for r in per_seed} == {"1", "2"} and {r["policy"] for r in per_seed} == {"A-placement", "B", "C", "D", "E",
                                                                                              "S", "ES"}
    assert (out / "traces" / "seed-1.jsonl").is_file()
    lines = (out / "paired.csv").read_text().splitlines()
    assert lines[0] == "policy,regime,metric,mean_change_pct,ci95_low_pct,ci95_high_pct,n_seeds"
    paired = list(csv.DictReader(lines))
    assert len(paired) == 7 * len(REGIMES) * len(PAIRED_METRICS)
    assert {(r["policy"], r["regime"], r["metric"]) for r in paired} == {
        (p, g, m) for p in ("A-placement", "B", "C", "D", "E", "S", "ES") for g in REGIMES for m in PAIRED_METRICS}
    power = {r["policy"]: r for r in csv.DictReader((out / "power.csv").open())}
    assert set(power) == {"A", "A-placement", "B", "C", "D", "E", "S", "ES"} and power["A"]["boots"] == "0.00"
    assert "## Power states" in md and "| ES work-aware + suspend |" in md
    receipts = list(csv.DictReader((out / "receipts.csv").open()))
    assert len(receipts) == 16 * 10 and all(abs(float(r["error"])) < 0.1 for r in receipts)
    assert "## Energy receipts against the emulator's truth" in md and "| D power budget | 20 |" in md
    for r in paired:
        if r["regime"] == "completion" or r["metric"] in ("facility_energy", "it_energy", "throughput"):
            assert r["n_seeds"] == "2", r
            assert float(r["ci95_low_pct"]) <= float(r["mean_change_pct"]) <= float(r["ci95_high_pct"]), r


def test_a_trace_directory_runs_each_file_as_one_paired_unit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    for seed in (4, 5):
        write_trace(traces / f"mix-{seed}.jsonl", generate(GenOptions(jobs=6, seed=seed, mean_interarrival_s=20, eco_ratio=0)))
    out = tmp_path / "bench"
    rc = main(["--trace", str(traces), "--policies", "D", "--nodes", "intel-xeon-2s-rapl*2,nvidia-h100-nvl-8gpu*1",
               "--dt", "10", "--out", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    rows = list(csv.DictReader((out / "runs.csv").open()))
    # A is always run: it is the baseline of paired.csv.
    assert sorted((r["trace"], r["policy"]) for r in rows) == [
        ("mix-4.jsonl", "A"), ("mix-4.jsonl", "D"), ("mix-5.jsonl", "A"), ("mix-5.jsonl", "D")]
    assert all(r["jobs_total"] == "6" for r in rows)
    paired = list(csv.DictReader((out / "paired.csv").open()))
    assert len(paired) == len(REGIMES) * len(PAIRED_METRICS)
    assert {r["n_seeds"] for r in paired if r["regime"] == "completion"} == {"2"}
    assert main(["--trace", str(tmp_path / "none"), "--out", str(out)]) == 2
    assert "--trace:" in capsys.readouterr().err


def test_policies_are_ids_or_letters_and_a_comes_first() -> None:
    assert parse_policies("A,B,D") == parse_policies("abd") == ["A", "B", "D"]
    assert parse_policies("D,C") == ["A", "D", "C"]
    assert parse_policies("a-placement,E") == ["A", "A-placement", "E"]
    assert parse_policies("A-placement") == ["A", "A-placement"]
    with pytest.raises(ValueError, match="'X' is not a policy id"):
        parse_policies("A,X")


def test_work_aware_caps_nothing_where_all_work_is_compute_bound() -> None:
    # Compute-bound kinds only: E and A-placement must run exactly as A does (same energy, same time).
    nodes = parse_nodes("intel-xeon-2s-rapl*2,nvidia-h100-nvl-8gpu*1")
    jobs = generate(GenOptions(jobs=8, seed=5, mean_interarrival_s=20, eco_ratio=0,
                               kind_shares={"cpu-compute": 1.0}))
    a = run(jobs, nodes, "A", 5, dt_s=10)
    e = run(jobs, nodes, "E", 5, dt_s=10)
    assert e.jobs_completed == a.jobs_completed == 8
    assert e.it_energy_kwh == pytest.approx(a.it_energy_kwh, rel=2e-3)
    assert e.makespan_s == pytest.approx(a.makespan_s, rel=2e-3)


def test_work_aware_caps_memory_bound_gpu_work_and_saves_energy_on_it() -> None:
    # Inference only (memory-bound decode): E caps the boards it runs on and uses less energy per
    # unit of work than A, within its slowdown budget (3 %) plus the queueing it causes.
    nodes = parse_nodes("nvidia-h100-nvl-8gpu*2")
    jobs = generate(GenOptions(jobs=12, seed=2, mean_interarrival_s=30, perf_ratio=0, eco_ratio=0,
                               kind_shares={"gpu-inference": 1.0}))
    a = run(jobs, nodes, "A", 2, dt_s=10)
    e = run(jobs, nodes, "E", 2, dt_s=10)
    assert e.jobs_completed == a.jobs_completed == 12
    assert e.cap_writes > 0
    assert e.energy_by_kind_kwh["gpu"] < a.energy_by_kind_kwh["gpu"]
    assert e.makespan_s <= a.makespan_s * 1.05


def test_joulie_writes_caps_and_they_cost_a_cpu_bound_job_time() -> None:
    # One long, fully CPU-sensitive job on a one-node-per-family cluster: under B the controller
    # keeps the GPU node performance and may eco the second CPU node; the job lands where the
    # scheduler says. What must hold: A writes no caps, B does, and every job finishes.
    nodes = parse_nodes("intel-xeon-2s-rapl*2,nvidia-h100-nvl-8gpu*1")
    jobs = generate(GenOptions(jobs=6, seed=3, mean_interarrival_s=10, gpu_ratio=0.5))
    a = run(jobs, nodes, "A", 3, dt_s=10)
    b = run(jobs, nodes, "B", 3, dt_s=10)
    assert a.cap_writes == 0 and a.reconciles == 0
    assert b.cap_writes > 0 and b.reconciles > 0
    assert a.jobs_completed == b.jobs_completed == 6
    assert a.p95_slowdown >= 1.0 - 1e-6


def test_bad_options_are_refused_with_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--policies", "AX", "--out", str(tmp_path)]) == 2
    assert "--policies: 'AX'" in capsys.readouterr().err
    assert main(["--nodes", "intel-xeon-2s-rapl*zero", "--out", str(tmp_path)]) == 2
    assert "--nodes: 'intel-xeon-2s-rapl*zero'" in capsys.readouterr().err


def test_the_baseline_starts_every_board_at_its_profiles_default_limit() -> None:
    from joulie_simulator.api import Emulator

    nodes = parse_nodes("nvidia-h100-nvl-8gpu*1,intel-xeon-2s-rapl*1")
    emu = Emulator([(n.name, n.profile) for n in nodes], tick_s=1.0, clock=lambda: 0.0)
    gpu_node = next(n for n in nodes if n.gpus)
    # A board boots at its default limit (NVML's definition), so the benchmark writes no setup limit.
    assert {g.limit_w for g in emu.node(gpu_node.name).state.gpus} == {310.0}


def test_the_progress_bar_stays_off_when_stderr_is_not_a_terminal() -> None:
    # pytest captures stderr: not a terminal, so no bar codes end up in logs or CI output.
    assert progress_bar(4).disable


def test_an_swf_log_runs_through_traceextract_cut_into_paired_chunks(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "tiny.swf"
    lines = ["; Computer: test", "; MaxProcs: 64"]
    for i in range(6):  # job, submit, wait, run, procs, cpu, mem, req procs, req time, req mem, status, ...
        lines.append(f"{i + 1} {100 + 30 * i} 0 {120 + 10 * i} {4 + i} -1 -1 {4 + i} 600 -1 1 1 1 -1 1 -1 -1 -1")
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "bench"
    rc = main(["--trace", str(log), "--swf-chunk-jobs", "3", "--policies", "A,E", "--nodes", "intel-xeon-2s-rapl*2",
               "--dt", "10", "--out", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert "tiny.swf: SWF, 6 jobs extracted (0 skipped; kinds cpu-compute 6), 2 chunks of up to 3 jobs" in printed
    rows = list(csv.DictReader((out / "runs.csv").open()))
    assert sorted((r["trace"], r["policy"]) for r in rows) == [
        ("tiny.swf#1", "A"), ("tiny.swf#1", "E"), ("tiny.swf#2", "A"), ("tiny.swf#2", "E")]
    assert all(r["jobs_completed"] == "3" for r in rows)
    # CPU-compute jobs only: the work-aware policy caps nothing, so E costs what A costs.
    e_it = [float(r["it_energy_kwh"]) for r in rows if r["policy"] == "E"]
    a_it = [float(r["it_energy_kwh"]) for r in rows if r["policy"] == "A"]
    assert e_it == pytest.approx(a_it, rel=2e-3)


def _burst(start_s: float, n: int, prefix: str) -> list[Job]:
    jobs = generate(GenOptions(jobs=n, seed=7, mean_interarrival_s=2, eco_ratio=0, perf_ratio=0, gpu_ratio=0,
                               cpu_median_s=300, prefix=prefix))
    return [j.model_copy(update={"submit_s": j.submit_s + start_s}) for j in jobs]


def test_suspend_powers_idle_nodes_off_through_a_lull_and_back_on_for_the_next_burst() -> None:
    # Two bursts of CPU jobs 3 h apart on four Xeons: in the lull the power policy suspends every node
    # but the pool's floor of one; the second burst (30 jobs, ~300 cores in a minute) fits on no single
    # powered node and resumes others.
    jobs = _burst(0, 12, "early") + _burst(3 * 3600, 30, "late")
    nodes = parse_nodes("intel-xeon-2s-rapl*4")
    a = run(jobs, nodes, "A", seed=1, dt_s=10)
    s = run(jobs, nodes, "S", seed=1, dt_s=10, suspend_after_s=600)
    assert a.jobs_completed == s.jobs_completed == 42
    assert a.boots == 0 and a.node_hours_off == 0
    # Under A every node is powered all the time: its idle baseline is the cluster's idle power x the
    # run's duration (the nodes measured one by one add up to the cluster measured at once).
    assert a.idle_energy_kwh == pytest.approx(sum(measure_idle_by_kind_w(nodes, 10).values()) * a.end_s / 3.6e6, rel=0.01)
    assert s.boots >= 1, "the second burst resumed no node"
    assert s.node_hours_off > 3 * 2.0, s.node_hours_off  # three nodes off for most of the 3 h lull
    assert s.idle_energy_kwh < 0.6 * a.idle_energy_kwh
    assert s.idle_by_kind_kwh["other"] > 0 and s.dynamic_energy_kwh > 0
    assert s.it_energy_kwh < a.it_energy_kwh
    boot_s = nodes[0].profile.physics.boot_s
    # No Pod waits past a resume (boot) plus a few reconcile and scheduling cycles.
    assert max(s.waits_s) <= boot_s + 3 * 60 + 60, max(s.waits_s)


def test_the_suspend_sweep_writes_the_trade_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench"
    rc = main(["--seeds", "2", "--jobs", "12", "--mean-interarrival-s", "300", "--eco-ratio", "0", "--nodes",
               "intel-xeon-2s-rapl*3", "--gpu-ratio", "0", "--policies", "ES", "--suspend-sweep", "300,600",
               "--dt", "10", "--out", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    assert "ES trade-off against SUSPEND_AFTER" in printed
    rows = list(csv.DictReader((out / "tradeoff.csv").open()))
    assert {r["suspend_after_s"] for r in rows} == {"300", "600"}
    assert {r["metric"] for r in rows} >= {"open_facility_energy_pct", "p95_wait_added_s", "makespan_pct", "boots"}
    off = {r["suspend_after_s"]: float(r["mean"]) for r in rows if r["metric"] == "node_hours_off"}
    assert off["300"] >= off["600"] > 0  # suspending sooner leaves nodes off at least as long
    assert (out / "tradeoff.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["--suspend-sweep", "5,x", "--out", str(out)]) == 2
    assert "--suspend-sweep: 'x' is not a number of seconds" in capsys.readouterr().err


def test_help_prints_every_flag_with_its_percent_signs(capsys: pytest.CaptureFixture[str]) -> None:
    """`--help` expands every flag's help (a bare '%' in a preset's summary made argparse raise)."""
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "--preset" in out and "% GPU" in out and "--physics-variant" in out
