"""``simcluster deploy`` on the process runtime: the simulator, the extender, the controller manager,
one emulated agent per eligible Node and the workload runner (by default one pinned Pod per Node, the
smoke's load: ``simcluster.smokeload``; or a trace of the user's), as local processes that outlive the CLI.

The binaries are the released PEXes (``./pants package``), copied into ``<state>/bin`` under a name
carrying the first 12 hex of their sha256 — the process runtime's image tag — so a reload can tell
an unchanged binary from a new one. ``deploy.env`` records binaries, ports and PIDs; a new deploy
first stops what the last one started. Deploy waits until every component reports:
the simulator serves every Node on /debug/emulate, the extender answers /healthz, the controller
manager serves /metrics and has written a NodeTwin for every managed Node, and every agent serves
/metrics and has published its NodeHardware, and the workload runner serves /metrics.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from joulie_api import names
from joulie_api.backoff import Backoff
from joulie_common.merge import deep_merge
from joulie_common.sharding import owns_node  # the rule the agents shard by, not a copy
from joulie_common.yamlload import YamlError, load_yaml
from joulie_hwprofiles.schema import builtin_profile
from joulie_simcluster import components as comp
from joulie_simcluster import smokeload, telemetry
from joulie_simcluster.agents import select_agents
from joulie_simcluster.nodes import render_nodes
from joulie_simcluster.runtime import RuntimeFailure, api_get, cluster_live, pid_alive, start_ticks, stop_pid
from joulie_simcluster.spec import ClusterSpec
from joulie_simcluster.state import StateDir
from joulie_simcluster.state import pid_key as cluster_pid_key
from joulie_simcluster.timing import Timing
from joulie_testinfra.procs import ManagedProcess, free_port, tail
from joulie_workload.trace import TraceError, load_trace, write_trace

# component → where `./pants package` puts its PEX under dist/.
DIST_PEXES: dict[str, str] = {
    "agent": "services.agent/bin.pex",
    "controller-manager": "services.controller-manager/bin.pex",
    "extender": "services.extender/bin.pex",
    "simulator": "services.simulator/bin.pex",
    "fakesmi": "services.fakesmi/bin.pex",
}
PACKAGE_TARGETS = [f"services/{c}:bin" for c in DIST_PEXES]


# --- binaries ---------------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class Binary:
    component: str
    path: Path
    sha256: str

    @property
    def tag(self) -> str:
        return f"dev-{self.sha256[:12]}"


def install_binaries(state: StateDir, dist: Path) -> dict[str, Binary]:
    """Copies each component's PEX from `dist` into ``<state>/bin/joulie-<c>-<sha12>.pex``."""
    missing = [f"{dist / rel}" for rel in DIST_PEXES.values() if not (dist / rel).is_file()]
    if missing:
        raise RuntimeFailure(
            f"binaries not built: {', '.join(missing)}; run ./pants package {' '.join(PACKAGE_TARGETS)} "
            "(./simcluster does it for you)"
        )
    state.bin.mkdir(parents=True, exist_ok=True)
    out: dict[str, Binary] = {}
    for component, rel in DIST_PEXES.items():
        src = dist / rel
        digest = sha256_file(src)
        dest = state.bin / f"joulie-{component}-{digest[:12]}.pex"
        if not dest.exists():
            tmp = dest.with_suffix(".tmp")
            shutil.copy2(src, tmp)
            tmp.chmod(0o755)
            tmp.replace(dest)
        out[component] = Binary(component, dest, digest)
    return out


# --- values -----------------------------------------------------------------------------------


def load_values(files: list[Path]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for path in files:
        try:  # Helm's rule for several values files: deep_merge
            raw = load_yaml(path, source=f"values file {path}", mapping=True, empty={})
        except YamlError as e:
            raise RuntimeFailure(str(e)) from e
        merged = deep_merge(merged, raw)
    return merged


# --- processes --------------------------------------------------------------------------------


def _python_env() -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
           "PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8"}
    for key in ("PEX_ROOT", "JOULIE_CACHE", "SSL_CERT_FILE"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    return env


def _interpreter() -> str:
    """The real python3.11 behind any shim (the PEXes' shebang names python3.11)."""
    try:
        out = subprocess.run(["python3.11", "-c", "import sys; print(sys.executable)"], capture_output=True,
                             text=True, timeout=60, check=True)
        return out.stdout.strip() or "python3.11"
    except (OSError, subprocess.SubprocessError):
        return "python3.11"


def pid_key(name: str) -> str:
    return f"PID_{name}"


def recorded_deploy_pids(env: Mapping[str, str]) -> list[tuple[str, int]]:
    """(process name, pid) in start order."""
    return [(k.removeprefix("PID_"), int(v)) for k, v in env.items() if k.startswith("PID_") and v.isdigit()]


def deployed_alive(name: str, pid: int, env: Mapping[str, str]) -> bool:
    """Whether the process deploy.env records as `name` still runs: same PID, same start time."""
    return pid_alive(pid) and start_ticks(pid) == env.get(f"START_{name}")


def stop_deployed(state: StateDir, progress: Callable[[str], None]) -> int:
    env = state.read_deploy_env() or {}
    stopped = 0
    # Agents first, the simulator last: an agent never sees its views vanish under it at teardown.
    for name, pid in reversed(recorded_deploy_pids(env)):
        if deployed_alive(name, pid, env) and stop_pid(pid, None, grace_s=8):
            stopped += 1
    stopped += stop_strays(state)
    unmount_views(state)
    state.deploy_env.unlink(missing_ok=True)
    if stopped:
        progress(f"stopped {stopped} deployed processes")
    return stopped


def stop_strays(state: StateDir) -> int:
    """Processes working on this state dir that neither deploy.env nor cluster.env records (a deploy
    that crashed before recording them): a second simulator on the same trees would corrupt them."""
    marker = str(state.root).encode() + b"/"
    root = str(state.root / "hwemu").encode()
    cluster = {int(v) for k, v in (state.read_cluster_env() or {}).items() if k.endswith("_PID") and v.isdigit()}
    stopped = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in cluster or int(proc.name) in (os.getpid(), os.getppid()):
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        args = cmdline.split(b"\0")
        # A PEX re-executes from its unzipped copy: the state dir shows in its arguments or environment.
        if any(a.startswith(marker) or a == root for a in args) or (b"ROOT=" + root) in environ:
            with contextlib.suppress(RuntimeFailure):
                if stop_pid(int(proc.name), None, grace_s=5):
                    stopped += 1
    return stopped


def unmount_views(state: StateDir) -> None:
    """A simulator killed without its shutdown leaves the FUSE mount behind: detach it."""
    mountpoint = state.root / "hwemu" / "fuse"
    # A simulator restart mounts over the dead view: one lazy unmount per layer.
    for _ in range(10):
        try:
            mounts = Path("/proc/self/mounts").read_text()
        except OSError:
            return
        if f" {mountpoint} " not in mounts:
            return
        subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], check=False, capture_output=True)


def http_ok(url: str, timeout_s: float = 2.0) -> tuple[bool, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return resp.status == 200, resp.read().decode(errors="replace")
    except (urllib.error.URLError, OSError, ValueError) as e:
        return False, str(e)


def kube_list(kubeconfig: Path, path: str, attempts: int = 6) -> list[dict[str, Any]]:
    """The items of a list. 429 ("storage is (re)initializing" right after a CRD appears) and 5xx
    are retried on the Backoff sequence for a few seconds; anything else is an error naming the path."""
    code, body = 0, ""
    for delay in [*list(Backoff().delays())[: attempts - 1], 0.0]:
        code, body = api_get(kubeconfig, path, timeout_s=10)
        if code == 200:
            items: list[dict[str, Any]] = json.loads(body).get("items") or []
            return items
        if code != 429 and code < 500:
            break
        time.sleep(delay)
    raise RuntimeFailure(f"GET {path}: HTTP {code}: {body[:300]}")


NODEHARDWARES = f"/apis/{names.GROUP}/{names.VERSION}/nodehardwares"
NODETWINS = f"/apis/{names.GROUP}/{names.VERSION}/nodetwins"


@dataclass
class Report:
    """Whether one component reports, and what was seen."""

    name: str
    ok: bool
    detail: str


def component_reports(state: StateDir, env: Mapping[str, str], managed_nodes: list[str]) -> list[Report]:
    """One Report per deployed process: alive, its endpoint answering, its objects written."""
    kubeconfig = state.kubeconfig
    out: list[Report] = []
    hardware = {h["spec"]["nodeName"] for h in kube_list(kubeconfig, NODEHARDWARES) if h.get("status")}
    twins = {t["spec"]["nodeName"] for t in kube_list(kubeconfig, NODETWINS) if (t.get("status") or {}).get("lastUpdated")}
    for name, pid in recorded_deploy_pids(env):
        if not deployed_alive(name, pid, env):
            out.append(Report(name, False, f"pid {pid} not running; log {state.log(name)}"))
            continue
        url = env.get(f"URL_{name}", "")
        ok, body = http_ok(url) if url else (True, "")
        if not ok:
            out.append(Report(name, False, f"{url}: {body}"))
            continue
        component = env.get(f"COMPONENT_{name}", name)
        node = name.removeprefix("agent-")
        if name == "workload":  # the simulator's binary, not the emulator: no /debug/emulate here
            out.append(Report(name, True, workload_detail(body)))
        elif component == "simulator":
            served = {n["name"] for n in json.loads(body).get("nodes", [])}
            want = set(env.get("NODES", "").split(",")) - {""}
            missing = sorted(want - served)
            out.append(Report(name, not missing, f"{len(served)} nodes on /debug/emulate" + (f", missing {missing}" if missing else "")))
        elif component == "agent" and name.startswith("agent-pool-"):
            shard, shards = int(name.rsplit("-", 1)[1]), int(env.get("AGENT_SHARDS", "1"))
            mine = [n for n in env.get("AGENT_NODES", "").split(",") if n and owns_node(n, shards, shard)]
            done = [n for n in mine if n in hardware]
            out.append(Report(name, len(done) == len(mine), f"NodeHardware for {len(done)}/{len(mine)} Nodes of its shard"))
        elif component == "agent":
            out.append(Report(name, node in hardware, "NodeHardware published" if node in hardware else "no NodeHardware yet"))
        elif component == "controller-manager":
            missing = sorted(set(managed_nodes) - twins)
            out.append(Report(name, not missing, f"{len(twins)} NodeTwins with status" + (f", none yet for {missing}" if missing else "")))
        else:
            out.append(Report(name, True, "healthy"))
    return out


def collector_report(state: StateDir, cluster: Mapping[str, str]) -> Report | None:
    """The OpenTelemetry Collector of the Collector telemetry modes (``up`` starts it, not deploy):
    alive and its health check answering. None in the modes without one."""
    url = cluster.get("OTELCOL_HEALTH_URL", "")
    if not url:
        return None
    pid = cluster.get(cluster_pid_key("otelcol"), "")
    if not (pid.isdigit() and pid_alive(int(pid))):
        return Report("otelcol", False, f"pid {pid or '?'} not running; log {state.log('otelcol')}")
    ok, body = http_ok(url)
    return Report("otelcol", ok, "health check answers" if ok else f"{url}: {body}")


def runner_counts(metrics: str) -> dict[str, float]:
    """Jobs submitted, running, pending and completed from the workload runner's /metrics (the
    counters are per class and Node: summed)."""
    series = {"joulie_sim_job_submitted_total": "submitted", "joulie_sim_jobs_running": "running",
              "joulie_sim_jobs_pending": "pending", "joulie_sim_job_completed_total": "completed"}
    out: dict[str, float] = {}
    for line in metrics.splitlines():
        name, _, value = line.partition(" ")
        word = series.get(name.partition("{")[0])
        if word:
            out[word] = out.get(word, 0.0) + float(value)
    return out


def workload_detail(metrics: str) -> str:
    """The workload runner's /metrics in a few words: its jobs running, pending and completed."""
    seen = runner_counts(metrics)
    return "/metrics answers; jobs " + ", ".join(
        f"{seen[w]:.0f} {w}" if w in seen else f"? {w}" for w in ("running", "pending", "completed")
        if w != "completed" or w in seen)


def wait_reports(
    state: StateDir, env: Mapping[str, str], managed_nodes: list[str], timeout_s: float, progress: Callable[[str], None]
) -> list[Report]:
    deadline = time.monotonic() + timeout_s
    last = ""
    while True:
        reports = component_reports(state, env, managed_nodes)
        ok = sum(r.ok for r in reports)
        line = f"{ok}/{len(reports)} components report"
        if line != last:
            pending = [r.name for r in reports if not r.ok]
            progress(line + (f" (waiting for {', '.join(pending[:6])}{' …' if len(pending) > 6 else ''})" if pending else ""))
            last = line
        if ok == len(reports):
            return reports
        dead = [r for r in reports if "not running" in r.detail]
        if dead or time.monotonic() > deadline:
            bad = dead or [r for r in reports if not r.ok]
            lines = [f"  {r.name}: {r.detail}\n{_indent(tail(state.log(r.name), 15))}" for r in bad[:5]]
            why = "exited" if dead else f"did not report within {timeout_s:.0f}s"
            raise RuntimeFailure(f"{len(bad)} components {why}:\n" + "\n".join(lines))
        time.sleep(1.0)


def _indent(text: str) -> str:
    return "\n".join("      " + line for line in text.splitlines())


# --- deploy -----------------------------------------------------------------------------------


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
        reqs = tuple(r for t in (profile.gpus.tools if profile.gpus else []) for r in t.requires)
        out.append(comp.AgentNode(name, spec.tool_delivery(pool_name, values), reqs))
    return out


def deploy(
    state: StateDir,
    spec: ClusterSpec,
    *,
    dist: Path,
    values_files: list[Path],
    daemonset: dict[str, Any],
    mode: comp.HwemuMode,
    timing: Timing,
    progress: Callable[[str], None],
    wait_timeout_s: float | None = None,
    workload: bool = True,
    trace: Path | None = None,
    workload_args: Sequence[str] = (),
) -> DeployResult:
    """Starts every component and waits until each reports. `workload`: start the workload runner,
    on `trace` (a JSONL trace, ``joulie-simulator workloadgen``) or, when None, the smoke's, with
    `workload_args` added to its command line."""
    t0 = time.monotonic()
    if wait_timeout_s is None:
        wait_timeout_s = float(os.environ.get("SIMCLUSTER_DEPLOY_TIMEOUT") or 240)
    live, why = cluster_live(state)
    cluster = state.read_cluster_env()
    if not live or cluster is None:
        raise RuntimeFailure(f"no live cluster in {state.root} ({why}); run simcluster up first")
    if "PROMETHEUS_URL" not in cluster or "EXTENDER_PORT" not in cluster:
        raise RuntimeFailure(f"{state.cluster_env} is from an older simcluster (no Prometheus); run simcluster down, then up")
    if mode == "fuse" and not Path("/dev/fuse").exists():
        raise RuntimeFailure("SIMCLUSTER_HWEMU=fuse needs /dev/fuse; use SIMCLUSTER_HWEMU=files on this machine")
    stop_deployed(state, progress)
    binaries = install_binaries(state, dist)
    progress("binaries: " + ", ".join(f"{b.component} {b.tag}" for b in binaries.values()))
    values = load_values(values_files)
    state.values.mkdir(parents=True, exist_ok=True)
    (state.values / "values.effective.yaml").write_text(yaml.safe_dump(values, sort_keys=True))
    nodes = render_nodes(spec)
    eligible, excluded = select_agents(nodes, daemonset)
    progress(f"agents: {len(eligible)} of {len(nodes)} Nodes eligible" +
             "".join(f"; {n}: {why}" for n, why in excluded))
    agents = agent_nodes(spec, nodes, eligible, values)
    spec_file = state.root / "spec.yaml"
    if not spec_file.is_file():
        raise RuntimeFailure(f"{spec_file} missing; run simcluster up first")
    shards = int(os.environ.get("SIMCLUSTER_AGENT_SHARDS", "0") or 0)
    agent_ports = {f"shard-{i}": free_port() for i in range(shards)} if shards > 0 else {a.name: free_port() for a in agents}
    tmode = telemetry.mode(cluster.get("TELEMETRY", "otlp"))
    sim_port = int(cluster.get("SIMULATOR_HTTP_PORT") or 0) or free_port()
    ports = comp.Ports(sim_port, free_port(), int(cluster["EXTENDER_PORT"]), free_port(), agent_ports)
    plan = comp.Plan(
        state=state.root, binaries={c: b.path for c, b in binaries.items()}, kubeconfig=state.kubeconfig,
        prometheus_url=cluster["PROMETHEUS_URL"], spec_file=spec_file, mode=mode, timing=timing, ports=ports,
        agents=agents, values=values, python_path_env=_python_env(), python=_interpreter(),
        agent_shards=shards, pool_selector=f"{names.LABEL_SIM_CLUSTER}={spec.name},{names.LABEL_MANAGED}=true",
        controller_env=tmode.joulie_env(os.environ.get("SIMCLUSTER_POWER_SCOPE", "auto")),
        otlp_endpoint=_otlp_endpoint(tmode, cluster),
    )
    if shards > 0 and len(agents) != sum(1 for n in nodes if n["metadata"]["labels"].get(names.LABEL_MANAGED) == "true"):
        raise RuntimeFailure(
            f"SIMCLUSTER_AGENT_SHARDS={shards}: pool agents own every managed Node of the spec, but the agent "
            f"DaemonSet reaches only {len(agents)} of them; use one agent per Node (SIMCLUSTER_AGENT_SHARDS=0)"
        )
    if workload:
        plan = with_workload(plan, spec.name, nodes, trace, workload_args)
    for agent in agents:
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
    env: dict[str, str] = {
        "HWEMU_MODE": mode,
        "TELEMETRY": cluster.get("TELEMETRY", "otlp"),
        "NODES": ",".join(n["metadata"]["name"] for n in nodes),
        "AGENT_NODES": ",".join(a.name for a in agents),
        "AGENT_SHARDS": str(shards),
        "VALUES_FILES": ",".join(str(p) for p in values_files),
        "SIMULATOR_HTTP": f"127.0.0.1:{ports.simulator_http}",
        "SIMULATOR_GRPC": f"127.0.0.1:{ports.simulator_grpc}",
        "CONTROLLER_METRICS": f"127.0.0.1:{ports.controller_metrics}",
        "EXTENDER_ADDR": f"127.0.0.1:{ports.extender}",
        **timing.as_env(),
    }
    for b in binaries.values():
        env[f"BINARY_{b.component}"] = str(b.path)
        env[f"TAG_{b.component}"] = b.tag
    cmds = comp.commands(plan)
    render = state.root / "render"
    render.mkdir(parents=True, exist_ok=True)
    (render / "commands.json").write_text(json.dumps(
        {c.name: {"component": c.component, "argv": c.argv, "env": c.env, "log": str(c.log), "url": c.metrics_url}
         for c in cmds}, indent=1))
    started: list[ManagedProcess] = []
    try:
        for cmd in cmds:
            proc = ManagedProcess(cmd.name, cmd.argv, cmd.log, env=cmd.env).start()
            started.append(proc)
            env[pid_key(cmd.name)] = str(proc.pid)
            env[f"START_{cmd.name}"] = start_ticks(proc.pid)
            env[f"COMPONENT_{cmd.name}"] = cmd.component
            env[f"URL_{cmd.name}"] = cmd.metrics_url
            state.write_deploy_env(env)
            if cmd.name == "simulator":
                _wait_simulator(state, proc, cmd.metrics_url, mode, progress, max(120.0, wait_timeout_s))
        how = f"{shards} pool agents for {len(agents)} Nodes" if shards > 0 else f"{len(agents)} agents"
        runner = f", workload runner on {len(load_trace(plan.workload_trace))} jobs" if plan.cluster else ", no workload runner"
        progress(f"started {len(started)} processes (simulator, extender, controller manager, {how}{runner})")
        managed = [n["metadata"]["name"] for n in nodes if n["metadata"]["labels"].get(names.LABEL_MANAGED) == "true"]
        reports = wait_reports(state, env, managed, wait_timeout_s, progress)
    except BaseException:
        if os.environ.get("SIMCLUSTER_KEEP_FAILED", "") in ("", "0"):
            stop_deployed(state, progress)
        raise
    env["DEPLOYED_AT"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    state.write_deploy_env(env)
    seconds = time.monotonic() - t0
    progress(f"deploy: every component reports ({seconds:.1f}s)")
    return DeployResult([a.name for a in agents], excluded, seconds, reports)


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
    job per Node, ``simcluster.smokeload``); else the user's, checked here so a bad line fails the
    deploy naming it rather than the runner after start."""
    if trace is None:
        jobs = smokeload.smoke_jobs(nodes)
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
    raise RuntimeFailure(f"simulator did not serve {url} within {timeout_s:.0f}s; log {state.log('simulator')}:\n{tail(state.log('simulator'), 20)}")


def print_reports(reports: list[Report], out: Any = None) -> None:
    out = out or sys.stdout
    width = max((len(r.name) for r in reports), default=8)
    for r in reports:
        print(f"  {r.name:<{width}}  {'ok ' if r.ok else 'NOT'}  {r.detail}", file=out)


# --- reload / restart -------------------------------------------------------------------------


def _commands(state: StateDir) -> dict[str, dict[str, Any]]:
    path = state.root / "render" / "commands.json"
    try:
        data: dict[str, dict[str, Any]] = json.loads(path.read_text())
    except FileNotFoundError:
        raise RuntimeFailure(f"nothing deployed in {state.root} (no {path}); run simcluster deploy") from None
    return data


def restart_process(state: StateDir, name: str, *, kill: bool = False, env_update: Mapping[str, str] | None = None,
                    binary: Path | None = None) -> int:
    """Stops the deployed process `name` (SIGKILL with `kill`, as a crash) and starts it again with
    the recorded command, `env_update` applied and, given, another binary. Returns the new PID."""
    cmds = _commands(state)
    env = state.read_deploy_env() or {}
    if name not in cmds:
        raise RuntimeFailure(f"no deployed process {name!r}; deployed: {', '.join(cmds)}")
    cmd = cmds[name]
    old = env.get(pid_key(name), "")
    if old.isdigit() and deployed_alive(name, int(old), env):
        if kill:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(old), 9)
            deadline = time.monotonic() + 10
            while pid_alive(int(old)) and time.monotonic() < deadline:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(int(old), os.WNOHANG)
                time.sleep(0.05)
        elif deployed_alive(name, int(old), env):
            stop_pid(int(old), None, grace_s=8)
    if env_update:
        cmd["env"].update(env_update)
    if binary is not None:
        cmd["argv"][0] = str(binary)
    proc = ManagedProcess(name, cmd["argv"], Path(cmd["log"]), env=cmd["env"]).start()
    env[pid_key(name)] = str(proc.pid)
    env[f"START_{name}"] = start_ticks(proc.pid)
    state.write_deploy_env(env)
    (state.root / "render" / "commands.json").write_text(json.dumps(cmds, indent=1))
    return proc.pid


def reload(state: StateDir, component: str, dist: Path, *, force: bool, progress: Callable[[str], None]) -> bool:
    """Follows the binary, as the seed's reload: an unchanged PEX changes nothing; a new one (or
    `force`) restarts every process of `component` (``simulator``: the emulator and the workload
    runner, both its binary; the runner finds its Pods again). Returns whether anything restarted."""
    t0 = time.monotonic()
    env = state.read_deploy_env()
    if env is None:
        raise RuntimeFailure(f"nothing deployed in {state.root}; run simcluster deploy")
    if component not in DIST_PEXES or component == "fakesmi":
        raise RuntimeFailure(f"unknown component {component!r}; one of: agent, controller-manager, extender, simulator")
    binaries = install_binaries(state, dist)
    new = binaries[component]
    changed = new.tag != env.get(f"TAG_{component}")
    if not changed and not force:
        progress(f"{component}: binary unchanged ({new.tag}): nothing to do ({time.monotonic() - t0:.1f}s)")
        return False
    names_ = [n for n, _ in recorded_deploy_pids(env) if env.get(f"COMPONENT_{n}") == component]
    for name in names_:
        restart_process(state, name, binary=new.path)
    env = state.read_deploy_env() or {}
    env[f"TAG_{component}"] = new.tag
    env[f"BINARY_{component}"] = str(new.path)
    state.write_deploy_env(env)
    why = f"new binary {new.tag}" if changed else "forced"
    progress(f"{component}: restarted {len(names_)} processes ({why}) in {time.monotonic() - t0:.1f}s")
    return True
