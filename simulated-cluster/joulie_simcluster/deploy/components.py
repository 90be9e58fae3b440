"""What ``deploy`` starts on the process runtime, as data: one command line and environment per
component, built from the state directory, the binaries, the timing and the install values.

Pure: no process is started here (``deploy/start.py`` does that), so the command lines are testable.

- ``simulator``: ``emulate`` over every Node of the spec, FUSE views (or plain trees) under
  ``<state>/hwemu``, /debug/emulate and gRPC on 127.0.0.1, OTLP pushed into Prometheus (or the
  telemetry mode's Collector, or nothing where /metrics is scraped); an emulated BMC per node
  (Redfish on 127.0.0.1, ``runtimes/power.py``), boots and shutdowns at the timing's ``power_time_scale``.
- ``agent-<node>``: the released agent binary in ``emulated`` mode, literal ``NODE_NAME``, its tree
  as ``ROOT``, fakesmi first on its tool path as the pool's ``toolDelivery`` says.
- ``controller-manager``: reads node power from Prometheus; its env from the values' ``controllerManager.env``.
- ``extender``: on 127.0.0.1 at the port kube-scheduler's configuration names.
- ``api-proxy`` (``SIMCLUSTER_API_PROXY=1`` only): the chaos run's injecting proxy in front of
  kube-apiserver (``chaos/apiproxy.py``); every component above then gets ``kubeconfig.proxied``.
- ``workload``: the simulator's ``workload`` runner on the deploy's trace (by default the smoke's,
  ``joulie_simcluster.smoke.load``: one pinned Pod per Node): Pods through the real kube-scheduler, each
  Node's load on the emulator (gRPC) following its Pods; /metrics on 127.0.0.1. Started last: it
  needs the emulator and the scheduler's extender, and retries until both answer.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from joulie_simcluster.runtimes import power
from joulie_simcluster.settings import HwemuMode
from joulie_simcluster.smoke import load as smokeload
from joulie_simcluster.timing import Timing, duration

COMPONENTS = ("simulator", "extender", "controller-manager", "agent")
# Where the emulated BMCs' ports start (the simulator's --bmc-port-base; simulator_command says why).
BMC_PORT_BASE = 20000


@dataclass(frozen=True)
class Command:
    """One process of the deploy. ``name`` is unique (``agent-<node>`` per agent)."""

    name: str
    component: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    metrics_url: str = ""
    node: str = ""


@dataclass(frozen=True)
class AgentNode:
    name: str
    tool_delivery: Literal["mounted", "none"]
    tool_requirements: tuple[str, ...] = ()
    """Files the node's real GPU tools need (ELF loader, libraries, NVML): what ``mounted`` provides."""
    tools: tuple[str, ...] = ()
    """The GPU tools the node's profile has (its ``state/tools.json``): only these get a command, so an
    agent finds no ``nvidia-smi`` on a CPU node, as on a real one, instead of starting fakesmi to be
    told it is not installed (three Python starts per GPU inventory of every CPU node: at 1000 Nodes
    fakesmi took more CPU than the simulator)."""


@dataclass(frozen=True)
class Ports:
    simulator_http: int
    simulator_grpc: int
    extender: int
    controller_metrics: int
    agent_metrics: dict[str, int] = field(default_factory=dict)
    workload_metrics: int = 0
    controller_replica_metrics: tuple[int, ...] = ()
    """Metrics ports of the controller-manager replicas after the first."""


@dataclass(frozen=True)
class ApiProxy:
    """The chaos run's API proxy (``SIMCLUSTER_API_PROXY=1``): where it listens, what it forwards to."""

    port: int
    upstream: str
    """kube-apiserver's URL."""
    pki: Path
    control: Path
    """The fault file the chaos run writes (``chaos/apifaults.py``)."""
    python: str
    pythonpath: str
    """The harness' own code: the proxy is ``joulie_simcluster.chaos.apiproxy``, not a released binary."""

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"



PER_NODE_AGENTS_UP_TO = 32
"""SIMCLUSTER_AGENT_SHARDS=auto: one agent per Node up to this many Nodes (as the seed's DaemonSet)."""
NODES_PER_POOL_AGENT = 25
"""Beyond that, pool agents of about this many Nodes each: 200 Nodes -> 8 agents (the scale-200
runs' setting), 1000 -> 40; one process per Node would cost ~90 MB each."""


def auto_agent_shards(eligible: int, managed: int) -> int:
    """The agent processes ``auto`` deploys: 0 (one per Node) for a small cluster, or when the agent
    DaemonSet does not reach every managed Node (pool agents own them all); else pools of
    ``NODES_PER_POOL_AGENT``."""
    if eligible <= PER_NODE_AGENTS_UP_TO or eligible != managed:
        return 0
    return -(-eligible // NODES_PER_POOL_AGENT)


@dataclass(frozen=True)
class Plan:
    state: Path
    binaries: Mapping[str, Path]
    """component → PEX (``agent``, ``controller-manager``, ``extender``, ``simulator``, ``fakesmi``)."""
    kubeconfig: Path
    prometheus_url: str
    spec_file: Path
    mode: HwemuMode
    timing: Timing
    ports: Ports
    agents: list[AgentNode]
    values: Mapping[str, Any] = field(default_factory=dict)
    python_path_env: Mapping[str, str] = field(default_factory=dict)
    """Passed to every process (PATH, HOME, PEX_ROOT); nothing else of the caller's environment leaks in."""
    python: str = "python3.11"
    """The interpreter the GPU tool wrappers run fakesmi with (resolved once: a pyenv shim costs a
    process per call)."""
    fakesmi_entry: str = ""
    """The entry script of fakesmi's installed venv (``processes.pex_venv_entry``): the wrappers start
    it instead of the PEX, a quarter of the CPU per tool call. Empty: the PEX through ``python``."""
    fakesmi_site: tuple[str, str] = ("", "")
    """(interpreter, site-packages) of fakesmi's installed venv (``processes.pex_venv_site``): the
    wrappers import fakesmi from there with ``python -I -S``, skipping the entry script and ``site``.
    Empty: ``fakesmi_entry``."""
    agent_shards: int = 0
    """0: one agent process per eligible Node (the emulated agents of the seed). N > 0: N agent
    processes in the chart's ``pool`` mode, each owning the Nodes FNV-1a-32(name) mod N assigns it
    (SIMCLUSTER_AGENT_SHARDS; for scale runs, where one Python process per Node costs ~90 MB each)."""
    pool_selector: str = ""
    """POOL_NODE_SELECTOR of the pool agents: the Nodes of this cluster that are managed."""
    otlp_endpoint: str | None = None
    """Where the simulator pushes OTLP metrics: None means Prometheus' own receiver; "" means no push
    (telemetry modes scrape and otel-bridge: its /metrics is scraped); otel-collector: the Collector's."""
    controller_env: Mapping[str, str] = field(default_factory=dict)
    """The telemetry mode's controller-manager settings (simcluster.telemetry)."""
    agent_telemetry_env: Mapping[str, str] = field(default_factory=dict)
    """The telemetry mode's agent settings (the ``agent`` mode: POWER_EXPORT_ENDPOINT / _INTERVAL)."""
    simulator_env: Mapping[str, str] = field(default_factory=dict)
    """The simulator's OTLP exporter certificate (SIMCLUSTER_TELEMETRY_TLS, ``telemetrytls.push_env``)."""
    gpu_tool_timeout_s: float = 15.0
    """GPU_TOOL_TIMEOUT of the agents. A real node answers in well under the agent's 3 s default;
    here every agent, the control plane and the simulator share the machine's cores, so a tool
    call can wait its turn for seconds. A timeout is reported, never retried forever."""
    controller_replicas: int = 1
    """Controller-manager processes (``controllerManager.replicas``); more than one elect a leader."""
    cluster: str = ""
    """The spec's name: the workload runner's Pods select ``sim.joulie.io/cluster=<cluster>``. Empty:
    no workload runner."""
    workload_args: tuple[str, ...] = ()
    """More arguments of the workload runner (``simcluster bench-live``: ``--go-file``, ``--no-class-constraints``)."""
    simulator_extra_args: tuple[str, ...] = ()
    """The simulator values' ``extraArgs`` (SIMCLUSTER_SIM_EXTRA_VALUES, ``deploy/simvalues.py``), appended to
    ``emulate`` as the chart's Deployment appends them."""
    api_proxy: ApiProxy | None = None
    """The chaos API proxy; when set, ``kubeconfig`` is the proxied one that names it."""

    @property
    def hwemu_root(self) -> Path:
        return self.state / "hwemu"

    def node_root(self, node: str) -> Path:
        """Where the agent of `node` finds its tree: the FUSE view, or the plain tree in files mode."""
        return self.hwemu_root / "fuse" / node if self.mode == "fuse" else self.hwemu_root / node

    def agent_dir(self, node: str) -> Path:
        return self.state / "agents" / node

    def log(self, name: str) -> Path:
        return self.state / "logs" / f"{name}.log"

    @property
    def workload_trace(self) -> Path:
        """The trace ``deploy`` writes for the runner (``joulie_simcluster.smoke.load.trace_path``)."""
        return smokeload.trace_path(self.state)


def _env_values(values: Mapping[str, Any], *path: str) -> dict[str, str]:
    node: Any = values
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    if not isinstance(node, Mapping):
        return {}
    return {str(k): str(v) for k, v in node.items() if v is not None}


def simulator_command(plan: Plan) -> Command:
    return Command(
        name="simulator",
        component="simulator",
        argv=[
            str(plan.binaries["simulator"]), "emulate",
            "--spec", str(plan.spec_file),
            "--root", str(plan.hwemu_root),
            "--mode", plan.mode,
            "--tick", f"{plan.timing.sim_tick_s:g}",
            "--http", f"127.0.0.1:{plan.ports.simulator_http}",
            "--grpc", f"127.0.0.1:{plan.ports.simulator_grpc}",
            "--otlp-endpoint", (f"{plan.prometheus_url}/api/v1/otlp/v1/metrics" if plan.otlp_endpoint is None
                                else plan.otlp_endpoint),
            "--otlp-interval", f"{plan.timing.otlp_interval_s:g}",
            # An emulated BMC per node (Redfish); the login in a file, never on the command line.
            "--bmc", "127.0.0.1",
            # Below the ephemeral range (32768-60999 on Linux): deploy picks the other components'
            # ports free from that range before the simulator starts, and a thousand BMCs on kernel-
            # picked ports took one of them (an agent pool's) in the first 1000-Node deploy.
            "--bmc-port-base", str(BMC_PORT_BASE),
            "--bmc-credentials", str(power.credentials_path(plan.state)),
            "--power-time-scale", f"{plan.timing.power_time_scale:g}",
            *plan.simulator_extra_args,
        ],
        env={**plan.python_path_env, **plan.simulator_env},
        log=plan.log("simulator"),
        metrics_url=f"http://127.0.0.1:{plan.ports.simulator_http}/debug/emulate",
    )


def fakesmi_wrappers(plan: Plan, node: AgentNode) -> dict[Path, str]:
    """The GPU tool commands of one agent (the tools of its profile): shell wrappers running fakesmi
    for the node's tree.
    With ``toolDelivery: none`` the host root is empty, so a tool with requirements fails as on a
    node without the driver's files; ``mounted`` puts one stub at each required path."""
    root = plan.node_root(node.name)
    tools_dir = plan.agent_dir(node.name) / "tools"
    env = {
        "HWEMU_STATE_ROOT": str(root / "state"),
        "HWEMU_SYS_ROOT": str(root / "sys"),
        "HWEMU_HOST_ROOT": str(plan.agent_dir(node.name) / "host"),
    }
    exports = "".join(f"export {k}='{v}'\n" for k, v in env.items())
    exe, site = plan.fakesmi_site
    if exe and site:
        # ``-c``: fakesmi takes the tool from its first argument (sys.argv[0] is "-c").
        code = f"import sys; sys.path.insert(0, {site!r}); from joulie_fakesmi.cli import main; sys.exit(main())"
        program = f"{shlex.quote(exe)} -I -S -c {shlex.quote(code)}"
    elif plan.fakesmi_entry:
        program = f"'{plan.fakesmi_entry}'"
    else:
        program = f"'{plan.python}' '{plan.binaries['fakesmi']}'"
    return {tools_dir / tool: f"#!/bin/sh\n{exports}exec {program} {tool} \"$@\"\n" for tool in node.tools}


def host_stubs(plan: Plan, node: AgentNode) -> list[Path]:
    """Stub files standing in for what the chart's hooks deliver (``mounted`` only)."""
    if node.tool_delivery != "mounted":
        return []
    host = plan.agent_dir(node.name) / "host"
    return [host / req.lstrip("/") for req in node.tool_requirements]


def _agent_env(plan: Plan, port: int, own: Mapping[str, str]) -> dict[str, str]:
    """An agent's environment: the values' agent.env, then what the harness owns (`own` and the rest)."""
    env = dict(plan.python_path_env)
    env.update(_env_values(plan.values, "agent", "env"))
    env.update(plan.agent_telemetry_env)
    env.update(own)
    env.update({
        "KUBECONFIG": str(plan.kubeconfig),
        "METRICS_ADDR": f"127.0.0.1:{port}",
        "RECONCILE_INTERVAL": duration(plan.timing.agent_interval_s),
        "GPU_TOOL_TIMEOUT": f"{plan.gpu_tool_timeout_s:g}",
        # As the chart sets it (the Pod's namespace): where the agent's heartbeat Leases are.
        "POD_NAMESPACE": LEADER_NAMESPACE,
    })
    return env


def pod_resources_socket(plan: Plan, node: str) -> Path:
    """Where the simulator serves ``node``'s kubelet pod-resources API (``emulate --pod-resources-root``'s
    default, outside the node's tree: a FUSE view cannot hold a socket)."""
    return plan.hwemu_root / "kubelet" / node / "pod-resources" / "kubelet.sock"


def agent_command(plan: Plan, node: AgentNode) -> Command:
    port = plan.ports.agent_metrics[node.name]
    env = _agent_env(plan, port, {
        "AGENT_MODE": "emulated",
        "NODE_NAME": node.name,
        "ROOT": str(plan.node_root(node.name)),
        "GPU_TOOL_PATH": str(plan.agent_dir(node.name) / "tools"),
        # The emulated kubelet's pod-resources socket (the simulator serves one per NVIDIA node).
        "POD_RESOURCES_SOCKET": str(pod_resources_socket(plan, node.name)),
    })
    return _agent_run(plan, f"agent-{node.name}", port, env, node.name)


def agent_pool_command(plan: Plan, shard: int, port: int) -> Command:
    """One pool-mode agent: the same binary, every Node of its shard, each Node's tree and tools by `{node}`."""
    root = plan.hwemu_root / "fuse" if plan.mode == "fuse" else plan.hwemu_root
    env = _agent_env(plan, port, {
        "AGENT_MODE": "pool",
        "POOL_NODE_SELECTOR": plan.pool_selector,
        "POOL_SHARDS": str(plan.agent_shards),
        "POOL_SHARD_ID": str(shard),
        "ROOT": str(root / "{node}"),
        "GPU_TOOL_PATH": str(plan.state / "agents" / "{node}" / "tools"),
        "POD_RESOURCES_SOCKET": str(pod_resources_socket(plan, "{node}")),
    })
    return _agent_run(plan, f"agent-pool-{shard}", port, env, f"shard {shard}/{plan.agent_shards}")


def _agent_run(plan: Plan, name: str, port: int, env: dict[str, str], node: str) -> Command:
    """`joulie-agent run`, the released binary, in either mode."""
    return Command(name=name, component="agent", argv=[str(plan.binaries["agent"]), "run"], env=env,
                   log=plan.log(name), metrics_url=f"http://127.0.0.1:{port}/metrics", node=node)


LEADER_NAMESPACE = "joulie-system"
"""Where the replicas' Lease and the agents' heartbeat Leases live (the chart's release namespace;
``deploy`` creates it)."""


def controller_replicas(values: Mapping[str, Any]) -> int:
    """``controllerManager.replicas`` of the install values; more than one needs leader election,
    as the chart refuses (two replicas would both write)."""
    cm = values.get("controllerManager") if isinstance(values.get("controllerManager"), Mapping) else {}
    assert isinstance(cm, Mapping)
    replicas = int(cm.get("replicas") or 1)
    le = cm.get("leaderElection") if isinstance(cm.get("leaderElection"), Mapping) else {}
    assert isinstance(le, Mapping)
    if replicas > 1 and not le.get("enabled"):
        raise ValueError("controllerManager.replicas > 1 needs controllerManager.leaderElection.enabled=true "
                         "(two replicas would both write)")
    return max(1, replicas)


def controller_command(plan: Plan, replica: int = 0) -> Command:
    """Replica 0 is ``controller-manager``; with ``controllerManager.replicas`` > 1 the others are
    ``controller-manager-<i>``, each with its own metrics port, all electing a leader on one Lease."""
    name = "controller-manager" if replica == 0 else f"controller-manager-{replica}"
    port = plan.ports.controller_metrics if replica == 0 else plan.ports.controller_replica_metrics[replica - 1]
    env = dict(plan.python_path_env)
    env.update(_env_values(plan.values, "controllerManager", "env"))
    env.update({
        "NODE_POWER_SOURCE": "prometheus",
        "NODE_POWER_PROMETHEUS_ADDRESS": plan.prometheus_url,
        "NODE_POWER_RATE_WINDOW": duration(plan.timing.rate_window_s),
        "RECONCILE_INTERVAL": duration(plan.timing.controller_interval_s),
        "RECEIPT_WINDOW": duration(plan.timing.receipt_window_s),
        "STATUS_REFRESH_INTERVAL": duration(plan.timing.status_refresh_s),
        "METRICS_ADDR": f"127.0.0.1:{port}",
        **plan.controller_env,
    })
    if plan.controller_replicas > 1:  # as the chart sets them (templates/controller-manager.yaml)
        env.update({"LEADER_ELECT": "true", "POD_NAMESPACE": LEADER_NAMESPACE, "POD_NAME": name,
                    "LEADER_ELECTION_LEASE_DURATION": duration(plan.timing.lease_duration_s)})
    return Command(
        name=name,
        component="controller-manager",
        argv=[str(plan.binaries["controller-manager"]), "run", "--kubeconfig", str(plan.kubeconfig)],
        env=env,
        log=plan.log(name),
        metrics_url=f"http://127.0.0.1:{port}/metrics",
    )


def extender_command(plan: Plan) -> Command:
    env = dict(plan.python_path_env)
    env.update(_env_values(plan.values, "schedulerExtender", "env"))
    env["TWIN_STALENESS_THRESHOLD"] = duration(plan.timing.staleness_s)
    return Command(
        name="extender",
        component="extender",
        argv=[str(plan.binaries["extender"]), "--addr", f"127.0.0.1:{plan.ports.extender}",
              "--kubeconfig", str(plan.kubeconfig)],
        env=env,
        log=plan.log("extender"),
        metrics_url=f"http://127.0.0.1:{plan.ports.extender}/metrics",
    )


def workload_command(plan: Plan) -> Command:
    """`joulie-simulator workload` (the simulator's PEX) on the deploy's trace: Pods of this cluster,
    loads to the emulator's gRPC address."""
    return Command(
        name="workload",
        component="simulator",
        argv=[
            str(plan.binaries["simulator"]), "workload",
            "--trace", str(plan.workload_trace),
            "--cluster", plan.cluster,
            "--kubeconfig", str(plan.kubeconfig),
            "--emulator", f"127.0.0.1:{plan.ports.simulator_grpc}",
            "--metrics", f"127.0.0.1:{plan.ports.workload_metrics}",
            "--stay",  # a finished trace is no crash: /metrics and status stay up until down
            *plan.workload_args,
        ],
        env=dict(plan.python_path_env),
        log=plan.log("workload"),
        metrics_url=f"http://127.0.0.1:{plan.ports.workload_metrics}/metrics",
    )


def api_proxy_command(plan: Plan, proxy: ApiProxy) -> Command:
    env = {**plan.python_path_env, "PYTHONPATH": proxy.pythonpath}
    return Command(
        name="api-proxy",
        component="api-proxy",
        argv=[proxy.python, "-m", "joulie_simcluster.chaos.apiproxy", "--listen", f"127.0.0.1:{proxy.port}",
              "--upstream", proxy.upstream, "--pki", str(proxy.pki), "--control", str(proxy.control)],
        env=env,
        log=plan.log("api-proxy"),
    )


def commands(plan: Plan) -> list[Command]:
    """Every process of the deploy, in start order: the simulator first (the agents read its
    views), then the extender and controller manager, then one agent per eligible node, then
    (with ``plan.cluster``) the workload runner."""
    if plan.agent_shards > 0:
        agents = [agent_pool_command(plan, i, plan.ports.agent_metrics[f"shard-{i}"]) for i in range(plan.agent_shards)]
    else:
        agents = [agent_command(plan, n) for n in plan.agents]
    workload = [workload_command(plan)] if plan.cluster else []
    controllers = [controller_command(plan, i) for i in range(plan.controller_replicas)]
    proxy = [api_proxy_command(plan, plan.api_proxy)] if plan.api_proxy else []
    return [*proxy, simulator_command(plan), extender_command(plan), *controllers, *agents, *workload]
