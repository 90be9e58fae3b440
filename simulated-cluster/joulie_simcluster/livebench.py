"""``simcluster bench-live``: the benchmark's policies on the live simulated cluster, set beside the
accelerated clock's prediction for the same trace and Nodes.

The accelerated benchmark (``benchmark/joulie_bench``) drives the real decision code in one process on
virtual time; it is fast enough for many seeds but leaves out what a cluster adds: kube-scheduler
and the extender over HTTP, agents writing caps through the emulated sysfs/NVML, node power reaching
the controller manager through OTLP, Prometheus and a rate window. This runs one trace through all
of that, one policy after the other on the same cluster, in real time, and measures:

- IT energy: the emulator's own host energy counters (``/debug/emulate`` ``host.energyJ``, summed
  over the Nodes) from the first job's submission to the last job's completion;
- facility energy: the IT power sampled each second through the accelerated benchmark's PUE model;
- makespan, jobs completed, mean IT power.

Every policy gets a fresh deploy (a new emulator, so the same starting temperatures), the workload
runner held (``--go-file``) until every component reports, so both measurements start at the
trace's first second. Policy A (no Joulie) runs Pods without class constraints and a controller
that caps nothing: work_aware_v1 with a slowdown budget of 0, which leaves every CPU at its maximum
and every board at its default limit, as the accelerated A starts them (a persistent board would
otherwise power on at its maximum); every Node is labelled performance and its Pods still pass the
extender, which the accelerated A leaves out. A-placement runs E's controller with the agents in
``SIMULATE_ONLY`` (no cap written). E's Pods, like A-placement's, carry only the performance
affinity (``--placement soft``).

Pure helpers first (settings to the chart's values, the runner's /metrics, the comparison); the
shell (``run``) after.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from joulie_api import names
from joulie_api.controller_env import env_name
from joulie_bench.arms import ARMS, settings_for
from joulie_bench.nodes import BenchNode
from joulie_bench.result import RunResult
from joulie_bench.sim import pue
from joulie_bench.sim import run as accelerated_run
from joulie_hwprofiles.schema import builtin_profile
from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.deploy.processes import stop_deployed
from joulie_simcluster.deploy.reports import http_ok, runner_counts
from joulie_simcluster.deploy.start import DeployOptions, deploy
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes import kube, process
from joulie_simcluster.spec import ClusterSpec, SpecError
from joulie_simcluster.state import StateDir
from joulie_workload.gen import GenOptions, generate
from joulie_workload.pods import LABEL_PART_OF, PART_OF
from joulie_workload.trace import Job, TraceError, load_trace, write_trace

DEFAULT_SPEC: Final = Path("simulated-cluster/specs/bench-live.yaml")
SAMPLE_S: Final = 1.0
GPU_TAINT_TOLERATION: Final = {"key": names.RESOURCE_NVIDIA_GPU, "operator": "Exists", "effect": "NoSchedule"}
_COMPLETED: Final = re.compile(r'^joulie_sim_job_completed_total\{.*\bnode="(?P<node>[^"]*)".*\} (?P<value>\S+)$')
SETTINGS_FIELDS: Final = (
    "policy.type", "policy.static_hp_frac", "policy.queue_hp_base_frac", "policy.queue_hp_min",
    "policy.queue_perf_per_hp_node", "policy.power_budget_w", "policy.budget_min_cap_pct", "caps.cpu_performance_pct",
    "caps.gpu_performance_pct", "caps.cpu_eco_pct", "caps.gpu_eco_pct", "policy.slowdown_budget_pct",
    "policy.forecast_horizon_s", "trusted_namespaces",
)
"""The controller settings the accelerated benchmark sets (``joulie_bench.arms.settings_for``); the
live run passes the same values as the controller manager's environment."""


@dataclass(frozen=True)
class LiveRun:
    policy: str
    it_energy_kwh: float
    facility_energy_kwh: float
    makespan_s: float
    jobs_total: int
    jobs_completed: int
    mean_it_power_w: float
    jobs_per_node: Mapping[str, int] = dataclasses.field(default_factory=dict)


def bench_nodes(rendered: RenderedSpec) -> list[BenchNode]:
    """The spec's Nodes as the accelerated benchmark models them (same names, same profiles)."""
    spec = rendered.spec
    out = []
    for node in rendered.nodes:
        meta = node["metadata"]
        out.append(BenchNode(meta["name"], builtin_profile(spec.pool(meta["labels"][names.LABEL_SIM_POOL]).profile)))
    return out


def gpu_pools_without_tools(spec: ClusterSpec, values: Mapping[str, Any]) -> list[str]:
    """Pools whose Nodes have GPUs but whose agents get no GPU tools: no GPU cap could be written
    there, so every policy would run those boards uncapped while the accelerated run caps them."""
    return [p.name for p in spec.pools
            if (builtin_profile(p.profile).gpus is not None and spec.tool_delivery(p.name, values) != "mounted")]


def controller_env(policy: str, nodes: Sequence[BenchNode], budget_frac: float) -> dict[str, str]:
    """The controller manager's environment for `policy`: the accelerated run's settings, by their
    documented names. A: the work-aware policy with a zero slowdown budget and no power budget, which
    caps nothing (CPUs at their maximum, boards at their default limit)."""
    s = settings_for(policy, nodes, budget_frac)
    if policy == "A":
        s = dataclasses.replace(s, policy=dataclasses.replace(s.policy, type="work_aware_v1", slowdown_budget_pct=0.0,
                                                              power_budget_w=0.0))
    return {env_name(f): _env_value(s.at(f)) for f in SETTINGS_FIELDS}


def _env_value(v: Any) -> str:
    if isinstance(v, tuple):  # a comma list (TRUSTED_NAMESPACES)
        return ",".join(v)
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def values_for(policy: str, nodes: Sequence[BenchNode], budget_frac: float) -> dict[str, Any]:
    """The chart values of one policy's deploy: agents on the GPU Nodes too, the policy's settings.
    A-placement: the agents write nothing (``SIMULATE_ONLY``)."""
    agent: dict[str, Any] = {"tolerations": [GPU_TAINT_TOLERATION]}
    if policy == "A-placement":
        agent["env"] = {"SIMULATE_ONLY": "true"}
    return {"agent": agent, "controllerManager": {"env": controller_env(policy, nodes, budget_frac)}}


def runner_args(policy: str, go_file: Path) -> list[str]:
    extra = {"none": ["--no-class-constraints"], "soft": ["--placement", "soft"]}.get(ARMS[policy].placement, [])
    return ["--go-file", str(go_file), *extra]


def completed_per_node(metrics: str) -> dict[str, int]:
    """Completed jobs by Node from the runner's ``joulie_sim_job_completed_total{class,node}``."""
    out: dict[str, int] = {}
    for line in metrics.splitlines():
        m = _COMPLETED.match(line)
        if m:
            out[m["node"]] = out.get(m["node"], 0) + int(float(m["value"]))
    return dict(sorted(out.items()))


def placement(per_node: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {c}" for n, c in per_node.items()) or "none"


def truth_totals(emulate: Mapping[str, Any]) -> tuple[float, float]:
    """(host energy J, host power W) summed over the emulator's Nodes (``/debug/emulate``)."""
    nodes = emulate.get("nodes") or []
    return (sum(float(n["host"]["energyJ"]) for n in nodes), sum(float(n["host"]["powerW"]) for n in nodes))


def _pct(new: float, base: float) -> str:
    return f"{100.0 * (new - base) / base:+.1f} %" if base else "n/a"


def comparison(live: Mapping[str, LiveRun], accel: Mapping[str, RunResult]) -> str:
    """The table a user reads: each policy live and accelerated, then each policy's change against A."""
    head = ("| policy | IT kWh live | IT kWh accelerated | Δ | facility kWh live | makespan s live | "
            "makespan s accelerated | Δ | jobs live | mean IT W live |")
    rows = [head, "|" + "---|" * 10]
    for p, lv in live.items():
        ac = accel[p]
        rows.append(f"| {p} {ARMS[p].name} | {lv.it_energy_kwh:.4f} | {ac.it_energy_kwh:.4f} | "
                    f"{_pct(ac.it_energy_kwh, lv.it_energy_kwh)} | {lv.facility_energy_kwh:.4f} | {lv.makespan_s:.0f} | "
                    f"{ac.makespan_s:.0f} | {_pct(ac.makespan_s, lv.makespan_s)} | {lv.jobs_completed}/{lv.jobs_total} | "
                    f"{lv.mean_it_power_w:.0f} |")
    rows += ["", "Jobs per Node (where the policy and the scoring put the work):"]
    for p, lv in live.items():
        rows.append(f"- {p} live: {placement(lv.jobs_per_node)}; accelerated: {placement(accel[p].jobs_per_node)}")
    if "A" in live:
        rows += ["", "| policy vs A | IT energy live | IT energy accelerated | makespan live | makespan accelerated |",
                 "|---|---|---|---|---|"]
        for p in live:
            if p != "A":
                rows.append(f"| {p} | {_pct(live[p].it_energy_kwh, live['A'].it_energy_kwh)} | "
                            f"{_pct(accel[p].it_energy_kwh, accel['A'].it_energy_kwh)} | "
                            f"{_pct(live[p].makespan_s, live['A'].makespan_s)} | "
                            f"{_pct(accel[p].makespan_s, accel['A'].makespan_s)} |")
    return "\n".join(rows)


def write_results(out: Path, live: Mapping[str, LiveRun], accel: Mapping[str, RunResult]) -> None:
    with (out / "bench-live.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["policy", "source", "it_energy_kwh", "facility_energy_kwh", "makespan_s", "jobs_completed",
                    "jobs_total", "mean_it_power_w"])
        for p, lv in live.items():
            w.writerow([p, "live", f"{lv.it_energy_kwh:.6f}", f"{lv.facility_energy_kwh:.6f}", f"{lv.makespan_s:.1f}",
                        lv.jobs_completed, lv.jobs_total, f"{lv.mean_it_power_w:.1f}"])
            ac = accel[p]
            w.writerow([p, "accelerated", f"{ac.it_energy_kwh:.6f}", f"{ac.facility_energy_kwh:.6f}", f"{ac.makespan_s:.1f}",
                        ac.jobs_completed, ac.jobs_total, f"{ac.mean_it_power_w:.1f}"])


# --- the shell -------------------------------------------------------------------------------


def prepare_trace(trace: Path | None, gen: GenOptions, out: Path) -> Path:
    """The trace to run: `trace`, checked line by line, or one generated from `gen` into ``out/trace.jsonl``.
    SpecError (exit 2, nothing started) naming the bad line or option."""
    if trace is not None:
        try:
            load_trace(trace)
        except TraceError as e:
            raise SpecError(f"--trace: {e}") from None
        return trace
    try:
        jobs = generate(gen)
    except ValueError as e:
        raise SpecError(str(e)) from None
    out.mkdir(parents=True, exist_ok=True)
    write_trace(out / "trace.jsonl", jobs)
    return out / "trace.jsonl"



def _get_json(url: str) -> dict[str, Any]:
    ok, body = http_ok(url)
    if not ok:
        raise RuntimeFailure(f"{url}: {body}")
    return dict(json.loads(body))


def _delete_workload_pods(state: StateDir, jobs: Sequence[Job]) -> None:
    """A run cut short leaves its Pods; the next policy's runner would find their names taken."""
    core = kube.core_api(state.kubeconfig)
    for ns in sorted({j.namespace for j in jobs}):
        core.delete_collection_namespaced_pod(ns, label_selector=f"{LABEL_PART_OF}={PART_OF}", grace_period_seconds=0)


def measure(
    state: StateDir, policy: str, jobs: Sequence[Job], nameplate_w: float, timeout_s: float,
    progress: Callable[[str], None], go_file: Path,
) -> LiveRun:
    """Starts the held runner and measures until every job completed (or `timeout_s`)."""
    env = state.read_deploy_env() or {}
    emulate_url, runner_url = env["URL_simulator"], env["URL_workload"]
    e0, _ = truth_totals(_get_json(emulate_url))
    go_file.touch()
    t0 = time.monotonic()
    facility_j = 0.0
    last_t, last_report = t0, t0
    counts: dict[str, float] = {}
    body = ""
    while True:
        time.sleep(SAMPLE_S)
        now = time.monotonic()
        _, it_w = truth_totals(_get_json(emulate_url))
        facility_j += it_w * pue(it_w, nameplate_w, now - t0) * (now - last_t)
        last_t = now
        ok, got = http_ok(runner_url)
        if ok:
            body, counts = got, runner_counts(got)
        done = int(counts.get("completed", 0))
        if done >= len(jobs) or now - t0 > timeout_s:
            break
        if now - last_report >= 15:
            last_report = now
            progress(f"{policy}: {done}/{len(jobs)} jobs completed, {counts.get('running', 0):.0f} running, "
                     f"{counts.get('pending', 0):.0f} pending; IT {it_w / 1000:.2f} kW; {now - t0:.0f}s")
    e1, _ = truth_totals(_get_json(emulate_url))
    wall = time.monotonic() - t0
    first_submit = min((j.submit_s for j in jobs), default=0.0)  # as the accelerated makespan counts
    if done < len(jobs):
        progress(f"{policy}: stopped after {timeout_s:.0f}s (--timeout-s) with {done}/{len(jobs)} jobs completed")
    return LiveRun(policy, (e1 - e0) / 3.6e6, facility_j / 3.6e6, wall - first_submit, len(jobs), done,
                   (e1 - e0) / wall if wall else 0.0, completed_per_node(body))


@dataclass(frozen=True)
class LiveBenchOptions:
    """One bench-live run beyond the settings (timing, hwemu, binaries and keep come from there)."""

    trace: Path
    policies: Sequence[str]
    budget_frac: float
    """D's budget as a share of the Nodes' TDP sum."""
    crd_dir: Path
    daemonset_for: Callable[[list[Path]], dict[str, Any]]
    """The agent DaemonSet the install of these values files would create."""
    out: Path
    """The results directory."""
    timeout_s: float
    """Most wall seconds one policy's run may take."""


def run(ctx: Context, rendered: RenderedSpec, options: LiveBenchOptions) -> int:
    state, progress, timing, spec = ctx.state, ctx.progress, ctx.settings.timing, rendered.spec
    trace, policies, budget_frac, out, timeout_s = (options.trace, options.policies, options.budget_frac, options.out,
                                                   options.timeout_s)
    jobs = load_trace(trace)
    nodes = bench_nodes(rendered)
    blind = gpu_pools_without_tools(spec, values_for("D", nodes, budget_frac))
    if blind:
        raise RuntimeFailure(
            f"spec {spec.name}: the agents of pool(s) {', '.join(blind)} get no GPU tools (toolDelivery none), so no GPU "
            f"cap would be written; set harness.pools.<pool>.toolDelivery: mounted")
    nameplate = sum(n.tdp_w for n in nodes)
    out.mkdir(parents=True, exist_ok=True)
    if trace.resolve() != (out / "trace.jsonl").resolve():
        (out / "trace.jsonl").write_bytes(trace.read_bytes())  # the results name the trace they measured
    progress(f"bench-live: {len(jobs)} jobs from {trace} on {len(nodes)} Nodes of spec {spec.name} "
             f"({', '.join(n.name for n in nodes)}), policies {', '.join(policies)}, timing {timing.name}; results in {out}")
    live: dict[str, LiveRun] = {}
    try:
        process.up(ctx, rendered, crd_dir=options.crd_dir)  # otlp, whatever SIMCLUSTER_TELEMETRY says
        for policy in policies:
            values = out / f"values-{policy}.yaml"
            values.write_text(yaml.safe_dump(values_for(policy, nodes, budget_frac), sort_keys=True))
            progress(f"{policy}, {ARMS[policy].name}: controller manager env "
                     + " ".join(f"{k}={v}" for k, v in controller_env(policy, nodes, budget_frac).items()))
            _delete_workload_pods(state, jobs)
            go_file = state.root / "workload" / f"go-{policy}"
            go_file.unlink(missing_ok=True)
            deploy(ctx, rendered, DeployOptions([values], options.daemonset_for([values]), trace=trace,
                                                workload_args=runner_args(policy, go_file)))
            live[policy] = measure(state, policy, jobs, nameplate, timeout_s, progress, go_file)
            lv = live[policy]
            progress(f"{policy}: {lv.jobs_completed}/{lv.jobs_total} jobs in {lv.makespan_s:.0f}s, IT {lv.it_energy_kwh:.4f} kWh, "
                     f"mean {lv.mean_it_power_w:.0f} W")
            stop_deployed(state, progress)
    finally:
        if not ctx.settings.keep:
            stop_deployed(state, progress)
            process.down(state, keep=True, progress=progress)
    progress(f"accelerated clock: the same trace and Nodes, dt 1 s, reconcile every {timing.controller_interval_s:g} s")
    accel = {p: accelerated_run(jobs, nodes, p, seed=0, dt_s=1.0, budget_frac=budget_frac,
                                reconcile_s=timing.controller_interval_s) for p in live}
    write_results(out, live, accel)
    table = comparison(live, accel)
    (out / "bench-live.md").write_text(table + "\n")
    print("\n" + table + f"\n\nresults: {out / 'bench-live.csv'}")
    return 0 if all(lv.jobs_completed == lv.jobs_total for lv in live.values()) else 1
