"""How each fault of the catalogue is injected into the live cluster, and cleared.

Processes are hit by signal through the PIDs the state dir records (the supervisor restarts what
dies, as kubelet would). A Node's hardware is hit through the emulator's gRPC fault API
(``InjectFault``, ``ClearFaults``, ``RestartNodeView``), called with the simulator's own PEX as the
interpreter: the simcluster PEX carries no gRPC code (simulated-cluster/BUILD).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field

from joulie_simcluster.chaos.catalogue import Step, choose
from joulie_simcluster.deploy.processes import interpreter, python_env
from joulie_simcluster.errors import RuntimeFailure
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
elif op == "restart-view":
    stub.RestartNodeView(pb.RestartNodeViewRequest(node=node), timeout=20)
"""


@dataclass
class Injected:
    """What one injection hit, and how to end it."""

    target: str
    killed: set[str] = field(default_factory=set)
    """Processes this fault killed on purpose (their restarts are expected, not collateral crashes)."""
    clear: Callable[[], None] | None = None


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
    if name == "limit-reset":
        node = choose(capped_nodes, step.pick)
        emulator_call(state, "restart-view", node)
        return Injected(node)
    if name == "write-refused":
        node = choose(capped_nodes, step.pick)
        emulator_call(state, "write-denied", node)
        emulator_call(state, "restart-view", node)  # something to write: the limits are back at their defaults
        return Injected(node, clear=lambda: emulator_call(state, "clear", node))
    raise RuntimeFailure(f"chaos: no injection for fault {name!r}")
