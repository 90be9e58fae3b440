"""``simcluster reload`` and the smoke's restarts: a deployed process stopped (or killed, as a crash)
and started again with the command ``render/commands.json`` recorded, another binary or changed
settings applied."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from joulie_localcluster.procs import ManagedProcess
from joulie_simcluster.deploy.binaries import DIST_PEXES, install_binaries
from joulie_simcluster.deploy.processes import deployed_alive, pid_key, recorded_deploy_pids
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes.pids import pid_alive, start_ticks, stop_pid
from joulie_simcluster.runtimes.supervision.lock import changing
from joulie_simcluster.state import StateDir


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
    the recorded command, `env_update` applied and, given, another binary. Returns the new PID.
    Under the state dir's lock: the supervisor neither restarts it meanwhile nor counts this as a crash."""
    with changing(state.root):
        return _restart_locked(state, name, kill=kill, env_update=env_update, binary=binary)


def _restart_locked(state: StateDir, name: str, *, kill: bool, env_update: Mapping[str, str] | None,
                    binary: Path | None) -> int:
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


def reload(state: StateDir, component: str, dist: Path, *, force: bool, progress: Callable[[str], None],
           node: str | None = None) -> bool:
    """Follows the binary, as the seed's reload: an unchanged PEX changes nothing; a new one (or
    `force`) restarts every process of `component` (``simulator``: the emulator and the workload
    runner, both its binary; the runner finds its Pods again). With `node` (agents only): just
    that Node's agent, as deleting one DaemonSet Pod would. Returns whether anything restarted."""
    t0 = time.monotonic()
    env = state.read_deploy_env()
    if env is None:
        raise RuntimeFailure(f"nothing deployed in {state.root}; run simcluster deploy")
    if component not in DIST_PEXES or component == "fakesmi":
        raise RuntimeFailure(f"unknown component {component!r}; one of: agent, controller-manager, extender, simulator")
    names_ = [n for n, _ in recorded_deploy_pids(env) if env.get(f"COMPONENT_{n}") == component]
    if node is not None:
        if component != "agent":
            raise RuntimeFailure(f"--node {node}: only agents run per Node (component {component!r} does not)")
        if f"agent-{node}" not in names_:
            known = ", ".join(n.removeprefix("agent-") for n in names_)
            raise RuntimeFailure(f"--node {node}: no agent deployed for that Node; agents run for: {known}")
        names_ = [f"agent-{node}"]
    binaries = install_binaries(state, dist)
    new = binaries[component]
    changed = new.tag != env.get(f"TAG_{component}")
    if not changed and not force:
        progress(f"{component}: binary unchanged ({new.tag}): nothing to do ({time.monotonic() - t0:.1f}s)")
        return False
    for name in names_:
        restart_process(state, name, binary=new.path)
    with changing(state.root):
        env = state.read_deploy_env() or {}
        if node is None:  # one agent on a new binary leaves the others on the recorded one
            env[f"TAG_{component}"] = new.tag
            env[f"BINARY_{component}"] = str(new.path)
        state.write_deploy_env(env)
    why = f"new binary {new.tag}" if changed else "forced"
    progress(f"{component}: restarted {len(names_)} processes ({why}) in {time.monotonic() - t0:.1f}s")
    return True
