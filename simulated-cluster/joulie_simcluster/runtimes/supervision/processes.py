"""What the supervisor watches, read from the state directory, and how one process starts again.

Two records, each a PID file and a command file:

- the cluster's processes (etcd, kube-apiserver, kube-scheduler, KWOK, Prometheus, otelcol):
  PIDs in ``cluster.env``, command lines in ``render/cluster-commands.json`` (written by ``up``);
- the deployed ones (simulator, extender, controller manager replicas, agents, workload runner):
  PIDs and start times in ``deploy.env``, command lines in ``render/commands.json`` (``deploy``).

A process starts again with the same command line, environment and log (appended): the control
plane on its existing data and certificates, at the ports the others already know. The caller
holds the state dir's lock (``lock.changing``).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from joulie_localcluster.procs import ManagedProcess
from joulie_simcluster.runtimes.pids import pid_alive, start_ticks
from joulie_simcluster.state import OPTIONAL_PROCESSES, PROCESSES, StateDir, pid_key

Kind = Literal["cluster", "deploy"]


@dataclass(frozen=True)
class Watched:
    """One process the state dir records."""

    name: str
    kind: Kind
    pid: int
    alive: bool


def cluster_commands_path(state: StateDir) -> Path:
    return state.root / "render" / "cluster-commands.json"


def deploy_commands_path(state: StateDir) -> Path:
    return state.root / "render" / "commands.json"


def _read_json(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data: dict[str, dict[str, Any]] = json.loads(path.read_text())
        return data
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def record_cluster_commands(state: StateDir, procs: Iterable[ManagedProcess]) -> None:
    """Adds (or replaces) the command lines of `procs` in ``render/cluster-commands.json``."""
    path = cluster_commands_path(state)
    data = _read_json(path)
    for p in procs:
        data[p.name] = {"argv": list(p.argv), "env": p.env, "log": str(p.log_path),
                        "cwd": str(p.cwd) if p.cwd else None}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def watched(state: StateDir) -> list[Watched]:
    """Every process the state dir records, cluster first, in start order, alive or not."""
    out: list[Watched] = []
    cluster = state.read_cluster_env() or {}
    for name in PROCESSES + OPTIONAL_PROCESSES:
        raw = cluster.get(pid_key(name), "")
        if raw.isdigit():
            out.append(Watched(name, "cluster", int(raw), pid_alive(int(raw), name)))
    deployed = state.read_deploy_env() or {}
    for key, raw in deployed.items():
        if key.startswith("PID_") and raw.isdigit():
            name = key.removeprefix("PID_")
            alive = pid_alive(int(raw)) and start_ticks(int(raw)) == deployed.get(f"START_{name}")
            out.append(Watched(name, "deploy", int(raw), alive))
    return out


def start_again(state: StateDir, name: str, kind: Kind) -> subprocess.Popen[bytes]:
    """Starts `name` with its recorded command and records the new PID (the caller holds the lock).
    Raises KeyError when no command is recorded for it, OSError when it cannot start."""
    if kind == "cluster":
        cmd = _read_json(cluster_commands_path(state))[name]
        proc = ManagedProcess(name, cmd["argv"], Path(cmd["log"]), env=cmd.get("env"),
                              cwd=Path(cmd["cwd"]) if cmd.get("cwd") else None).start()
        env = state.read_cluster_env() or {}
        env[pid_key(name)] = str(proc.pid)
        state.write_cluster_env(env)
    else:
        cmd = _read_json(deploy_commands_path(state))[name]
        proc = ManagedProcess(name, cmd["argv"], Path(cmd["log"]), env=cmd.get("env")).start()
        denv = state.read_deploy_env() or {}
        denv[f"PID_{name}"] = str(proc.pid)
        denv[f"START_{name}"] = start_ticks(proc.pid)
        state.write_deploy_env(denv)
    assert proc.proc is not None
    return proc.proc
