"""bench-live's pure parts: the live run gets the accelerated run's settings, and its figures are read right."""

from __future__ import annotations

from pathlib import Path

from joulie_bench.arms import settings_for
from joulie_bench.result import RunResult
from joulie_controller.api import Settings
from joulie_simcluster import livebench
from joulie_simcluster.context import RenderedSpec
from joulie_simcluster.deploy import reports
from joulie_simcluster.spec import load_spec

SPEC = Path("simulated-cluster/specs/bench-live.yaml")


def test_the_live_nodes_are_the_specs_with_their_profiles() -> None:
    nodes = livebench.bench_nodes(RenderedSpec.of(load_spec(SPEC)))
    assert [(n.name, n.profile.name, n.gpus) for n in nodes] == [
        ("xeon-0", "intel-xeon-2s-rapl", 0), ("xeon-1", "intel-xeon-2s-rapl", 0),
        ("h100-0", "nvidia-h100-nvl-8gpu", 8), ("h100-1", "nvidia-h100-nvl-8gpu", 8)]


def test_the_controller_manager_reads_back_the_accelerated_runs_settings() -> None:
    nodes = livebench.bench_nodes(RenderedSpec.of(load_spec(SPEC)))
    for policy in ("B", "C", "D", "E", "A-placement"):
        live = Settings.from_env(livebench.controller_env(policy, nodes, 0.6))
        want = settings_for(policy, nodes, 0.6)
        for f in livebench.SETTINGS_FIELDS:
            got, exp = live.at(f), want.at(f)
            assert (round(got, 3) if isinstance(got, float) else got) == (round(exp, 3) if isinstance(exp, float) else exp), f
    # A: the work-aware policy with nothing to spend: no slowdown budget, no power budget, so no cap.
    a = Settings.from_env(livebench.controller_env("A", nodes, 0.6))
    assert (a.policy.type, a.policy.slowdown_budget_pct, a.policy.power_budget_w) == ("work_aware_v1", 0.0, 0.0)


def test_only_policy_a_runs_pods_without_class_constraints_and_a_placement_writes_no_cap(tmp_path: Path) -> None:
    go = tmp_path / "go"
    assert livebench.runner_args("A", go) == ["--go-file", str(go), "--no-class-constraints"]
    assert livebench.runner_args("D", go) == ["--go-file", str(go)]
    assert livebench.runner_args("E", go) == livebench.runner_args("A-placement", go) == [
        "--go-file", str(go), "--placement", "soft"]
    nodes = livebench.bench_nodes(RenderedSpec.of(load_spec(SPEC)))
    values = livebench.values_for("D", nodes, 0.6)
    assert values["agent"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert "env" not in values["agent"]  # D's agents write the caps
    # A-placement writes no cap (E's decisions, never enforced); A's agents enforce "no cap" (defaults).
    assert livebench.values_for("A-placement", nodes, 0.6)["agent"]["env"] == {"SIMULATE_ONLY": "true"}
    assert "env" not in livebench.values_for("A", nodes, 0.6)["agent"]


def test_runner_counts_sum_the_per_class_and_node_series() -> None:
    body = ("joulie_sim_jobs_running 3.0\njoulie_sim_jobs_pending 1.0\n"
            'joulie_sim_job_submitted_total{class="general"} 5.0\njoulie_sim_job_submitted_total{class="eco"} 2.0\n'
            'joulie_sim_job_completed_total{class="general",node="xeon-0"} 2.0\n'
            'joulie_sim_job_completed_total{class="eco",node="h100-0"} 1.0\n'
            'joulie_sim_job_completed_created{class="eco",node="h100-0"} 1.7e9\n')
    assert reports.runner_counts(body) == {"submitted": 7.0, "running": 3.0, "pending": 1.0, "completed": 3.0}
    assert livebench.completed_per_node(body + 'joulie_sim_job_completed_total{class="eco",node="xeon-0"} 4.0\n') == \
        {"h100-0": 1, "xeon-0": 6}


def test_truth_totals_sum_host_energy_and_power() -> None:
    emulate = {"nodes": [{"name": "a", "host": {"energyJ": 100.0, "powerW": 50.0}},
                         {"name": "b", "host": {"energyJ": 20.5, "powerW": 7.5}}]}
    assert livebench.truth_totals(emulate) == (120.5, 57.5)


def _accel(policy: str, kwh: float, makespan: float) -> RunResult:
    return RunResult(policy, 0, kwh, kwh * 1.2, makespan, 30, 30, 1.0, 1000.0, 0, 0, makespan, 0.0, 1.0)


def test_the_comparison_shows_each_policy_both_ways_and_the_change_against_a() -> None:
    live = {"A": livebench.LiveRun("A", 0.40, 0.48, 350, 30, 30, 4100, {"h100-0": 20, "xeon-0": 10}),
            "D": livebench.LiveRun("D", 0.38, 0.45, 420, 30, 30, 3300)}
    accel = {"A": _accel("A", 0.39, 354), "D": _accel("D", 0.394, 438)}
    accel["A"].jobs_per_node = {"h100-1": 30}
    table = livebench.comparison(live, accel)
    assert "- A live: h100-0 20, xeon-0 10; accelerated: h100-1 30" in table
    assert "- D live: none; accelerated: none" in table
    assert "| A no Joulie (uncapped) | 0.4000 | 0.3900 | -2.5 % | 0.4800 | 350 | 354 | +1.1 % | 30/30 | 4100 |" in table
    assert "| D | -5.0 % | +1.0 % | +20.0 % | +23.7 % |" in table


def test_a_spec_whose_gpu_agents_get_no_tools_is_refused_as_it_would_cap_no_gpu(tmp_path: Path) -> None:
    spec = load_spec(SPEC)
    values = livebench.values_for("D", livebench.bench_nodes(RenderedSpec.of(spec)), 0.6)
    assert livebench.gpu_pools_without_tools(spec, values) == []
    blind = tmp_path / "blind.yaml"
    blind.write_text(SPEC.read_text().split("harness:")[0])
    assert livebench.gpu_pools_without_tools(load_spec(blind), values) == ["h100"]
