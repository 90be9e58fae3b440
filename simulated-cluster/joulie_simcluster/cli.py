"""simcluster: the simulated cluster harness (process runtime: every component a local process).

``smoke``  up + deploy + the checks + run results + down (SIMCLUSTER_KEEP=1 keeps the cluster)
``suspend``  up + deploy (power policy on, no load) + an idle node suspended through its BMC and resumed by a
Pod + runs/<UTC>-suspend/summary.json (its timeline) + down
``tenants``  up + deploy (work_aware_v1 trusting namespace team, power policy on, no load) + issue 36's tenant
cases, each beside its control (forged power, untrusted performance Pod, Pending Pods, 100 slow uploads to the
extender) + runs/<UTC>-tenants/summary.json + down
``suspend-live``  up + deploy (forecast_suspend_v1, no load) + a refused power-on retried then given up, the
Pod bound elsewhere + a node resumed ahead of a daily burst + runs/<UTC>-suspend-live/summary.json + down
``daemonset``  kubelet runtime, SIMCLUSTER_KUBELET_NODES=2|3: up + deploy (the chart's agent DaemonSet on the
agent nodes) + the caps sampled before, during and after a rolling update of it + runs/<UTC>-daemonset/summary.json
+ down (simulated-cluster/KUBELET.md "The agent DaemonSet")
``up [--spec FILE]``  start (or reuse) etcd, kube-apiserver, kube-scheduler, KWOK, Prometheus; apply the Nodes
``deploy``  simulator, extender, controller manager, one agent per eligible Node, the workload runner (one
pinned Pod per Node: the load); waits until all report
``status``  the recorded processes, API readiness, Nodes and deployed components
``reload COMPONENT [--force] [--node N]``  follows the binary: unchanged → nothing; new (or --force) → restart
(agents: --node restarts one Node's agent)
``scenario FILE``  timed steps (load, policy, ambient, fault, wait, assert) on the live cluster: up, deploy,
the steps, runs/<UTC>-<scenario>-.../summary.json (one assertion per assert step), timeline.csv/.png, down
(schema: docs/scenarios.md)
``chaos [--faults A,B] [--repeats N] [--seed S]``  faults at random moments into the live, deployed cluster;
what each did in runs/<UTC>-chaos/ (summary.json, report.md)
``logs COMPONENT [--node N]``  a component's log (agents: --node)
``tree NODE``  a Node's emulated tree as the agent sees it
``telemetry --part P --mode M``  what a telemetry mode generates (prom-config, joulie-values, ...)
``render-nodes --spec FILE``  the fake Node objects of the spec, one JSON object per line
``agents --spec FILE [--daemonset FILE]``  which Nodes the agent DaemonSet reaches, and why not the others
``down``  stop everything; remove the state dir (but runs/) unless ``SIMCLUSTER_KEEP=1``
``bench-live [--trace FILE] [--policies A,D]``  one trace under each policy on the live cluster, in real
time, beside the accelerated benchmark's prediction for it (``joulie_simcluster.livebench``)

Settings (environment, read once; an unknown SIMCLUSTER_* variable or a bad value is refused):
SIMCLUSTER_NAME, SIMCLUSTER_DIR, SIMCLUSTER_SPEC, SIMCLUSTER_VALUES (comma-separated values files),
SIMCLUSTER_HWEMU (fuse|files, default fuse), SIMCLUSTER_TIMING (ci|production, default ci),
SIMCLUSTER_TELEMETRY (otlp|otel-unpromoted|otel-labels-unpromoted|otel-utf8|scrape|otel-collector|otel-bridge;
see ``telemetry``), SIMCLUSTER_POWER_SCOPE (auto|host), SIMCLUSTER_RUNTIME (process, the default; k3s:
the seed's k3s container, simulated-cluster/K3S.md; kubelet: one real kubelet node, KUBELET.md), SIMCLUSTER_KEEP, SIMCLUSTER_KEEP_FAILED,
SIMCLUSTER_FORCE_RELOAD, SIMCLUSTER_NO_BUILD (1|0), SIMCLUSTER_DIST (where ./pants package put the PEXes,
default dist), SIMCLUSTER_TEST_TIMEOUT (seconds; default ten rate windows, at least 20 minutes),
SIMCLUSTER_DEPLOY_TIMEOUT (seconds deploy waits for every component to report; default 240 up to
25 Nodes, 2 s (FUSE) or 3 s (files) more a Node beyond),
SIMCLUSTER_AGENT_SHARDS (0: one agent per Node; N: N pool-mode agents, for scale runs),
SIMCLUSTER_SIM_EXTRA_VALUES (comma-separated simulator values files merged at deploy).
Units and defaults: simulated-cluster/README.md ("Settings"), ``joulie_simcluster.settings``.

The state directory is ``$SIMCLUSTER_DIR`` or ``~/.cache/joulie/simcluster/$SIMCLUSTER_NAME``
(name default ``joulie-sim``); see ``joulie_simcluster.state``.

``--spec`` defaults to ``$SIMCLUSTER_SPEC``. ``--daemonset`` is a rendered agent DaemonSet manifest
(YAML); without it, the chart's default (nodeSelector joulie.io/managed=true, no tolerations).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from joulie_bench.arms import ARMS
from joulie_simcluster import livebench, telemetry
from joulie_simcluster.agents import select_agents
from joulie_simcluster.chaos import catalogue as chaos_catalogue
from joulie_simcluster.chaos import run as chaos_run
from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.deploy import onkubelet
from joulie_simcluster.deploy.daemonset import CHART_DIR, daemonset_for, load_daemonset
from joulie_simcluster.deploy.processes import stop_deployed
from joulie_simcluster.deploy.reload import reload
from joulie_simcluster.deploy.reports import component_reports, print_reports
from joulie_simcluster.deploy.start import DeployOptions, deploy
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.logs import print_log, print_tree
from joulie_simcluster.runtimes.registry import recorded_runtime, runtime_for
from joulie_simcluster.runtimes.runtime import DEFAULT_CRD_DIR, UpRequest
from joulie_simcluster.runtimes.supervision import control as supervisor
from joulie_simcluster.scenario import run as scenario_run
from joulie_simcluster.scenario.schema import ScenarioError, load_scenario, resolve
from joulie_simcluster.settings import Settings, SettingsError
from joulie_simcluster.smoke import rollout as rollout_check
from joulie_simcluster.smoke import suspend as suspend_check
from joulie_simcluster.smoke import suspendliverun
from joulie_simcluster.smoke import tenants as tenants_check
from joulie_simcluster.smoke.run import SmokeOptions, run_smoke
from joulie_simcluster.spec import SpecError
from joulie_simcluster.timing import TimingError
from joulie_workload.gen import GenOptions
from joulie_workload.kinds import parse_shares

DEFAULT_SMOKE_SPEC = Path("simulated-cluster/specs/smoke.yaml")
DEFAULT_SMOKE_VALUES = Path("simulated-cluster/values/smoke-values.yaml")


_SubParsers = argparse._SubParsersAction  # what add_subparsers returns


def _parser(settings: Settings | None = None) -> argparse.ArgumentParser:
    """The command line; the settings give the defaults that come from the environment. The commands
    in the order ``--help`` lists them."""
    settings = settings or Settings()
    p = argparse.ArgumentParser(prog="simcluster", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    _add_spec_commands(sub, settings)
    _add_cluster_commands(sub, settings)
    _add_smoke_commands(sub, settings)
    _add_bench_live(sub)
    _add_scenario_and_chaos(sub)
    _add_inspection_commands(sub, settings)
    return p


def _add_spec_commands(sub: _SubParsers[argparse.ArgumentParser], settings: Settings) -> None:
    """render-nodes and agents: the spec's Nodes, and which get an agent."""
    env_spec = settings.spec
    for name, help_ in (("render-nodes", "print the spec's Node objects, one JSON per line"),
                        ("agents", "print which Nodes get an agent, and why the others do not")):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("--spec", type=Path, default=env_spec, required=env_spec is None,
                        help="cluster spec YAML (default $SIMCLUSTER_SPEC)")
        if name == "agents":
            sp.add_argument("--daemonset", type=Path, help="rendered agent DaemonSet manifest (default: the chart's, "
                            "rendered with --values)")
            sp.add_argument("--values", type=Path, action="append", help="values file (repeatable; default $SIMCLUSTER_VALUES)")


def _add_cluster_commands(sub: _SubParsers[argparse.ArgumentParser], settings: Settings) -> None:
    """up, status, down, deploy: the cluster and what runs on it."""
    env_spec = settings.spec
    up = sub.add_parser("up", help="start (or reuse) the cluster and apply the spec's Nodes")
    up.add_argument("--spec", type=Path, default=env_spec, required=env_spec is None,
                    help="cluster spec YAML (default $SIMCLUSTER_SPEC)")
    up.add_argument("--crds", type=Path, default=DEFAULT_CRD_DIR, help="CRD directory (default %(default)s)")
    sub.add_parser("status", help="processes, API readiness and Nodes of the recorded cluster")
    sub.add_parser("down", help="stop the cluster; SIMCLUSTER_KEEP=1 keeps the state dir")
    dep = sub.add_parser("deploy", help="start the simulator, extender, controller manager and the agents")
    dep.add_argument("--values", type=Path, action="append", help="values file (repeatable; default $SIMCLUSTER_VALUES)")
    wl = dep.add_mutually_exclusive_group()
    wl.add_argument("--trace", type=Path, help="run this trace (JSONL, e.g. from joulie-simulator workloadgen) as the "
                    "cluster's Pods instead of the smoke's one pinned job per Node")
    wl.add_argument("--no-workload", action="store_true", help="start no workload runner (the Nodes stay idle)")


def _add_smoke_commands(sub: _SubParsers[argparse.ArgumentParser], settings: Settings) -> None:
    """smoke and suspend: whole runs with their checks."""
    env_spec = settings.spec
    sm = sub.add_parser("smoke", help="up, deploy, checks, run results, down")
    sm.add_argument("--spec", type=Path, default=env_spec or DEFAULT_SMOKE_SPEC,
                    help="cluster spec (default $SIMCLUSTER_SPEC or %(default)s)")
    sm.add_argument("--values", type=Path, action="append", help=f"values file (repeatable; default $SIMCLUSTER_VALUES or {DEFAULT_SMOKE_VALUES})")
    sm.add_argument("--crds", type=Path, default=DEFAULT_CRD_DIR)
    sm.add_argument("--break", dest="break_component", choices=["simulator", "extender", "controller-manager", "agent"],
                    help="kill this component on purpose after deploy, to see the checks fail and say why")
    su = sub.add_parser("suspend", help="up, deploy with the power policy on, an idle node suspended through its BMC "
                        "and resumed by a Pod (runs/<UTC>-suspend/summary.json), down")
    su.add_argument("--spec", type=Path, default=suspend_check.DEFAULT_SPEC, help="cluster spec (default %(default)s)")
    su.add_argument("--values", type=Path, action="append",
                    help=f"values file (repeatable; default {suspend_check.DEFAULT_VALUES})")
    su.add_argument("--crds", type=Path, default=DEFAULT_CRD_DIR)
    te = sub.add_parser("tenants", help="up, deploy trusting only namespace team, issue 36's tenant cases on the live "
                        "cluster, each beside its control (runs/<UTC>-tenants/summary.json), down")
    te.add_argument("--spec", type=Path, default=tenants_check.DEFAULT_SPEC, help="cluster spec (default %(default)s)")
    te.add_argument("--values", type=Path, action="append",
                    help=f"values file (repeatable; default {tenants_check.DEFAULT_VALUES})")
    te.add_argument("--crds", type=Path, default=DEFAULT_CRD_DIR)
    sl = sub.add_parser("suspend-live", help="up, deploy with forecast_suspend_v1: a BMC refusing power-ons retried "
                        "then given up with the Pod bound elsewhere, and a node resumed ahead of a daily burst "
                        "(runs/<UTC>-suspend-live/summary.json), down")
    sl.add_argument("--spec", type=Path, default=suspendliverun.DEFAULT_SPEC, help="cluster spec (default %(default)s)")
    sl.add_argument("--values", type=Path, action="append",
                    help=f"values file (repeatable; default {suspendliverun.DEFAULT_VALUES})")
    sl.add_argument("--crds", type=Path, default=DEFAULT_CRD_DIR)
    ds = sub.add_parser("daemonset", help="kubelet runtime with SIMCLUSTER_KUBELET_NODES=2|3: the agent DaemonSet on real "
                        "kubelet nodes, a rolling update with the caps sampled throughout (runs/<UTC>-daemonset/summary.json)")
    ds.add_argument("--spec", type=Path, default=env_spec or DEFAULT_SMOKE_SPEC,
                    help="cluster spec (default $SIMCLUSTER_SPEC or %(default)s)")
    ds.add_argument("--values", type=Path, action="append", help=f"values file (repeatable; default {DEFAULT_SMOKE_VALUES})")
    ds.add_argument("--crds", type=Path, default=DEFAULT_CRD_DIR)


def _add_bench_live(sub: _SubParsers[argparse.ArgumentParser]) -> None:
    bl = sub.add_parser("bench-live", help="one trace under each policy on the live cluster, beside the accelerated "
                        "benchmark's prediction (up, deploy per policy, down)")
    bl.add_argument("--spec", type=Path, default=livebench.DEFAULT_SPEC, help="cluster spec (default %(default)s)")
    bl.add_argument("--crds", type=Path, default=DEFAULT_CRD_DIR)
    bl.add_argument("--trace", type=Path, help="trace JSONL (default: one generated from the options below)")
    g = GenOptions()
    bl.add_argument("--jobs", type=int, default=30)
    bl.add_argument("--seed", type=int, default=g.seed)
    bl.add_argument("--mean-interarrival-s", type=float, default=2.0)
    bl.add_argument("--cpu-median-s", type=float, default=60.0)
    bl.add_argument("--gpu-median-s", type=float, default=60.0)
    bl.add_argument("--kind-shares", help="the share of each workload kind, e.g. gpu-training=0.4,gpu-inference=0.4,"
                    "cpu-compute=0.1,cpu-memory=0.1 (the benchmark's gpu-busy mix; default: the generator's mix)")
    bl.add_argument("--policies", default="A,D", help="comma-separated, from A (no Joulie), A-placement, B, C, D, E "
                    "(default %(default)s)")
    bl.add_argument("--budget-frac", type=float, default=0.6, help="D's and E's budget as a share of the Nodes' TDP sum")
    bl.add_argument("--timeout-s", type=float, default=1800.0, help="most wall seconds one policy's run may take")
    bl.add_argument("--out", type=Path, help="results directory (default <state>/runs/<time>-bench-live)")


def _add_scenario_and_chaos(sub: _SubParsers[argparse.ArgumentParser]) -> None:
    sc = sub.add_parser("scenario", help="a scenario file's timed steps on the live cluster (up, deploy, steps, "
                        "runs/<UTC>-<scenario>-.../summary.json and timeline.png, down)")
    sc.add_argument("file", type=Path, help="scenario YAML (simulated-cluster/scenarios/; schema in docs/scenarios.md)")
    sc.add_argument("--crds", type=Path, default=DEFAULT_CRD_DIR)
    sc.add_argument("--check", action="store_true", help="only validate the file (and its spec) and exit")
    ch = sub.add_parser("chaos", help="inject faults at random moments into the live, deployed cluster and "
                        "record what each did (runs/<UTC>-chaos/summary.json and report.md)")
    ch.add_argument("--faults", default=",".join(chaos_catalogue.DEFAULT_FAULTS),
                    help=f"comma-separated, from {', '.join(chaos_catalogue.FAULTS)} (default %(default)s)")
    ch.add_argument("--repeats", type=int, default=2, help="injections per fault (default %(default)s)")
    ch.add_argument("--seed", type=int, default=1, help="the random moments and targets (default %(default)s)")
    ch.add_argument("--max-delay-s", type=float, default=6.0, help="latest random moment after the cluster is "
                    "healthy again (default %(default)s)")
    ch.add_argument("--timeout-s", type=float, default=120.0, help="seconds one injection may take to recover "
                    "(default %(default)s)")
    ch.add_argument("--out", type=Path, help="results directory (default <state>/runs/<time>-chaos)")


def _add_inspection_commands(sub: _SubParsers[argparse.ArgumentParser], settings: Settings) -> None:
    """reload, logs, telemetry, tree: one component or Node of the live cluster."""
    rl = sub.add_parser("reload", help="restart a component when its binary changed (or --force)")
    rl.add_argument("component", choices=["agent", "controller-manager", "extender", "simulator"])
    rl.add_argument("--force", action="store_true", default=settings.force_reload)
    rl.add_argument("--node", help="agents only: restart just this Node's agent")
    lg = sub.add_parser("logs", help="print a component's log")
    lg.add_argument("component", help="etcd, kube-apiserver, kube-scheduler, kwok, prometheus, simulator, extender, controller-manager, agent, workload")
    lg.add_argument("--node", help="the agent's Node")
    lg.add_argument("--lines", type=int, default=200)
    te = sub.add_parser("telemetry", help="print what a telemetry mode generates")
    te.add_argument("--part", required=True, choices=list(telemetry.PARTS))
    te.add_argument("--mode", default=settings.telemetry, choices=list(telemetry.MODES))
    tr = sub.add_parser("tree", help="a Node's emulated tree as its agent sees it")
    tr.add_argument("node")


def _values_files(settings: Settings, arg: list[Path] | None, default: list[Path]) -> list[Path]:
    """The chart's own values.yaml first (what helm starts from), then the given files in order:
    --values, else SIMCLUSTER_VALUES, else `default`."""
    files = arg or (list(settings.values) if settings.values is not None else default)
    base = CHART_DIR / "values.yaml"
    return [base, *files] if base.is_file() else files


def _runtime_command(args: argparse.Namespace, ctx: Context) -> int:
    try:
        return _RUNTIME_COMMANDS[args.command](args, ctx)
    except (SpecError, TimingError) as e:
        print(f"simcluster: {e}", file=sys.stderr)
        return 2
    except RuntimeFailure as e:
        print(f"simcluster {args.command}: {e}", file=sys.stderr)
        return 1


def _status(args: argparse.Namespace, ctx: Context) -> int:
    state = ctx.state
    runtime = recorded_runtime(state.read_cluster_env())
    rc = runtime.status(state)
    env = state.read_deploy_env()
    if env is None:
        print("deployed: nothing (run simcluster deploy)")
        return rc
    if runtime.components_as_pods:  # Pods the cluster recreated itself are read as they run now
        env = onkubelet.live_env(state, env)
    reports = component_reports(state, env, RenderedSpec.load(state.spec).managed)
    print(f"deployed ({env.get('HWEMU_MODE')} mode, timing {env.get('SIMCLUSTER_TIMING')}): "
          f"{sum(r.ok for r in reports)}/{len(reports)} components report")
    print_reports(reports)
    restarted = {n: k for n, k in supervisor.restarts(state).items() if k and n in {r.name for r in reports}}
    if restarted:
        print("restarted by the supervisor: " + ", ".join(f"{n} {k}x" for n, k in sorted(restarted.items())))
    return rc if all(r.ok for r in reports) else 1


def _down(args: argparse.Namespace, ctx: Context) -> int:
    recorded_runtime(ctx.state.read_cluster_env()).down(ctx, stop_deployed)  # the runtime cluster.env records
    return 0


def _deploy(args: argparse.Namespace, ctx: Context) -> int:
    state = ctx.state
    if not state.spec.is_file():
        raise RuntimeFailure(f"no cluster in {state.root} (no {state.spec.name}); run simcluster up first")
    values = _values_files(ctx.settings, args.values, [])
    result = deploy(ctx, RenderedSpec.load(state.spec),
                    DeployOptions(values, daemonset_for(values), workload=not args.no_workload, trace=args.trace))
    print_reports(result.reports)
    return 0


def _reload(args: argparse.Namespace, ctx: Context) -> int:
    reload(ctx.state, args.component, ctx.settings.dist, force=args.force, progress=ctx.progress, node=args.node)
    return 0


def _check_kubelet_nodes(settings: Settings, command: str) -> None:
    """SIMCLUSTER_KUBELET_NODES > 1 means the kubelet runtime's agent nodes; refused where it would be ignored
    (another runtime) or where the checks want an agent on every Node (the smoke)."""
    if settings.kubelet_nodes == 1:
        return
    if settings.runtime != "kubelet":
        raise RuntimeFailure(f"SIMCLUSTER_KUBELET_NODES={settings.kubelet_nodes} needs SIMCLUSTER_RUNTIME=kubelet "
                             f"(the {settings.runtime} runtime has no kubelet nodes); unset it")
    if command == "smoke":
        raise RuntimeFailure(f"SIMCLUSTER_KUBELET_NODES={settings.kubelet_nodes}: the agent DaemonSet runs on the agent "
                             "nodes only, and the smoke wants an agent on every Node; run ./simcluster daemonset, or "
                             "unset it for the smoke")


def _smoke(args: argparse.Namespace, ctx: Context) -> int:
    _check_kubelet_nodes(ctx.settings, "smoke")
    values = _values_files(ctx.settings, args.values, [DEFAULT_SMOKE_VALUES])
    return run_smoke(ctx, RenderedSpec.load(args.spec), SmokeOptions(
        values_files=values, daemonset=daemonset_for(values), crd_dir=args.crds, break_component=args.break_component))


def _suspend_live(args: argparse.Namespace, ctx: Context) -> int:
    values = _values_files(ctx.settings, args.values, [suspendliverun.DEFAULT_VALUES])
    return suspendliverun.run(ctx, RenderedSpec.load(args.spec), values, daemonset_for(values), args.crds)


def _suspend(args: argparse.Namespace, ctx: Context) -> int:
    values = _values_files(ctx.settings, args.values, [suspend_check.DEFAULT_VALUES])
    return suspend_check.run(ctx, RenderedSpec.load(args.spec), values, daemonset_for(values), args.crds)


def _tenants(args: argparse.Namespace, ctx: Context) -> int:
    values = _values_files(ctx.settings, args.values, [tenants_check.DEFAULT_VALUES])
    return tenants_check.run(ctx, RenderedSpec.load(args.spec), values, daemonset_for(values), args.crds)
def _daemonset(args: argparse.Namespace, ctx: Context) -> int:
    values = _values_files(ctx.settings, args.values, [DEFAULT_SMOKE_VALUES])
    _check_kubelet_nodes(ctx.settings, "daemonset")
    return rollout_check.run(ctx, RenderedSpec.load(args.spec), values, daemonset_for(values), args.crds)


def _up(args: argparse.Namespace, ctx: Context) -> int:
    settings = ctx.settings
    _check_kubelet_nodes(settings, "up")
    rendered = RenderedSpec.load(args.spec)

    def eligible_agents() -> int:  # the agents the chart's DaemonSet would run (the k3s runtime sizes its pods by it)
        return len(select_agents(rendered.nodes, daemonset_for(_values_files(settings, None, [])))[0])

    runtime_for(settings.runtime).up(ctx, rendered, UpRequest(args.crds, settings.telemetry, eligible_agents))
    return 0


def _bench_live(args: argparse.Namespace, ctx: Context) -> int:
    state = ctx.state
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    bad = [p for p in policies if p not in ARMS]
    if bad or not policies:
        raise SpecError(f"--policies {args.policies!r}: each must be one of {', '.join(ARMS)}")
    if not 0 < args.budget_frac <= 1:
        raise SpecError(f"--budget-frac {args.budget_frac}: must be in (0, 1]")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = args.out or state.runs / f"{stamp}-bench-live"
    try:
        shares = parse_shares(args.kind_shares) if args.kind_shares else None
    except ValueError as e:
        raise SpecError(str(e)) from None
    trace = livebench.prepare_trace(args.trace, GenOptions(
        jobs=args.jobs, seed=args.seed, mean_interarrival_s=args.mean_interarrival_s, cpu_median_s=args.cpu_median_s,
        gpu_median_s=args.gpu_median_s, kind_shares=shares), out)
    return livebench.run(ctx, RenderedSpec.load(args.spec), livebench.LiveBenchOptions(
        trace=trace, policies=policies, budget_frac=args.budget_frac, crd_dir=args.crds, daemonset_for=daemonset_for,
        out=out, timeout_s=args.timeout_s))


def _scenario(args: argparse.Namespace, ctx: Context) -> int:
    try:
        scenario = load_scenario(args.file, list(ARMS))
        RenderedSpec.load(resolve(args.file, scenario.spec))
    except (ScenarioError, SpecError) as e:
        print(f"simcluster scenario: {e}", file=sys.stderr)
        return 2
    if args.check:
        print(f"{args.file}: scenario {scenario.name}, {len(scenario.steps)} steps, {len(scenario.asserts)} asserts: valid")
        return 0
    values = _values_files(ctx.settings, [resolve(args.file, v) for v in scenario.values] or None, [DEFAULT_SMOKE_VALUES])
    return scenario_run.run_scenario(ctx, scenario_run.ScenarioOptions(args.file, scenario, values, daemonset_for, args.crds))


def _chaos(args: argparse.Namespace, ctx: Context) -> int:
    try:
        faults = chaos_catalogue.parse_faults(args.faults)
    except ValueError as e:
        raise SpecError(str(e)) from None
    if args.repeats < 1:
        raise SpecError(f"--repeats {args.repeats}: must be at least 1")
    return chaos_run.run(ctx, chaos_run.ChaosOptions(faults, args.repeats, args.seed, args.max_delay_s,
                                                     args.timeout_s, args.out))


_RUNTIME_COMMANDS = {"chaos": _chaos, "status": _status, "down": _down, "deploy": _deploy, "reload": _reload, "smoke": _smoke,
                     "suspend": _suspend, "suspend-live": _suspend_live, "tenants": _tenants, "daemonset": _daemonset,
                     "scenario": _scenario,
                     "bench-live": _bench_live, "up": _up}


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Parses the command line, reads the settings once (`environ`, default the process's) and
    dispatches; returns the exit code."""
    try:
        settings = Settings.from_env(os.environ if environ is None else environ)
    except SettingsError as e:
        print(f"simcluster: {e}", file=sys.stderr)
        return 2
    args = _parser(settings).parse_args(argv)
    ctx = Context.of(settings)
    if args.command in _RUNTIME_COMMANDS:
        return _runtime_command(args, ctx)
    if args.command in ("logs", "tree"):
        try:
            if args.command == "logs":
                return print_log(ctx.state, args.component, args.node, args.lines)
            return print_tree(ctx.state, args.node)
        except BrokenPipeError:  # `simcluster tree N | head`
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
    if args.command == "telemetry":
        try:
            print(telemetry.part(args.mode, args.part, settings.timing, settings.power_scope), end="")
            return 0
        except (telemetry.TelemetryError, TimingError) as e:
            print(f"simcluster telemetry: {e}", file=sys.stderr)
            return 2

    try:
        rendered = RenderedSpec.load(args.spec)
        nodes = rendered.nodes
        if args.command == "render-nodes":
            for node in nodes:
                print(json.dumps(node, separators=(",", ":")))
            return 0
        ds = load_daemonset(args.daemonset) if args.daemonset else daemonset_for(_values_files(settings, args.values, []))
    except SpecError as e:
        print(f"simcluster: {e}", file=sys.stderr)
        return 2
    eligible, excluded = select_agents(nodes, ds)
    width = max((len(n["metadata"]["name"]) for n in nodes), default=4)
    print(f"eligible: {len(eligible)} of {len(nodes)} nodes")
    for name in eligible:
        print(f"  {name}")
    print(f"excluded: {len(excluded)}")
    for name, reason in excluded:
        print(f"  {name:<{width}}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
