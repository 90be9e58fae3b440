"""How each fault of the catalogue is injected into the live cluster, and cleared.

Processes are hit by signal through the PIDs the state dir records (the supervisor restarts what
dies, as kubelet would). A Node's hardware is hit through the emulator's gRPC fault API
(``InjectFault``, ``ClearFaults``, ``RestartNodeView``), called with the simulator's own PEX as the
interpreter: the simcluster PEX carries no gRPC code (simulated-cluster/BUILD). The API faults go
through the injecting proxy's fault file (``apiproxy.py``), clock skew through libfaketime preloaded
into one agent, garbage sysfs files are written into a Node's files-mode tree and made immutable.

The BMC faults (``bmc-refuse``, ``bmc-hang``) are injected by ``bmcinject.py``; ``Injected`` lives in
``injected.py``. Some faults also say what they showed (``Injected.note``: the probe Pod's binding, the twins'
power source, the agent's timeouts), watched once a second during the window (``Injected.watch``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from kubernetes import client as k8s

from joulie_simcluster.chaos.apifaults import ApiFault, ApiFaultKind
from joulie_simcluster.chaos.bmcinject import bmc_fault
from joulie_simcluster.chaos.catalogue import Step, choose
from joulie_simcluster.chaos.freezes import AgentLostWatch, FreezeClock, deadline_note
from joulie_simcluster.chaos.injected import PROBE_NAMESPACE, Injected
from joulie_simcluster.deploy.processes import interpreter, python_env
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes import kube
from joulie_simcluster.runtimes.pids import pid_alive
from joulie_simcluster.runtimes.supervision.lock import changing
from joulie_simcluster.runtimes.supervision.processes import deploy_commands_path, start_again
from joulie_simcluster.state import StateDir, pid_key

# Run inside the simulator's PEX (PEX_INTERPRETER=1): argv = address, operation, node.
_GRPC = """
import sys, grpc
from joulie.sim.v1 import emulator_pb2 as pb, emulator_pb2_grpc as pbg
addr, op, node = sys.argv[1:4]
stub = pbg.EmulatorServiceStub(grpc.insecure_channel(addr))
if op == "write-denied":
    stub.InjectFault(pb.InjectFaultRequest(node=node, fault=pb.Fault(kind=pb.FAULT_KIND_WRITE_DENIED)), timeout=20)
elif op == "clear":
    stub.ClearFaults(pb.ClearFaultsRequest(node=node), timeout=20)
elif op == "tool-hang":
    stub.InjectFault(pb.InjectFaultRequest(node=node, fault=pb.Fault(kind=pb.FAULT_KIND_GPU_TOOL_HANG)), timeout=20)
elif op == "restart-view":
    stub.RestartNodeView(pb.RestartNodeViewRequest(node=node), timeout=20)
"""


def _kill(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _deploy_pid(state: StateDir, name: str) -> int:
    raw = (state.read_deploy_env() or {}).get(f"PID_{name}", "")
    if not raw.isdigit():
        raise RuntimeFailure(f"chaos: no deployed process {name!r} (run simcluster deploy)")
    return int(raw)


def _cluster_pid(state: StateDir, name: str) -> int:
    raw = (state.read_cluster_env() or {}).get(pid_key(name), "")
    if not raw.isdigit():
        raise RuntimeFailure(f"chaos: cluster.env records no {name}")
    return int(raw)


def emulator_call(state: StateDir, op: str, node: str) -> None:
    env = state.read_deploy_env() or {}
    pex, addr = env.get("BINARY_simulator", ""), env.get("SIMULATOR_GRPC", "")
    r = subprocess.run([interpreter(), pex, "-c", _GRPC, addr, op, node], env={**python_env(), "PEX_INTERPRETER": "1"},
                       capture_output=True, text=True, timeout=120, check=False)
    if r.returncode != 0:
        raise RuntimeFailure(f"chaos: emulator {op} on {node} failed: {r.stderr.strip()[-400:]}")


def leader(state: StateDir) -> str:
    """The controller-manager replica whose /metrics says it leads."""
    env = state.read_deploy_env() or {}
    for key, comp in env.items():
        if key.startswith("COMPONENT_") and comp == "controller-manager":
            name = key.removeprefix("COMPONENT_")
            with contextlib.suppress(OSError, ValueError), \
                    urllib.request.urlopen(env.get(f"URL_{name}", ""), timeout=3) as resp:
                if "joulie_policy_leader 1.0" in resp.read().decode():
                    return name
    raise RuntimeFailure("chaos: no controller-manager replica leads (deploy with controllerManager.replicas: 2)")


def inject(state: StateDir, step: Step, agent_nodes: list[str], capped_nodes: list[str]) -> Injected:
    """Injects `step`'s fault now; `capped_nodes` are the Nodes whose caps the agents write."""
    name = step.fault.name
    if name == "agent-kill":
        node = choose(agent_nodes, step.pick)
        _kill(_deploy_pid(state, f"agent-{node}"))
        return Injected(f"agent-{node}", {f"agent-{node}"})
    if name in ("controller-kill", "simulator-kill", "extender-kill"):
        proc = {"controller-kill": "controller-manager", "simulator-kill": "simulator", "extender-kill": "extender"}[name]
        _kill(_deploy_pid(state, proc))
        return Injected(proc, {proc})
    if name == "leader-failover":
        proc = leader(state)
        _kill(_deploy_pid(state, proc))
        return Injected(proc, {proc})
    if name in ("apiserver-kill", "etcd-kill", "prometheus-kill"):
        proc = {"apiserver-kill": "kube-apiserver", "etcd-kill": "etcd", "prometheus-kill": "prometheus"}[name]
        _kill(_cluster_pid(state, proc))
        return Injected(proc, {proc})
    if name == "prometheus-freeze":
        pid = _cluster_pid(state, "prometheus")
        _kill(pid, signal.SIGSTOP)
        return Injected("prometheus", clear=lambda: _kill(pid, signal.SIGCONT))
    if name == "apiserver-freeze":
        return _apiserver_freeze(state)
    if name == "agent-freeze":
        return _agent_freeze(state, choose(agent_nodes, step.pick))
    if name == "limit-reset":
        node = choose(capped_nodes, step.pick)
        emulator_call(state, "restart-view", node)
        return Injected(node)
    if name == "write-refused":
        node = choose(capped_nodes, step.pick)
        emulator_call(state, "write-denied", node)
        emulator_call(state, "restart-view", node)  # something to write: the limits are back at their defaults
        return Injected(node, clear=lambda: emulator_call(state, "clear", node))
    if name in ("api-conflict-storm", "api-throttle"):
        return _api_fault(state, "conflict" if name == "api-conflict-storm" else "throttle", step.fault.hold_s)
    if name == "extender-slow":
        return _extender_slow(state)
    if name == "prometheus-empty":
        return _prometheus_empty(state, agent_nodes)
    if name == "tool-timeout":
        return _tool_timeout(state, step, agent_nodes)
    if name == "clock-skew":
        return _clock_skew(state, choose(_cpu_only(state, agent_nodes), step.pick))
    if name == "sysfs-garbage":
        return _sysfs_garbage(state, step, capped_nodes)
    if name in ("bmc-refuse", "bmc-hang"):
        return bmc_fault(state, refuse=name == "bmc-refuse")
    raise RuntimeFailure(f"chaos: no injection for fault {name!r}")


def _apiserver_freeze(state: StateDir) -> Injected:
    pid = _cluster_pid(state, "kube-apiserver")
    log = state.log("controller-manager")
    offset = _log_size(log)
    _kill(pid, signal.SIGSTOP)
    held = FreezeClock()

    def clear() -> None:
        _kill(pid, signal.SIGCONT)
        held.thawed()
    return Injected("kube-apiserver", clear=clear, note=lambda: deadline_note(_log_since(log, offset), held.held_s()))


def _agent_freeze(state: StateDir, node: str) -> Injected:
    name = f"agent-{node}"
    pid = _deploy_pid(state, name)
    _kill(pid, signal.SIGSTOP)
    lost = AgentLostWatch(node)

    def watch() -> None:
        with contextlib.suppress(Exception):
            lost.observe(kube.kube_list(state.kubeconfig, kube.NODETWINS, attempts=1))
    return Injected(name, clear=lambda: _kill(pid, signal.SIGCONT), watch=watch, note=lambda: lost.note(name))


def _log_since(path: Path, offset: int) -> str:
    try:
        with path.open("rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _api_fault(state: StateDir, kind: ApiFaultKind, hold_s: float) -> Injected:
    """The proxy answers 409 (writes) or 429 (everything) until cleared; the file's own end, a few
    seconds later, ends it even if this run dies first."""
    control = (state.read_deploy_env() or {}).get("API_PROXY_CONTROL", "")
    if not control:
        raise RuntimeFailure("chaos: the api-* faults need the API proxy: deploy with SIMCLUSTER_API_PROXY=1")
    path, log = Path(control), state.log("api-proxy")
    offset = _log_size(log)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(ApiFault(kind, time.time() + hold_s + 5.0).to_json())
    tmp.replace(path)

    def note() -> str:
        over = [line for line in _log_since(log, offset).splitlines() if "fault over:" in line]
        return over[-1].split("api-proxy: ", 1)[-1] if over else "the proxy logged no end of the fault (no call after it)"
    return Injected("api-proxy", clear=lambda: path.unlink(missing_ok=True), note=note)


def _probe_pod(state: StateDir) -> str:
    """A Pod that tolerates the KWOK Nodes' taint, placed by kube-scheduler (and so by its extender
    call): whether it binds, and when, tells what a slow extender does to scheduling."""
    name = f"chaos-probe-{int(time.time() * 1000) % 10**9}"
    pod = k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=name, labels={"app.kubernetes.io/name": "chaos-probe"}),
        spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="probe", image="registry.k8s.io/pause:3.10")],
                           tolerations=[k8s.V1Toleration(key="kwok.x-k8s.io/node", operator="Exists", effect="NoSchedule")]))
    kube.core_api(state.kubeconfig).create_namespaced_pod(PROBE_NAMESPACE, pod)
    return name


def _extender_slow(state: StateDir) -> Injected:
    pid = _deploy_pid(state, "extender")
    _kill(pid, signal.SIGSTOP)
    stopped = time.time()
    probe = _probe_pod(state)
    thawed: list[float] = []

    def clear() -> None:
        _kill(pid, signal.SIGCONT)
        thawed.append(time.time())

    def note() -> str:
        core = kube.core_api(state.kubeconfig)
        deadline, bound = time.monotonic() + 60, None
        while time.monotonic() < deadline:
            pod = core.read_namespaced_pod(probe, PROBE_NAMESPACE)
            conds = (pod.status.conditions if pod.status else None) or []
            at = next((c.last_transition_time for c in conds if c.type == "PodScheduled" and c.status == "True"), None)
            created = pod.metadata.creation_timestamp if pod.metadata else None
            if pod.spec and pod.spec.node_name and at is not None and created is not None:
                bound = (at - created).total_seconds()
                break
            time.sleep(1.0)
        with contextlib.suppress(Exception):
            core.delete_namespaced_pod(probe, PROBE_NAMESPACE, grace_period_seconds=0)
        held = (thawed[0] if thawed else time.time()) - stopped
        if bound is None:
            return f"probe Pod {probe} not bound within 60 s after the extender was stopped {held:.0f} s"
        when = "while the extender was still stopped" if bound < held else "only after the extender was resumed"
        return f"probe Pod {probe} bound {bound:.0f} s after creation, {when} ({held:.0f} s stopped)"
    return Injected("extender", clear=clear, note=note)


def _sources(state: StateDir, agent_nodes: list[str]) -> dict[str, str]:
    """Node -> status.powerMeasurement.source of its NodeTwin (prometheus, prometheus-no-data, ...)."""
    return {t["spec"]["nodeName"]: str(((t.get("status") or {}).get("powerMeasurement") or {}).get("source", ""))
            for t in kube.kube_list(state.kubeconfig, kube.NODETWINS, attempts=1) if t["spec"]["nodeName"] in agent_nodes}


RATE_REFILL_WAIT_S = 300.0
"""How long the prometheus-empty note waits for every twin to read measured power again."""


def _prometheus_empty(state: StateDir, agent_nodes: list[str]) -> Injected:
    """Frozen first, so nothing is written while its data dir moves aside; killed; the supervisor
    starts it again on the same --storage.tsdb.path, now empty."""
    pid = _cluster_pid(state, "prometheus")
    _kill(pid, signal.SIGSTOP)
    tsdb, aside = state.root / "tsdb", state.root / f"tsdb.chaos-{int(time.time())}"
    tsdb.rename(aside)
    _kill(pid, signal.SIGKILL)
    start = time.monotonic()
    worst_no_data: list[int] = [0]
    back_after: list[float] = []
    seen: dict[str, str] = {}

    def watch() -> None:
        with contextlib.suppress(Exception):
            seen.update(_sources(state, agent_nodes))
            no_data = sum(s == "prometheus-no-data" for s in seen.values())
            worst_no_data[0] = max(worst_no_data[0], no_data)
            if worst_no_data[0] and not no_data and not back_after:
                back_after.append(time.monotonic() - start)

    def note() -> str:
        shutil.rmtree(aside, ignore_errors=True)
        # The rate() over an empty TSDB needs two samples inside the rate window: wait for it
        # here (bounded), as the window of the table closes once the processes are back.
        deadline = time.monotonic() + RATE_REFILL_WAIT_S
        watch()
        while not back_after and time.monotonic() < deadline:
            time.sleep(2.0)
            watch()
        back = f"all back on prometheus {back_after[0]:.0f} s after the kill" if back_after else (
            "not all back on prometheus by the end of the window: " + json.dumps(seen))
        return f"twins on prometheus-no-data (neutral): up to {worst_no_data[0]} of {len(seen)}; {back}"
    return Injected("prometheus", {"prometheus"}, watch=watch, note=note)


def _gpu_nodes(state: StateDir, agent_nodes: list[str]) -> list[str]:
    url = f"http://{(state.read_deploy_env() or {})['SIMULATOR_HTTP']}/debug/emulate"
    with urllib.request.urlopen(url, timeout=5) as resp:
        return sorted(n["name"] for n in json.loads(resp.read())["nodes"] if n.get("gpus") and n["name"] in agent_nodes)


def _hung_tools(node: str) -> int:
    """Tool processes (fakesmi) of `node` running now: the hang, seen from outside."""
    mark = b"HWEMU_STATE_ROOT="
    count = 0
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                env = (proc / "environ").read_bytes().split(b"\0")
                if any(e.startswith(mark) and e.rstrip(b"/").endswith(f"/{node}/state".encode()) for e in env):
                    count += 1
    return count


def _tool_timeout(state: StateDir, step: Step, agent_nodes: list[str]) -> Injected:
    node = choose(_gpu_nodes(state, agent_nodes), step.pick)
    log = state.log(f"agent-{node}")
    offset = _log_size(log)
    emulator_call(state, "tool-hang", node)
    hung: list[int] = [0]
    said: list[str] = []

    def watch() -> None:
        hung[0] = max(hung[0], _hung_tools(node))
        with contextlib.suppress(Exception):
            for t in kube.kube_list(state.kubeconfig, kube.NODETWINS, attempts=1):
                text = json.dumps(((t.get("status") or {}).get("controlStatus") or {}).get("gpu") or {})
                if t["spec"]["nodeName"] == node and "timed out" in text and not said:
                    said.append(text[:200])

    def note() -> str:
        lines = [line for line in _log_since(log, offset).splitlines() if "timed out" in line or "timeout" in line.lower()]
        return (f"up to {hung[0]} tool processes of {node} hanging at once; agent-{node} logged {len(lines)} timeout "
                f"line(s); controlStatus.gpu " + (f"said: {said[0]}" if said else "never said 'timed out'"))
    return Injected(node, clear=lambda: emulator_call(state, "clear", node), watch=watch, note=note)


LIBFAKETIME = (Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"),
               Path("/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1"), Path("/usr/lib/faketime/libfaketime.so.1"))
SKEW_S = -180
"""The skewed agent's wall clock, seconds from the truth: behind by more than the controller's
AGENT_LOST_AFTER (120 s), inside the 5 minutes the throwaway certificates are valid before their creation."""


def _leader_gauge(state: StateDir, metric: str, node: str) -> float:
    """One gauge of the leading controller-manager replica's /metrics for `node`."""
    url = (state.read_deploy_env() or {}).get(f"URL_{leader(state)}", "")
    with urllib.request.urlopen(url, timeout=3) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith(metric + "{") and f'node="{node}"' in line:
                return float(line.rsplit(" ", 1)[1])
    raise LookupError(f"{metric} for {node} not in {url}")


def _cpu_only(state: StateDir, agent_nodes: list[str]) -> list[str]:
    """Agents of Nodes without GPUs: they start no tool subprocess, whose wait libfaketime breaks
    (below); on a GPU Node the skew would be masked by that artifact."""
    try:
        gpus = set(_gpu_nodes(state, agent_nodes))
    except (OSError, KeyError, ValueError):
        gpus = set()
    return [n for n in agent_nodes if n not in gpus]


def _restart_with_env(state: StateDir, name: str, env: dict[str, str]) -> None:
    """`name` killed and started again with `env` as its recorded environment (under the lock: the
    supervisor neither restarts it meanwhile nor counts it)."""
    with changing(state.root):
        path = deploy_commands_path(state)
        cmds = json.loads(path.read_text())
        cmds[name]["env"] = env
        path.write_text(json.dumps(cmds, indent=1))
        pid = _deploy_pid(state, name)
        _kill(pid)
        deadline = time.monotonic() + 10
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        start_again(state, name, "deploy")


def _clock_skew(state: StateDir, node: str) -> Injected:
    lib = next((p for p in LIBFAKETIME if p.is_file()), None)
    if lib is None:
        raise RuntimeFailure(f"chaos: clock-skew needs libfaketime ({LIBFAKETIME[0]}; Debian package libfaketime)")
    name = f"agent-{node}"
    log = state.log(name)
    offset = _log_size(log)
    original = dict(json.loads(deploy_commands_path(state).read_text())[name]["env"])
    # Wall clock only: NTP skew leaves CLOCK_MONOTONIC alone, and so does this. libfaketime 0.9.10
    # (Debian bookworm) then makes Python's time.sleep fail with EINVAL (clock_nanosleep on the
    # monotonic clock, absolute deadline), which subprocess waits use; faking the monotonic clock too
    # instead makes threading waits last the offset longer (a 180 s Event.wait for 0.5 s). Neither is
    # a real skew's effect, so the target is a Node without GPU tools and the note says what the
    # agent logged.
    _restart_with_env(state, name, {**original, "LD_PRELOAD": str(lib), "FAKETIME": f"{SKEW_S:+d}",
                                    "FAKETIME_DONT_FAKE_MONOTONIC": "1"})
    verdicts: set[str] = set()
    heartbeats: set[str] = set()
    ages_s: list[float] = []

    def watch() -> None:
        with contextlib.suppress(Exception):
            for t in kube.kube_list(state.kubeconfig, kube.NODETWINS, attempts=1):
                if t["spec"]["nodeName"] == node:
                    st = t.get("status") or {}
                    verdicts.add(str((st.get("agent") or {}).get("state")))
                    heartbeats.add(str((st.get("controlStatus") or {}).get("heartbeatAt")))
        with contextlib.suppress(Exception):
            ages_s.append(_leader_gauge(state, "joulie_node_agent_heartbeat_age_seconds", node))

    def note() -> str:
        return (f"{name} clock {SKEW_S:+d} s; controller's verdicts seen: {', '.join(sorted(verdicts))}; heartbeatAt "
                f"written: {', '.join(sorted(heartbeats)[-4:])}; heartbeat age (leader's metric) up to "
                f"{max(ages_s, default=float('nan')):.0f} s; agent log lines with EINVAL (the libfaketime artifact): "
                f"{_log_since(log, offset).count('Invalid argument')}")
    return Injected(name, {name}, clear=lambda: _restart_with_env(state, name, original), watch=watch, note=note)


GARBAGE = b"\xff\xfe\x00 not-a-number \x1b[0m\n"


def _sysfs_files(state: StateDir, node: str) -> list[Path]:
    sys_root = state.root / "hwemu" / node / "sys"
    return sorted(p for pattern in ("**/energy_uj", "**/constraint_0_power_limit_uw") for p in sys_root.glob(pattern))


def _chattr(flag: str, files: list[Path]) -> None:
    r = subprocess.run(["chattr", flag, *map(str, files)], capture_output=True, text=True, check=False, timeout=30)
    if r.returncode != 0:
        raise RuntimeFailure(f"chaos: chattr {flag} failed: {r.stderr.strip()[-300:]}")


def _sysfs_garbage(state: StateDir, step: Step, capped_nodes: list[str]) -> Injected:
    if (state.read_deploy_env() or {}).get("HWEMU_MODE") != "files":
        raise RuntimeFailure("chaos: sysfs-garbage needs files mode (SIMCLUSTER_HWEMU=files): a FUSE view refuses chattr")
    node = choose([n for n in capped_nodes if _sysfs_files(state, n)], step.pick)
    files = _sysfs_files(state, node)
    log, sim_log = state.log(f"agent-{node}"), state.log("simulator")
    offsets = (_log_size(log), _log_size(sim_log))
    for f in files:
        f.write_bytes(GARBAGE)
    _chattr("+i", files)

    def note() -> str:
        agent = [line for line in _log_since(log, offsets[0]).splitlines() if "Traceback" not in line and (
            "energy_uj" in line or "power_limit_uw" in line)]
        sim = [line for line in _log_since(sim_log, offsets[1]).splitlines() if node in line]
        return (f"{len(files)} files garbage and immutable on {node}; agent log lines naming them: {len(agent)}"
                + (f" (first: {agent[0].strip()[-160:]})" if agent else "") + f"; simulator lines naming {node}: {len(sim)}"
                + (f" (first: {sim[0].strip()[-160:]})" if sim else ""))
    return Injected(node, clear=lambda: _chattr("-i", files), note=note)
