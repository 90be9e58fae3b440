"""Starting, stopping and reading the cluster's supervisor daemon (``daemon.py``) from the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from joulie_localcluster.procs import tail
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes.pids import pid_alive, start_ticks, stop_pid
from joulie_simcluster.runtimes.supervision.backoff import BackoffPolicy
from joulie_simcluster.runtimes.supervision.daemon import record_path
from joulie_simcluster.state import StateDir


@dataclass(frozen=True)
class SupervisorState:
    """``supervisor.json`` as ``status`` shows it."""

    pid: int
    running: bool
    processes: dict[str, dict[str, Any]]


def read(state: StateDir) -> SupervisorState | None:
    try:
        data = json.loads(record_path(state).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    pid = int(data.get("pid") or 0)
    running = pid > 0 and pid_alive(pid) and start_ticks(pid) == data.get("startTicks")
    return SupervisorState(pid, running, dict(data.get("processes") or {}))


def restarts(state: StateDir) -> dict[str, int]:
    """Process name -> restarts the supervisor made (its record; empty when none runs)."""
    sup = read(state)
    return {key.split("/", 1)[1]: int(rec.get("restarts", 0)) for key, rec in (sup.processes if sup else {}).items()}


def ensure(state: StateDir, policy: BackoffPolicy, timeout_s: float = 20.0) -> int:
    """Starts the supervisor unless one runs for this state dir; returns its PID once it has
    written its record (it runs detached, in its own session, and outlives the CLI)."""
    sup = read(state)
    if sup is not None and sup.running:
        return sup.pid
    record_path(state).unlink(missing_ok=True)
    state.logs.mkdir(parents=True, exist_ok=True)
    # Absolute: the daemon runs in the state dir, and sys.path may name directories relative to ours.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path if p)}
    with state.log("supervisor").open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "joulie_simcluster.runtimes.supervision.daemon", "--state", str(state.root),
             "--backoff", f"{policy.base_s:g},{policy.max_s:g},{policy.reset_after_s:g}"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True,
            cwd=str(state.root))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        sup = read(state)
        if sup is not None and sup.pid == proc.pid:
            return proc.pid
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeFailure(f"the supervisor did not start (exit {proc.poll()}); last lines of {state.log('supervisor')}:\n"
                         f"{tail(state.log('supervisor'), 15)}")


def stop(state: StateDir) -> bool:
    """Stops the supervisor (before a deliberate stop of what it watches). True if one ran."""
    sup = read(state)
    if sup is None or not sup.running:
        record_path(state).unlink(missing_ok=True)
        return False
    stop_pid(sup.pid, None, grace_s=5)
    record_path(state).unlink(missing_ok=True)
    return True
