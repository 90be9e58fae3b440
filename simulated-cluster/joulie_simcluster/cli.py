"""simcluster: the simulated cluster harness (process runtime: every component a local process).

``smoke``  up + deploy + the checks + run results + down (SIMCLUSTER_KEEP=1 keeps the cluster)
``up [--spec FILE]``  start (or reuse) etcd, kube-apiserver, kube-scheduler, KWOK, Prometheus; apply the Nodes
``deploy``  simulator, extender, controller manager, one agent per eligible Node, the workload runner (one
pinned Pod per Node: the load); waits until all report
``status``  the recorded processes, API readiness, Nodes and deployed components
``reload COMPONENT [--force]``  follows the binary: unchanged → nothing; new (or --force) → restart
``logs COMPONENT [--node N]``  a component's log (agents: --node)
``tree NODE``  a Node's emulated tree as the agent sees it
``telemetry --part P --mode M``  what a telemetry mode generates (prom-config, joulie-values, ...)
``render-nodes --spec FILE``  the fake Node objects of the spec, one JSON object per line
``agents --spec FILE [--daemonset FILE]``  which Nodes the agent DaemonSet reaches, and why not the others
``down``  stop everything; remove the state dir (but runs/) unless ``SIMCLUSTER_KEEP=1``
``bench-live [--trace FILE] [--policies A,D]``  one trace under each policy on the live cluster, in real
time, beside the accelerated benchmark's prediction for it (``simcluster.livebench``)

Settings (environment): SIMCLUSTER_NAME, SIMCLUSTER_DIR, SIMCLUSTER_SPEC, SIMCLUSTER_VALUES
(comma-separated values files), SIMCLUSTER_HWEMU (fuse|files, default fuse), SIMCLUSTER_TIMING
(ci|production, default ci), SIMCLUSTER_KEEP, SIMCLUSTER_TEST_TIMEOUT (seconds; default ten rate
windows, at least 20 minutes), SIMCLUSTER_DIST (where ./pants package put the PEXes, default dist),
SIMCLUSTER_DEPLOY_TIMEOUT (seconds deploy waits for every component to report, default 240),
SIMCLUSTER_AGENT_SHARDS (0: one agent per Node; N: N pool-mode agents, for scale runs),
SIMCLUSTER_TELEMETRY (otlp|otel-unpromoted|otel-labels-unpromoted|otel-utf8|scrape|otel-collector|otel-bridge;
see ``telemetry``), SIMCLUSTER_POWER_SCOPE,
SIMCLUSTER_RUNTIME (process, the default, or k3s: the seed's k3s container; simulated-cluster/K3S.md).

The state directory is ``$SIMCLUSTER_DIR`` or ``~/.cache/joulie/simcluster/$SIMCLUSTER_NAME``
(name default ``joulie-sim``); see :mod:`simcluster.state`.

``--spec`` defaults to ``$SIMCLUSTER_SPEC``. ``--daemonset`` is a rendered agent DaemonSet manifest
(YAML); without it, the chart's default (nodeSelector joulie.io/managed=true, no tolerations).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from joulie_bench.sim import POLICIES
from joulie_common.yamlload import YamlError, load_yaml_all
from joulie_simcluster import deploy, k3s, livebench, runtime, smoke, telemetry
from joulie_simcluster.agents import agent_daemonset, select_agents
from joulie_simcluster.components import HwemuMode
from joulie_simcluster.nodes import render_nodes
from joulie_simcluster.spec import SpecError, load_spec
from joulie_simcluster.state import StateDir, cluster_name, state_dir
from joulie_simcluster.timing import TimingError, timing
from joulie_testinfra.tools import ToolMissingError
from joulie_workload.gen import GenOptions, generate
from joulie_workload.trace import TraceError, load_trace, write_trace

DEFAULT_SMOKE_SPEC = Path("simulated-cluster/specs/smoke.yaml")
DEFAULT_SMOKE_VALUES = Path("simulated-cluster/values/smoke-values.yaml")
CHART_DIR = Path("charts/joulie")


def _load_daemonset(path: Path) -> dict[str, Any]:
    try:
        docs = load_yaml_all(path)
    except YamlError as e:
        raise SpecError(str(e)) from e
    found = [d for d in docs if isinstance(d, dict) and d.get("kind") == "DaemonSet"]
    if len(found) != 1:
        raise SpecError(f"{path}: (top level): expected exactly one DaemonSet, found {len(found)}")
    ds = found[0]
    if not isinstance(((ds.get("spec") or {}).get("template") or {}).get("spec"), dict):
        raise SpecError(f"{path}: spec.template.spec: required")
    return ds


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="simcluster", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    env_spec = os.environ.get("SIMCLUSTER_SPEC")
    for name, help_ in (("render-nodes", "print the spec's Node objects, one JSON per line"),
                        ("agents", "print which Nodes get an agent, and why the others do not")):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("--spec", type=Path, default=Path(env_spec) if env_spec else None, required=env_spec is None,
                        help="cluster spec YAML (default $SIMCLUSTER_SPEC)")
        if name == "agents":
            sp.add_argument("--daemonset", type=Path, help="rendered agent DaemonSet manifest (default: the chart's, "
                            "rendered with --values)")
            sp.add_argument("--values", type=Path, action="append", help="values file (repeatable; default $SIMCLUSTER_VALUES)")
    up = sub.add_parser("up", help="start (or reuse) the cluster and apply the spec's Nodes")
    up.add_argument("--spec", type=Path, default=Path(env_spec) if env_spec else None, required=env_spec is None,
                    help="cluster spec YAML (default $SIMCLUSTER_SPEC)")
    up.add_argument("--crds", type=Path, default=runtime.DEFAULT_CRD_DIR, help="CRD directory (default %(default)s)")
    sub.add_parser("status", help="processes, API readiness and Nodes of the recorded cluster")
    sub.add_parser("down", help="stop the cluster; SIMCLUSTER_KEEP=1 keeps the state dir")
    dep = sub.add_parser("deploy", help="start the simulator, extender, controller manager and the agents")
    dep.add_argument("--values", type=Path, action="append", help="values file (repeatable; default $SIMCLUSTER_VALUES)")
    wl = dep.add_mutually_exclusive_group()
    wl.add_argument("--trace", type=Path, help="run this trace (JSONL, e.g. from joulie-simulator workloadgen) as the "
                    "cluster's Pods instead of the smoke's one pinned job per Node")
    wl.add_argument("--no-workload", action="store_true", help="start no workload runner (the Nodes stay idle)")
    sm = sub.add_parser("smoke", help="up, deploy, checks, run results, down")
    sm.add_argument("--spec", type=Path, default=Path(env_spec) if env_spec else DEFAULT_SMOKE_SPEC,
                    help="cluster spec (default $SIMCLUSTER_SPEC or %(default)s)")
    sm.add_argument("--values", type=Path, action="append", help=f"values file (repeatable; default $SIMCLUSTER_VALUES or {DEFAULT_SMOKE_VALUES})")
    sm.add_argument("--crds", type=Path, default=runtime.DEFAULT_CRD_DIR)
    sm.add_argument("--break", dest="break_component", choices=["simulator", "extender", "controller-manager", "agent"],
                    help="kill this component on purpose after deploy, to see the checks fail and say why")
    bl = sub.add_parser("bench-live", help="one trace under each policy on the live cluster, beside the accelerated "
                        "benchmark's prediction (up, deploy per policy, down)")
    bl.add_argument("--spec", type=Path, default=livebench.DEFAULT_SPEC, help="cluster spec (default %(default)s)")
    bl.add_argument("--crds", type=Path, default=runtime.DEFAULT_CRD_DIR)
    bl.add_argument("--trace", type=Path, help="trace JSONL (default: one generated from the options below)")
    g = GenOptions()
    bl.add_argument("--jobs", type=int, default=30)
    bl.add_argument("--seed", type=int, default=g.seed)
    bl.add_argument("--mean-interarrival-s", type=float, default=2.0)
    bl.add_argument("--cpu-median-s", type=float, default=60.0)
    bl.add_argument("--gpu-median-s", type=float, default=60.0)
    bl.add_argument("--policies", default="A,D", help="comma-separated, from A (no Joulie), B, C, D (default %(default)s)")
    bl.add_argument("--budget-frac", type=float, default=0.6, help="D's budget as a share of the Nodes' TDP sum")
    bl.add_argument("--timeout-s", type=float, default=1800.0, help="most wall seconds one policy's run may take")
    bl.add_argument("--out", type=Path, help="results directory (default <state>/runs/<time>-bench-live)")
    rl = sub.add_parser("reload", help="restart a component when its binary changed (or --force)")
    rl.add_argument("component", choices=["agent", "controller-manager", "extender", "simulator"])
    rl.add_argument("--force", action="store_true", default=os.environ.get("SIMCLUSTER_FORCE_RELOAD", "") not in ("", "0"))
    lg = sub.add_parser("logs", help="print a component's log")
    lg.add_argument("component", help="etcd, kube-apiserver, kube-scheduler, kwok, prometheus, simulator, extender, controller-manager, agent, workload")
    lg.add_argument("--node", help="the agent's Node")
    lg.add_argument("--lines", type=int, default=200)
    te = sub.add_parser("telemetry", help="print what a telemetry mode generates")
    te.add_argument("--part", required=True, choices=list(telemetry.PARTS))
    te.add_argument("--mode", default=os.environ.get("SIMCLUSTER_TELEMETRY", "otlp"), choices=list(telemetry.MODES))
    tr = sub.add_parser("tree", help="a Node's emulated tree as its agent sees it")
    tr.add_argument("node")
    return p


def _values_files(arg: list[Path] | None, default: list[Path]) -> list[Path]:
    """The chart's own values.yaml first (what helm starts from), then the given files in order."""
    env = os.environ.get("SIMCLUSTER_VALUES", "")
    files = arg or ([Path(p) for p in env.split(",") if p] if env else default)
    base = CHART_DIR / "values.yaml"
    return [base, *files] if base.is_file() else files


def daemonset_for(values_files: list[Path]) -> dict[str, Any]:
    """The agent DaemonSet the install would create: rendered by helm from the chart when both are
    here, else the chart's defaults with the values' nodeSelector and tolerations applied."""
    from joulie_simcluster import chart

    if (CHART_DIR / "Chart.yaml").is_file():
        try:
            return chart.agent_daemonset_from_chart(values_files)
        except (chart.ChartError, ToolMissingError) as e:
            raise SpecError(f"rendering the agent DaemonSet from {CHART_DIR}: {e}") from e
    values = deploy.load_values(values_files)
    agent = values.get("agent") or {}
    selector = (agent.get("daemonset") or {}).get("nodeSelector")
    return agent_daemonset(node_selector=selector, tolerations=agent.get("tolerations") or [],
                           host_network=agent.get("hostNetwork", True))


def _hwemu_mode() -> HwemuMode:
    mode = os.environ.get("SIMCLUSTER_HWEMU", "fuse")
    if mode == "fuse":
        return "fuse"
    if mode == "files":
        return "files"
    raise SpecError(f"SIMCLUSTER_HWEMU={mode!r}: must be fuse or files")


def _telemetry() -> str:
    return os.environ.get("SIMCLUSTER_TELEMETRY", "otlp")


def _dist() -> Path:
    return Path(os.environ.get("SIMCLUSTER_DIST", "dist"))


def _keep() -> bool:
    return os.environ.get("SIMCLUSTER_KEEP", "") not in ("", "0")


def _runtime_command(args: argparse.Namespace) -> int:
    state = StateDir(state_dir())
    progress = runtime.Progress()
    try:
        if args.command == "status":
            rc = runtime.status(state)
            env = state.read_deploy_env()
            if env is None:
                print("deployed: nothing (run simcluster deploy)")
                return rc
            managed = [n["metadata"]["name"] for n in render_nodes(load_spec(state.spec))
                       if n["metadata"]["labels"].get("joulie.io/managed") == "true"]
            reports = deploy.component_reports(state, env, managed)
            print(f"deployed ({env.get('HWEMU_MODE')} mode, timing {env.get('SIMCLUSTER_TIMING')}): "
                  f"{sum(r.ok for r in reports)}/{len(reports)} components report")
            deploy.print_reports(reports)
            return rc if all(r.ok for r in reports) else 1
        if args.command == "down":
            if (state.read_cluster_env() or {}).get("SIMCLUSTER_RUNTIME") == "k3s":
                k3s.down_k3s(state, name=cluster_name(), keep_volumes=_keep())
                progress(f"removed the k3s container {cluster_name()}")
                return 0
            deploy.stop_deployed(state, progress)
            runtime.down(state, keep=_keep(), progress=progress)
            return 0
        if args.command == "deploy":
            if not state.spec.is_file():
                raise runtime.RuntimeFailure(f"no cluster in {state.root} (no {state.spec.name}); run simcluster up first")
            values = _values_files(args.values, [])
            result = deploy.deploy(state, load_spec(state.spec), dist=_dist(), values_files=values,
                                   daemonset=daemonset_for(values), mode=_hwemu_mode(),
                                   timing=timing(os.environ.get("SIMCLUSTER_TIMING", "ci")), progress=progress,
                                   workload=not args.no_workload, trace=args.trace)
            deploy.print_reports(result.reports)
            return 0
        if args.command == "reload":
            deploy.reload(state, args.component, _dist(), force=args.force, progress=progress)
            return 0
        if args.command == "smoke":
            t = timing(os.environ.get("SIMCLUSTER_TIMING", "ci"))
            values = _values_files(args.values, [DEFAULT_SMOKE_VALUES])
            timeout = float(os.environ.get("SIMCLUSTER_TEST_TIMEOUT") or max(1200.0, 10 * t.rate_window_s))
            return smoke.run_smoke(
                state, load_spec(args.spec), args.spec.read_text(), values_files=values, daemonset=daemonset_for(values),
                mode=_hwemu_mode(), timing=t, dist=_dist(), keep=_keep(), timeout_s=timeout, crd_dir=args.crds,
                break_component=args.break_component, telemetry_mode=_telemetry(),
            )
        if args.command == "bench-live":
            return _bench_live(args, state, progress)
        spec = load_spec(args.spec)
        if os.environ.get("SIMCLUSTER_RUNTIME", "process") == "k3s":
            # The seed's runtime: one privileged k3s container (simulated-cluster/K3S.md for where it stops here).
            eligible, _ = select_agents(render_nodes(spec), daemonset_for(_values_files(None, [])))
            k3s.up_k3s(state, spec, args.spec.read_text(), name=cluster_name(), agents=len(eligible),
                       hwemu=_hwemu_mode(), progress=progress)
            return 0
        runtime.up(state, spec, args.spec.read_text(), crd_dir=args.crds, progress=progress, telemetry_mode=_telemetry())
        return 0
    except (SpecError, TimingError) as e:
        print(f"simcluster: {e}", file=sys.stderr)
        return 2
    except runtime.RuntimeFailure as e:
        print(f"simcluster {args.command}: {e}", file=sys.stderr)
        return 1


def _bench_live(args: argparse.Namespace, state: StateDir, progress: runtime.Progress) -> int:
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    bad = [p for p in policies if p not in POLICIES]
    if bad or not policies:
        raise SpecError(f"--policies {args.policies!r}: each must be one of {', '.join(POLICIES)}")
    if not 0 < args.budget_frac <= 1:
        raise SpecError(f"--budget-frac {args.budget_frac}: must be in (0, 1]")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = args.out or state.runs / f"{stamp}-bench-live"
    trace = args.trace
    if trace is None:
        opts = GenOptions(jobs=args.jobs, seed=args.seed, mean_interarrival_s=args.mean_interarrival_s,
                          cpu_median_s=args.cpu_median_s, gpu_median_s=args.gpu_median_s)
        try:
            jobs = generate(opts)
        except ValueError as e:
            raise SpecError(str(e)) from None
        out.mkdir(parents=True, exist_ok=True)
        trace = out / "trace.jsonl"
        write_trace(trace, jobs)
    else:
        try:
            load_trace(trace)
        except TraceError as e:
            raise SpecError(f"--trace: {e}") from None
    return livebench.run(
        state, load_spec(args.spec), args.spec.read_text(), trace=trace, policies=policies, budget_frac=args.budget_frac,
        timing=timing(os.environ.get("SIMCLUSTER_TIMING", "ci")), dist=_dist(), crd_dir=args.crds, mode=_hwemu_mode(),
        daemonset_for=daemonset_for, out=out, keep=_keep(), timeout_s=args.timeout_s, progress=progress)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command in ("up", "status", "down", "deploy", "reload", "smoke", "bench-live"):
        return _runtime_command(args)
    if args.command in ("logs", "tree"):
        try:
            return _logs(args) if args.command == "logs" else _tree(args)
        except BrokenPipeError:  # `simcluster tree N | head`
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
    if args.command == "telemetry":
        try:
            t = timing(os.environ.get("SIMCLUSTER_TIMING", "ci"))
            print(telemetry.part(args.mode, args.part, t, os.environ.get("SIMCLUSTER_POWER_SCOPE", "auto")), end="")
            return 0
        except (telemetry.TelemetryError, TimingError) as e:
            print(f"simcluster telemetry: {e}", file=sys.stderr)
            return 2

    try:
        spec = load_spec(args.spec)
        nodes = render_nodes(spec)
        if args.command == "render-nodes":
            for node in nodes:
                print(json.dumps(node, separators=(",", ":")))
            return 0
        ds = _load_daemonset(args.daemonset) if args.daemonset else daemonset_for(_values_files(args.values, []))
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


def _logs(args: argparse.Namespace) -> int:
    state = StateDir(state_dir())
    name = args.component
    if name == "agent":
        if not args.node:
            print("simcluster logs agent: --node NODE is required", file=sys.stderr)
            return 2
        name = f"agent-{args.node}"
    path = state.log(name)
    if not path.is_file():
        known = sorted(p.stem for p in state.logs.glob("*.log")) if state.logs.is_dir() else []
        print(f"simcluster logs: no log {path}; logs here: {', '.join(known) or 'none'}", file=sys.stderr)
        return 1
    lines = path.read_text(errors="replace").splitlines()
    print("\n".join(lines[-args.lines:]))
    return 0


def _tree(args: argparse.Namespace) -> int:
    state = StateDir(state_dir())
    env = state.read_deploy_env() or {}
    base = state.root / "hwemu" / ("fuse" if env.get("HWEMU_MODE", "fuse") == "fuse" else "") / args.node
    if not base.is_dir():
        print(f"simcluster tree: no tree for {args.node!r} at {base} (deployed nodes: {env.get('NODES', 'none')})", file=sys.stderr)
        return 1
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(base)
        if path.is_symlink():
            print(f"{rel} -> {os.readlink(path)}")
        elif path.is_file():
            try:
                text = path.read_text().strip()
            except (OSError, UnicodeDecodeError) as e:
                text = f"<{type(e).__name__}>"
            first = text.splitlines()[0] if text else ""
            print(f"{rel} = {first[:80]}{' …' if len(text.splitlines()) > 1 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
