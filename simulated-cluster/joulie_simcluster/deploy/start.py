"""``simcluster deploy`` itself: installs the binaries, writes the plan's files (GPU tool wrappers,
tool-delivery stubs, the workload trace, ``render/commands.json``), starts every component in order
(the agents only once the simulator serves their views) and waits until each reports. ``deploy.env``
records binaries, ports and PIDs as they start, so a failed deploy can be stopped.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_api import names
from joulie_hwprofiles.schema import builtin_profile
from joulie_localcluster.procs import ManagedProcess, free_port, ports_below_ephemeral, tail
from joulie_simcluster import telemetry, telemetrytls
from joulie_simcluster.agents import select_agents
from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.deploy import components as comp
from joulie_simcluster.deploy import simvalues
from joulie_simcluster.deploy.binaries import install_binaries
from joulie_simcluster.deploy.processes import (
    interpreter,
    pex_venv_entry,
    pex_venv_site,
    pid_key,
    python_env,
    stop_deployed,
)
from joulie_simcluster.deploy.proxied import proxied_kubeconfig
from joulie_simcluster.deploy.reports import Report, http_ok, wait_reports
from joulie_simcluster.deploy.values import load_values
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes import power
from joulie_simcluster.runtimes.kube import core_api
from joulie_simcluster.runtimes.pids import start_ticks
from joulie_simcluster.runtimes.process import cluster_live
from joulie_simcluster.runtimes.registry import recorded_runtime
from joulie_simcluster.runtimes.supervision.lock import changing
from joulie_simcluster.smoke.load import smoke_jobs
from joulie_simcluster.spec import ClusterSpec
from joulie_simcluster.state import StateDir
from joulie_workload.trace import TraceError, load_trace, write_trace


@dataclass(frozen=True)
class DeployResult:
    agents: list[str]
    excluded: list[tuple[str, str]]
    seconds: float
    reports: list[Report]


def agent_nodes(spec: ClusterSpec, nodes: list[dict[str, Any]], eligible: list[str], values: Mapping[str, Any]) -> list[comp.AgentNode]:
    by_name = {n["metadata"]["name"]: n for n in nodes}
    out = []
    for name in eligible:
        pool_name = by_name[name]["metadata"]["labels"][names.LABEL_SIM_POOL]
        profile = builtin_profile(spec.pool(pool_name).profile)
        tools = profile.gpus.tools if profile.gpus else []
        reqs = tuple(r for t in tools for r in t.requires)
        out.append(comp.AgentNode(name, spec.tool_delivery(pool_name, values), reqs, tuple(t.name for t in tools)))
    return out


@dataclass(frozen=True)
class DeployOptions:
    """What one deploy installs beyond the settings (binaries from SIMCLUSTER_DIST, SIMCLUSTER_HWEMU,
    SIMCLUSTER_TIMING, SIMCLUSTER_AGENT_SHARDS, SIMCLUSTER_POWER_SCOPE, SIMCLUSTER_DEPLOY_TIMEOUT)."""

    values_files: list[Path]
    """The values files in helm's order (the chart's values.yaml first)."""
    daemonset: dict[str, Any]
    """The agent DaemonSet the install would create: which Nodes get an agent."""
    workload: bool = True
    """Start the workload runner (False: the Nodes stay idle)."""
    trace: Path | None = None
    """The runner's JSONL trace (``joulie-simulator workloadgen``); None: the smoke's, one pinned job per Node."""
    workload_args: Sequence[str] = ()
    """Added to the runner's command line (bench-live: ``--go-file``)."""


def deploy(ctx: Context, rendered: RenderedSpec, options: DeployOptions) -> DeployResult:
    """Starts every component and waits until each reports."""
    t0 = time.monotonic()
    # Sized once from the cluster (or SIMCLUSTER_DEPLOY_TIMEOUT); the waits below read it from the settings.
    wait_s = ctx.settings.deploy_wait_s(len(rendered.nodes))
    ctx = dataclasses.replace(ctx, settings=dataclasses.replace(ctx.settings, deploy_timeout_s=wait_s))
    state, progress, settings = ctx.state, ctx.progress, ctx.settings
    progress(f"deploy: waits up to {wait_s:.0f}s for the simulator and every component "
             f"({len(rendered.nodes)} Nodes, {settings.hwemu} mode; SIMCLUSTER_DEPLOY_TIMEOUT sets it)")
    cluster = _live_cluster(state, settings.hwemu)
    on_kubelet = recorded_runtime(cluster).components_as_pods  # the chart's components as Pods (KUBELET.md)
    if on_kubelet:
        from joulie_simcluster.deploy import onkubelet  # it uses this module's _start
        onkubelet.check_mode(settings.hwemu)
        try:  # refused before the last deploy's processes stop
            onkubelet.check_replicas(comp.controller_replicas(load_values(options.values_files)))
        except ValueError as e:
            raise RuntimeFailure(f"values: {e}") from None
        onkubelet.stop_previous(state, progress)
    else:
        stop_deployed(state, progress)
    binaries = install_binaries(state, settings.dist)
    progress("binaries: " + ", ".join(f"{b.component} {b.tag}" for b in binaries.values()))
    values = load_values(options.values_files)
    state.values.mkdir(parents=True, exist_ok=True)
    (state.values / "values.effective.yaml").write_text(yaml.safe_dump(values, sort_keys=True))
    sim_values = simvalues.load_extra(settings.sim_extra_values)  # SIMCLUSTER_SIM_EXTRA_VALUES
    (state.values / "values.simulator.effective.yaml").write_text(yaml.safe_dump(sim_values, sort_keys=True))
    eligible, excluded = select_agents(rendered.nodes, options.daemonset)
    progress(f"agents: {len(eligible)} of {len(rendered.nodes)} Nodes eligible" +
             "".join(f"; {n}: {why}" for n, why in excluded))
    agents = agent_nodes(rendered.spec, rendered.nodes, eligible, values)
    if on_kubelet:  # with agent nodes, the DaemonSet's agents run there alone (KUBELET.md "The agent DaemonSet")
        agents = onkubelet.daemonset_agents(cluster, agents, progress)
    plan = _plan(ctx, rendered, cluster, {c: b.path for c, b in binaries.items()}, values, agents)
    plan = dataclasses.replace(plan, simulator_extra_args=simvalues.extra_args(sim_values))
    if options.workload:
        plan = with_workload(plan, rendered.name, rendered.nodes, options.trace, options.workload_args)
    _write_agent_files(plan)
    power.ensure_credentials(state.root)  # before the simulator starts: its BMCs accept this login
    bmcs_json = power.bmcs_path(state.root)
    bmcs_json.unlink(missing_ok=True)  # the simulator writes it afresh (new ports)
    env = _deploy_env(plan, rendered, cluster, options.values_files)
    env["SIM_EXTRA_VALUES"] = ",".join(str(p) for p in settings.sim_extra_values)
    for b in binaries.values():
        env[f"BINARY_{b.component}"] = str(b.path)
        env[f"TAG_{b.component}"] = b.tag
    cmds = comp.commands(plan)
    pods: list[comp.Command] = []
    if on_kubelet:
        cmds, pods = onkubelet.split(cmds)
    render = state.root / "render"
    render.mkdir(parents=True, exist_ok=True)
    (render / "commands.json").write_text(json.dumps(
        {c.name: {"component": c.component, "argv": c.argv, "env": c.env, "log": str(c.log), "url": c.metrics_url}
         for c in cmds}, indent=1))
    ensure_namespace(state.kubeconfig, comp.LEADER_NAMESPACE)  # the agents' heartbeat Leases, the leader Lease
    try:
        if on_kubelet:
            started = onkubelet.start(ctx, plan, cmds, pods, env, options.values_files, _start)
        else:
            started = _start(ctx, cmds, env)
        shards = plan.agent_shards
        how = f"{shards} pool agents for {len(agents)} Nodes" if shards > 0 else f"{len(agents)} agents"
        runner = f", workload runner on {len(load_trace(plan.workload_trace))} jobs" if plan.cluster else ", no workload runner"
        progress(f"started {started} processes (simulator, extender, controller manager, {how}{runner})")
        reports = wait_reports(state, env, rendered.managed, wait_s, progress)
    except BaseException:
        if not settings.keep_failed and not on_kubelet:  # there, down removes the Pods with the node
            stop_deployed(state, progress)
        raise
    with changing(state.root):  # the supervisor may have restarted a process meanwhile: keep its PIDs
        env = state.read_deploy_env() or env
        env["DEPLOYED_AT"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        state.write_deploy_env(env)
    seconds = time.monotonic() - t0
    progress(f"deploy: every component reports ({seconds:.1f}s)")
    return DeployResult([a.name for a in agents], excluded, seconds, reports)


def ensure_namespace(kubeconfig: Path, name: str) -> None:
    """The namespace of the replicas' Lease and the agents' heartbeat Leases (a helm install's release
    namespace exists already)."""
    api = core_api(kubeconfig)
    try:
        api.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
    except ApiException as e:
        if e.status != 409:
            raise RuntimeFailure(f"creating namespace {name} failed: HTTP {e.status} {e.reason}") from e


def _live_cluster(state: StateDir, mode: str) -> dict[str, str]:
    """cluster.env of the live cluster a deploy needs, or a RuntimeFailure saying what to run first."""
    live, why = cluster_live(state)
    cluster = state.read_cluster_env()
    if not live or cluster is None:
        raise RuntimeFailure(f"no live cluster in {state.root} ({why}); run simcluster up first")
    if "PROMETHEUS_URL" not in cluster or "EXTENDER_PORT" not in cluster:
        raise RuntimeFailure(f"{state.cluster_env} is from an older simcluster (no Prometheus); run simcluster down, then up")
    # A runtime that deploys the components as Pods refuses the FUSE view itself (deploy.onkubelet).
    if mode == "fuse" and not recorded_runtime(cluster).components_as_pods and not Path("/dev/fuse").exists():
        raise RuntimeFailure("SIMCLUSTER_HWEMU=fuse needs /dev/fuse; use SIMCLUSTER_HWEMU=files on this machine")
    return cluster


def _plan(ctx: Context, rendered: RenderedSpec, cluster: Mapping[str, str], binaries: dict[str, Path],
          values: dict[str, Any], agents: list[comp.AgentNode]) -> comp.Plan:
    """The plan of this deploy: ports (the extender's and the simulator's fixed at ``up``), the
    settings, the telemetry mode's controller settings and OTLP target."""
    state, settings = ctx.state, ctx.settings
    spec_file = state.root / "spec.yaml"
    if not spec_file.is_file():
        raise RuntimeFailure(f"{spec_file} missing; run simcluster up first")
    shards = settings.agent_shards
    if shards is None:
        shards = comp.auto_agent_shards(len(agents), len(rendered.managed))
        ctx.progress(f"agents: SIMCLUSTER_AGENT_SHARDS=auto: {f'{shards} pool agents' if shards else 'one per Node'}"
                     f" for {len(agents)} Nodes")
    tmode = telemetry.mode(cluster.get("TELEMETRY", "otlp"))
    try:
        replicas = comp.controller_replicas(values)
    except ValueError as e:
        raise RuntimeFailure(f"values: {e}") from None
    # Every port named here is bound only once the simulator starts or serves (minutes at 1000 Nodes), so
    # all come from below the ephemeral range, where no outgoing connection takes one meanwhile.
    keys = [f"shard-{i}" for i in range(shards)] if shards > 0 else [a.name for a in agents]
    given_sim = int(cluster.get("SIMULATOR_HTTP_PORT") or 0)
    pool = iter(ports_below_ephemeral(len(keys) + 2 + (replicas - 1) + (0 if given_sim else 1)))
    agent_ports = {k: next(pool) for k in keys}
    sim_port = given_sim or next(pool)
    ports = comp.Ports(sim_port, next(pool), int(cluster["EXTENDER_PORT"]), next(pool), agent_ports,
                       controller_replica_metrics=tuple(next(pool) for _ in range(replicas - 1)))
    try:  # the certificates of the authenticated telemetry path, when up made them
        controller_tls = telemetrytls.controller_env(cluster)
        agent_tls = telemetrytls.push_env(cluster, "agent")
        simulator_tls = telemetrytls.push_env(cluster, "simulator")
    except FileNotFoundError as e:
        raise RuntimeFailure(str(e)) from None
    python = interpreter()
    plan = comp.Plan(
        state=state.root, binaries=binaries, kubeconfig=state.kubeconfig,
        prometheus_url=cluster["PROMETHEUS_URL"], spec_file=spec_file, mode=settings.hwemu, timing=settings.timing,
        ports=ports, agents=agents, values=values, python_path_env=python_env(), python=python,
        fakesmi_entry=pex_venv_entry(python, binaries["fakesmi"], python_env()) or "",
        fakesmi_site=pex_venv_site(python, binaries["fakesmi"], python_env()) or ("", ""),
        agent_shards=shards, pool_selector=f"{names.LABEL_SIM_CLUSTER}={rendered.name},{names.LABEL_MANAGED}=true",
        controller_env={**tmode.joulie_env(settings.power_scope), **controller_tls},
        agent_telemetry_env={**tmode.agent_env(cluster["PROMETHEUS_URL"], settings.timing.otlp_interval_s),
                             **agent_tls},
        otlp_endpoint=_otlp_endpoint(tmode, cluster), controller_replicas=replicas,
        # Only a push straight into Prometheus needs the certificate (the Collector's receiver is plain).
        simulator_env=simulator_tls if _otlp_endpoint(tmode, cluster) is None else {},
    )
    if settings.api_proxy:
        plan = _with_api_proxy(plan, cluster)
    if shards > 0 and len(agents) != len(rendered.managed):
        raise RuntimeFailure(
            f"SIMCLUSTER_AGENT_SHARDS={shards}: pool agents own every managed Node of the spec, but the agent "
            f"DaemonSet reaches only {len(agents)} of them; use one agent per Node (SIMCLUSTER_AGENT_SHARDS=0)"
        )
    return plan


def _with_api_proxy(plan: comp.Plan, cluster: Mapping[str, str]) -> comp.Plan:
    """`plan` with the chaos API proxy first and every component's kubeconfig naming it."""
    state = StateDir(plan.state)
    proxy = comp.ApiProxy(free_port(), cluster["API_URL"], plan.state / "pki", plan.state / "api-proxy" / "fault.json",
                          sys.executable, os.pathsep.join(os.path.abspath(p) for p in sys.path if p))
    proxy.control.parent.mkdir(parents=True, exist_ok=True)
    proxy.control.unlink(missing_ok=True)  # no fault of an earlier run
    kubeconfig = proxied_kubeconfig(state.kubeconfig, proxy.url, plan.state / "kubeconfig.proxied")
    return dataclasses.replace(plan, api_proxy=proxy, kubeconfig=kubeconfig)


def _write_agent_files(plan: comp.Plan) -> None:
    """Each agent's GPU tool wrappers and its tool-delivery stubs under a fresh ``host/``."""
    for agent in plan.agents:
        # A fresh tools/: a tool of an earlier deploy's profile must not stay behind.
        shutil.rmtree(plan.agent_dir(agent.name) / "tools", ignore_errors=True)
        for path, text in comp.fakesmi_wrappers(plan, agent).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            path.chmod(0o755)
        host = plan.agent_dir(agent.name) / "host"
        shutil.rmtree(host, ignore_errors=True)
        host.mkdir(parents=True)
        for stub in comp.host_stubs(plan, agent):
            stub.parent.mkdir(parents=True, exist_ok=True)
            stub.touch()


def _deploy_env(plan: comp.Plan, rendered: RenderedSpec, cluster: Mapping[str, str], values_files: list[Path]) -> dict[str, str]:
    """deploy.env before anything starts: the mode, the Nodes, the addresses, the timing."""
    ports = plan.ports
    return {
        "HWEMU_MODE": plan.mode,
        "TELEMETRY": cluster.get("TELEMETRY", "otlp"),
        "NODES": ",".join(rendered.node_names),
        "AGENT_NODES": ",".join(a.name for a in plan.agents),
        "AGENT_SHARDS": str(plan.agent_shards),
        "VALUES_FILES": ",".join(str(p) for p in values_files),
        "SIMULATOR_HTTP": f"127.0.0.1:{ports.simulator_http}",
        "SIMULATOR_GRPC": f"127.0.0.1:{ports.simulator_grpc}",
        "CONTROLLER_METRICS": f"127.0.0.1:{ports.controller_metrics}",
        "EXTENDER_ADDR": f"127.0.0.1:{ports.extender}",
        "BMC_SECRET": f"{power.SECRET_NAMESPACE}/{power.SECRET_NAME}",
        "API_PROXY_CONTROL": str(plan.api_proxy.control) if plan.api_proxy else "",
        **plan.timing.as_env(),
    }


def _start(ctx: Context, cmds: list[comp.Command], env: dict[str, str]) -> int:
    """Starts `cmds` in order, recording each in deploy.env as it starts (a failed deploy can then be
    stopped); the processes after the simulator only once it serves. Returns how many started."""
    state, settings = ctx.state, ctx.settings
    env["DEPLOY_ID"] = f"{time.time():.6f}"  # the supervisor counts restarts afresh per deploy
    for cmd in cmds:
        with changing(state.root):  # a process the supervisor restarted meanwhile keeps its new PID
            env.update(state.read_deploy_env() or {})
            proc = ManagedProcess(cmd.name, cmd.argv, cmd.log, env=cmd.env).start()
            env[pid_key(cmd.name)] = str(proc.pid)
            env[f"START_{cmd.name}"] = start_ticks(proc.pid)
            env[f"COMPONENT_{cmd.name}"] = cmd.component
            env[f"URL_{cmd.name}"] = cmd.metrics_url
            state.write_deploy_env(env)
        if cmd.name == "simulator":
            _wait_simulator(state, proc, cmd.metrics_url, settings.hwemu, ctx.progress,
                            max(120.0, settings.deploy_wait_s(0)))
            if power.sync_secret(state.root, state.kubeconfig) is None:
                raise RuntimeFailure(f"the simulator serves but wrote no {power.bmcs_path(state.root)}; log {state.log('simulator')}")
            ctx.progress(f"BMC Secret {power.SECRET_NAMESPACE}/{power.SECRET_NAME} written from {power.bmcs_path(state.root)}")
    return len(cmds)


def _otlp_endpoint(tmode: telemetry.Mode, cluster: Mapping[str, str]) -> str | None:
    """The simulator's OTLP target in this telemetry mode (see comp.Plan.otlp_endpoint)."""
    if not tmode.simulator_pushes:
        return ""
    if tmode.needs_collector:
        if not cluster.get("OTELCOL_OTLP_URL"):
            raise RuntimeFailure(f"telemetry mode {tmode.name} needs the Collector's OTLP address, and cluster.env has "
                                 "none (an older up?); run simcluster down, then up")
        return cluster["OTELCOL_OTLP_URL"] + "/v1/metrics"
    return None


def with_workload(plan: comp.Plan, cluster: str, nodes: list[dict[str, Any]], trace: Path | None,
                  args: Sequence[str] = ()) -> comp.Plan:
    """Writes the runner's trace into the state dir and returns `plan` with the workload runner in it:
    the cluster its Pods select and a port for its /metrics. `trace` None: the smoke's (one pinned
    job per Node, :mod:`joulie_simcluster.smoke.load`); else the user's, checked here so a bad line fails the
    deploy naming it rather than the runner after start."""
    if trace is None:
        jobs = smoke_jobs(nodes)
    else:
        try:
            jobs = load_trace(trace)
        except TraceError as e:
            raise RuntimeFailure(f"--trace: {e}") from None
    plan.workload_trace.parent.mkdir(parents=True, exist_ok=True)
    write_trace(plan.workload_trace, jobs)
    return dataclasses.replace(plan, cluster=cluster, workload_args=tuple(args),
                               ports=dataclasses.replace(plan.ports, workload_metrics=free_port()))


def _wait_simulator(
    state: StateDir, proc: ManagedProcess, url: str, mode: str, progress: Callable[[str], None], timeout_s: float
) -> None:
    """The agents read the simulator's views: start them only once it serves (a first start renders
    every tree, minutes for hundreds of Nodes in files mode)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not proc.alive():
            raise RuntimeFailure(f"simulator exited at start; last lines of {state.log('simulator')}:\n{tail(state.log('simulator'), 20)}")
        ok, _ = http_ok(url)
        if ok:
            progress(f"simulator serves /debug/emulate ({mode} mode, trees under {state.root / 'hwemu'})")
            return
        time.sleep(0.3)
    raise RuntimeFailure(f"simulator did not serve {url} within {timeout_s:.0f}s (SIMCLUSTER_DEPLOY_TIMEOUT sets the wait); log {state.log('simulator')}:\n{tail(state.log('simulator'), 20)}")
