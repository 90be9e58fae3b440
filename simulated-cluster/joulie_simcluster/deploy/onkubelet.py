"""``deploy`` on the kubelet runtime (simulated-cluster/KUBELET.md): the same plan as the process
runtime, split in two. The simulator and the workload runner stay processes on the host, started as
the process runtime starts them (the simulator writes every Node's tree under ``<state>/hwemu``); the
controller manager, the extender and one emulated agent per eligible Node become the chart's Pods on
the real kubelet node through ``helm upgrade --install``, with the settings the process runtime gives
those processes. The agents read their trees through a hostPath of the simulator's root, their GPU
tools are fakesmi from the same host (``agent.emulated.fakesmiHostPath``).

Why the simulator is no Pod: a privileged container cannot start on this project's machines
(CAP_SYS_RESOURCE is missing from the bounding set), and the simulator's control (gRPC, /debug,
the emulated BMCs, the OTLP push) is on 127.0.0.1, as the process runtime's smoke reads it. The
trees are files (``SIMCLUSTER_HWEMU=files``); the FUSE view is refused before anything starts
(:func:`check_mode`; KUBELET.md says how far it got).

deploy.env records each Pod as the process runtime records a process: PID_/START_ of the
container's first process on this host, COMPONENT_, URL_, and POD_<name> naming the Pod.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import socket
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from joulie_simcluster.context import Context
from joulie_simcluster.deploy import components as comp
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes.kubelet import chart as kubelet_chart
from joulie_simcluster.runtimes.kubelet.agentnodes import agent_nodes_of, daemonset_values
from joulie_simcluster.runtimes.kubelet.chart_values import (
    AgentPod,
    PodPlan,
    chart_values,
    fakesmi_wrapper,
    pod_env,
    ports_in_values,
    with_live_pods,
)
from joulie_simcluster.runtimes.kubelet.host import share_mount
from joulie_simcluster.runtimes.kubelet.node import FUSE_REFUSED as FUSE_REFUSED  # re-exported: deploy's check
from joulie_simcluster.runtimes.kubelet.node import check_mode as check_mode
from joulie_simcluster.state import StateDir

HOST_PROCESSES = ("simulator", "workload")
"""What stays a process on the host; every other command of the plan becomes a Pod."""

POD_GPU_TOOL_TIMEOUT_S = 60.0
"""GPU_TOOL_TIMEOUT of the agent Pods (the processes get 15 s): every agent container starts at once,
and a GPU tool's first call (a Python interpreter starting fakesmi) on two shared cores outlasted
15 s, so the agent published the datasheet's cap range and no GPU control."""



def daemonset_agents(cluster: Mapping[str, str], agents: list[comp.AgentNode], progress: Callable[[str], None],
                     ) -> list[comp.AgentNode]:
    """The agents this deploy runs: with agent nodes (SIMCLUSTER_KUBELET_NODES > 1) the chart's DaemonSet
    on them alone, none for the fake Nodes (the chart renders one agent mode per release); else all."""
    on = agent_nodes_of(cluster)
    if not on:
        return agents
    chosen = [a for a in agents if a.name in on]
    missing = sorted(set(on) - {a.name for a in chosen})
    if missing:
        raise RuntimeFailure(f"agent nodes {', '.join(missing)} are not among the Nodes the agent DaemonSet reaches "
                             "with these values (agents: simcluster agents --spec ...)")
    progress(f"agent DaemonSet on the agent nodes {', '.join(on)}; the {len(agents) - len(chosen)} other eligible "
             "(fake) Nodes get no agent")
    return chosen


def split(cmds: list[comp.Command]) -> tuple[list[comp.Command], list[comp.Command]]:
    """(the host processes, the commands that become Pods), each in start order."""
    return [c for c in cmds if c.name in HOST_PROCESSES], [c for c in cmds if c.name not in HOST_PROCESSES]


def check_replicas(replicas: int) -> None:
    """Refuses more than one controller manager replica, saying why (``deploy`` asks before it stops
    anything of the last deploy)."""
    if replicas != 1:
        raise RuntimeFailure(
            f"controllerManager.replicas={replicas} is not deployed on the kubelet runtime: on the host's "
            "network each replica binds its metrics port on its node, so the chart keeps replicas on different nodes "
            "(podAntiAffinity) and this runtime has one kubelet node; use replicas=1 here (two replicas electing a "
            "leader run on the process runtime)")


def pod_plan(plan: comp.Plan, pods: list[comp.Command], node_ip: str,
             ports: Mapping[str, int] | None = None, controller_port: int | None = None,
             ) -> tuple[PodPlan, dict[str, str]]:
    """The chart's side of the plan: each Pod's settings from its process command, and the URL each
    reports on (the agents' own ports, the controller manager on the node's address). `ports`: the
    agents' metrics ports by Node, `controller_port` the controller manager's (default the plan's)."""
    by = {c.name: c for c in pods}
    agents = [c for c in pods if c.component == "agent"]
    if any(c.name.startswith("agent-pool-") for c in agents):
        raise RuntimeFailure("SIMCLUSTER_AGENT_SHARDS > 0: pool agents are not deployed on the kubelet runtime; "
                             "use one agent per Node (SIMCLUSTER_AGENT_SHARDS=0)")
    if plan.api_proxy is not None:
        raise RuntimeFailure("SIMCLUSTER_API_PROXY=1 is not deployed on the kubelet runtime: its Pods reach kube-apiserver "
                             "with their ServiceAccount's in-cluster settings, never through the chaos proxy")
    check_replicas(plan.controller_replicas)
    cm_port = controller_port or plan.ports.controller_metrics
    pp = PodPlan(
        hwemu_root=plan.hwemu_root, files_view=plan.mode == "files", fakesmi=plan.binaries["fakesmi"],
        agents=[AgentPod(c.node, (ports or plan.ports.agent_metrics)[c.node]) for c in agents],
        agent_env={**pod_env(agents[0].env), "GPU_TOOL_TIMEOUT": f"{POD_GPU_TOOL_TIMEOUT_S:g}"} if agents else None,
        controller_env=pod_env(by["controller-manager"].env), controller_metrics_port=cm_port,
        extender_env=pod_env(by["extender"].env),
    )
    urls = {c.name: c.metrics_url for c in pods}
    urls["controller-manager"] = f"http://{node_ip}:{cm_port}/metrics"
    urls.update({f"agent-{a.node}": f"http://127.0.0.1:{a.metrics_port}/metrics" for a in pp.agents})
    return pp, urls


PORTS_FROM = 20000
PORTS_TO = 32000
"""The agents' host ports come from here, below the kernel's ephemeral range (32768-60999): an agent
Pod binds its port a minute or two after deploy chose it, and a port picked the usual way (bind to
port 0) is an ephemeral one any outgoing connection on this busy host may take meanwhile (seen:
``OSError: [Errno 98] Address already in use``, the agent's container exited)."""


def _bindable(port: int) -> bool:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def host_ports(names: Sequence[str], seed: str, bindable: Callable[[int], bool] = _bindable,
               keep: Mapping[str, int] | None = None) -> dict[str, int]:
    """One free port per name outside the ephemeral range, from an offset the cluster's name gives (two
    clusters on one host start apart), skipping what cannot be bound now. `keep`: ports a name holds
    already (the last deploy's, its Pod still bound to it): kept, so an unchanged Pod's spec stays
    the same and helm leaves it running; the others are chosen around them."""
    span = PORTS_TO - PORTS_FROM
    start = int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16) % span
    out = {n: p for n, p in (keep or {}).items() if n in names}
    taken = set(out.values())
    free = (n for n in names if n not in out)
    want = next(free, None)
    for i in range(span):
        if want is None:
            break
        port = PORTS_FROM + (start + i) % span
        if port not in taken and bindable(port):
            out[want] = port
            want = next(free, None)
    if want is not None:
        raise RuntimeFailure(f"no {len(names)} free ports in {PORTS_FROM}-{PORTS_TO} for the agents' metrics")
    return {n: out[n] for n in names}


def ports_to_keep(previous: Mapping[str, int], held: Collection[str], bindable: Callable[[int], bool] = _bindable,
                  ) -> dict[str, int]:
    """Of the last deploy's ports (by component name), those still ours: held by that component's Pod
    of the release (so not bindable now), or free again."""
    return {n: p for n, p in previous.items() if n in held or bindable(p)}


CONTROLLER = "controller-manager"


def choose_ports(agent_nodes: Sequence[str], seed: str, previous: Mapping[str, int], held: Collection[str],
                 bindable: Callable[[int], bool] = _bindable) -> tuple[dict[str, int], int]:
    """(each agent's metrics port by Node, the controller manager's): the last deploy's (`previous`,
    by component name) where still ours, new ones around them, all outside the ephemeral range."""
    agents = [f"agent-{n}" for n in agent_nodes]
    chosen = host_ports([*agents, CONTROLLER], seed, bindable, keep=ports_to_keep(previous, held, bindable))
    return {n: chosen[f"agent-{n}"] for n in agent_nodes}, chosen[CONTROLLER]


def daemonset_urls(cluster: Mapping[str, str], ports: Mapping[str, int]) -> dict[str, str]:
    """Each DaemonSet agent's metrics URL: on its agent node's address (``NODE_IP_<i>``)."""
    return {f"agent-{n}": f"http://{cluster[f'NODE_IP_{i}']}:{ports[n]}/metrics"
            for i, n in enumerate(agent_nodes_of(cluster), start=1) if n in ports}


def write_tool_hosts(plan: comp.Plan, pp: PodPlan) -> None:
    """Under the simulator's root (the agent Pods' hostPath): fakesmi and its wrapper, and each agent's
    tool host (what ``toolDelivery: mounted`` provides: one stub per file the GPU tools require; empty
    otherwise, as a node without the driver's files)."""
    pp.fakesmi_pex.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(pp.fakesmi, pp.fakesmi_pex)
    pp.fakesmi_wrapper.write_text(fakesmi_wrapper(pp.fakesmi_pex))
    pp.fakesmi_wrapper.chmod(0o755)
    for agent in plan.agents:
        host = pp.tool_host(agent.name)
        host.mkdir(parents=True, exist_ok=True)
        for stub in comp.host_stubs(plan, agent):
            path = host / stub.relative_to(plan.agent_dir(agent.name) / "host")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()


def start(ctx: Context, plan: comp.Plan, host: list[comp.Command], pods: list[comp.Command], env: dict[str, str],
          values_files: list[Path], start_processes: Callable[[Context, list[comp.Command], dict[str, str]], int]) -> int:
    """The simulator first (the agents read its trees), then the chart's Pods, then the workload runner
    (it needs the extender). Returns how many components started."""
    state, progress = ctx.state, ctx.progress
    cluster = state.read_cluster_env() or {}
    missing = [k for k in ("IMAGE_AGENT", "IMAGE_CONTROLLER_MANAGER", "IMAGE_EXTENDER") if not cluster.get(k)]
    if missing:
        # up refuses to start without what the images need (host_checks.image_inputs): only a
        # cluster an older simcluster brought up gets here.
        raise RuntimeFailure(f"{', '.join(missing)} not in {state.cluster_env}: this cluster came up without the "
                             "chart's images; run simcluster down, then simcluster up (it makes them)")
    first = [c for c in host if c.name != "workload"]
    last = [c for c in host if c.name == "workload"]
    values = kubelet_chart.chart_values_file(state)
    on_agent_nodes = agent_nodes_of(cluster)  # the DaemonSet's (daemonset_agents chose the plan's agents)
    # The last deploy's ports where its Pods still hold them: an unchanged Pod keeps its spec, so
    # helm's upgrade leaves it running instead of recreating it on a newly chosen port.
    previous = ports_in_values(yaml.safe_load(values.read_text()) if values.is_file() else None)
    agent_names = [c.node for c in pods if c.component == "agent"]
    ports, cm_port = choose_ports(agent_names[:1] if on_agent_nodes else agent_names, str(state.root), previous,
                                  kubelet_chart.held_by_release(state))
    if on_agent_nodes:  # one port for the DaemonSet: each agent binds it on its own node's address
        ports = {n: next(iter(ports.values())) for n in agent_names}
    # what this runtime cannot deploy fails here, first
    pp, urls = pod_plan(plan, pods, cluster["NODE_IP"], ports, controller_port=cm_port)
    if on_agent_nodes:
        urls.update(daemonset_urls(cluster, ports))
    share_mount(plan.hwemu_root, progress)
    started = start_processes(ctx, first, env)
    write_tool_hosts(plan, pp)
    chosen = chart_values(cluster, cluster["NODE_NAME"], pp)
    if on_agent_nodes and pp.agents:
        chosen["agent"] = daemonset_values(chosen["agent"]["image"], chosen["agent"]["env"], plan.hwemu_root,
                                           pp.agents[0].metrics_port)
    values.write_text(yaml.safe_dump(chosen, sort_keys=False))
    env["HELM_VALUES"] = ",".join(str(p) for p in [*values_files, values])
    env["CONTROLLER_METRICS"] = f"{cluster['NODE_IP']}:{pp.controller_metrics_port}"
    env["HELM_S"] = f"{kubelet_chart.helm_install(state, [*values_files, values], progress):.1f}"
    env.update(kubelet_chart.record_pods(state, urls))
    state.write_deploy_env(env)
    kubelet_chart.show_release(state, progress.out)
    return started + len(pods) + start_processes(ctx, last, env)


def stop_previous(state: StateDir, progress: Callable[[str], None]) -> None:
    """Before a deploy: the last deploy's host processes stop; its Pods stay for helm to upgrade (the
    process runtime's stray search would take containerd's shims, which name the state dir)."""
    kubelet_chart.stop_host_processes(state, progress)


def live_env(state: StateDir, env: Mapping[str, str]) -> dict[str, str]:
    """deploy.env with each Pod's record as it runs now (``status``): a Pod its Deployment recreated
    (``helm upgrade``, a rollback) counts as running under its new container. Unchanged where the
    Pods or containerd cannot be read (``status`` then reports the recorded PIDs)."""
    urls = {k.removeprefix("URL_"): v for k, v in env.items() if k.startswith("URL_")}
    try:
        return with_live_pods(env, kubelet_chart.record_pods(state, urls))
    except Exception as e:  # - status reports, never raises
        print(f"Pods not re-read ({e}); reporting the PIDs deploy recorded")
        return dict(env)


def restart_controller(state: StateDir, env_update: Mapping[str, str], progress: Callable[[str], None]) -> int:
    """The smoke's halfway step on this runtime: ``helm upgrade`` with `env_update` in
    ``controllerManager.env`` (a changed install); the Deployment recreates its Pod. Returns the new
    container's PID, recorded in deploy.env."""
    env = state.read_deploy_env() or {}
    files = [Path(p) for p in env.get("HELM_VALUES", "").split(",") if p]
    if not files:
        raise RuntimeFailure(f"no chart install recorded in {state.deploy_env}; run simcluster deploy")
    extra = kubelet_chart.chart_values_file(state).with_name("chart-values.update.yaml")
    files = [f for f in files if f != extra]  # a second update replaces the first
    update: dict[str, Any] = {"controllerManager": {"env": dict(env_update)}}
    extra.write_text(yaml.safe_dump(update, sort_keys=False))
    old = env.get("PID_controller-manager", "")
    kubelet_chart.helm_install(state, [*files, extra], progress)
    urls = {k.removeprefix("URL_"): v for k, v in env.items() if k.startswith("URL_")}
    new = kubelet_chart.record_pods(state, urls)
    if new.get("PID_controller-manager", old) == old:
        raise RuntimeFailure("helm upgrade did not recreate the controller manager's Pod")
    env = {**(state.read_deploy_env() or env), **new, "HELM_VALUES": ",".join(str(p) for p in [*files, extra])}
    state.write_deploy_env(env)
    progress(f"controller manager Pod recreated (pid {new['PID_controller-manager']}) with {', '.join(sorted(env_update))}")
    return int(new["PID_controller-manager"])

