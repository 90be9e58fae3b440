"""The supervisor daemon with real processes (``sleep``, no cluster): it restarts a killed deployed
process with backoff, records the new PID and the restart count, leaves alone what a command holding
the state dir's lock stops, and exits when the cluster's record goes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from joulie_localcluster.procs import ManagedProcess
from joulie_simcluster.runtimes.pids import pid_alive, start_ticks
from joulie_simcluster.runtimes.supervision import control
from joulie_simcluster.runtimes.supervision.backoff import BackoffPolicy
from joulie_simcluster.runtimes.supervision.lock import changing
from joulie_simcluster.state import StateDir

FAST = BackoffPolicy(base_s=0.5, max_s=4, reset_after_s=60)


def eventually(cond: Callable[[], bool], timeout_s: float = 15.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout_s}s: {what}")


@pytest.fixture
def state(tmp_path: Path) -> Iterator[StateDir]:
    """A state dir recording one deployed process, ``worker`` (``sleep 300``), and no cluster processes."""
    sd = StateDir(tmp_path / "state")
    sd.write_cluster_env({"SIMCLUSTER_RUNTIME": "process", "STARTED_AT": "t0"})
    argv, env = ["sleep", "300"], {"PATH": os.environ["PATH"]}
    cmd = {"component": "worker", "argv": argv, "env": env, "log": str(sd.log("worker")), "url": ""}
    (sd.root / "render").mkdir(parents=True)
    (sd.root / "render" / "commands.json").write_text(json.dumps({"worker": cmd}))
    proc = ManagedProcess("worker", argv, sd.log("worker"), env=env).start()
    sd.write_deploy_env({"DEPLOY_ID": "d0", "PID_worker": str(proc.pid), "START_worker": start_ticks(proc.pid),
                         "COMPONENT_worker": "worker"})
    try:
        yield sd
    finally:
        control.stop(sd)
        for key, pid in (sd.read_deploy_env() or {}).items():
            if key.startswith("PID_") and pid_alive(int(pid)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(int(pid), signal.SIGKILL)


def worker_pid(sd: StateDir) -> int:
    return int((sd.read_deploy_env() or {})["PID_worker"])


def kill(pid: int) -> None:
    os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)  # the first incarnation is this test's child


def test_a_killed_process_is_restarted_with_growing_backoff_and_counted(state: StateDir) -> None:
    sup_pid = control.ensure(state, FAST)
    assert control.read(state) is not None and control.read(state).running  # type: ignore[union-attr]
    first = worker_pid(state)
    kill(first)
    t0 = time.monotonic()
    eventually(lambda: worker_pid(state) != first and pid_alive(worker_pid(state)), what="worker restarted")
    first_wait_s = time.monotonic() - t0
    second = worker_pid(state)
    # The new PID lands in deploy.env (start_again) a moment before the round writes its record.
    eventually(lambda: control.restarts(state) == {"worker": 1}, timeout_s=5, what="the restart counted")
    assert first_wait_s >= FAST.base_s - 0.1
    os.killpg(second, signal.SIGKILL)  # the supervisor's child now: it reaps it
    t1 = time.monotonic()
    eventually(lambda: worker_pid(state) != second and pid_alive(worker_pid(state)), what="worker restarted again")
    assert time.monotonic() - t1 >= 2 * FAST.base_s - 0.1, "the second crash in a row waits twice as long"
    eventually(lambda: control.restarts(state) == {"worker": 2}, timeout_s=5, what="the second restart counted")
    rec = json.loads((state.root / "supervisor.json").read_text())["processes"]["deploy/worker"]
    assert rec["last_exit"] == "signal 9" and rec["crashes"] == 2
    assert control.read(state).pid == sup_pid  # type: ignore[union-attr]
    assert "restarted as pid" in state.log("supervisor").read_text()


def test_what_a_command_stops_under_the_lock_is_not_restarted(state: StateDir) -> None:
    control.ensure(state, FAST)
    with changing(state.root):
        kill(worker_pid(state))
        state.deploy_env.unlink()  # as stop_deployed does
        time.sleep(2 * FAST.base_s)
    time.sleep(3 * FAST.base_s)
    assert control.restarts(state) == {}
    assert state.read_deploy_env() is None


def test_the_supervisor_exits_when_the_cluster_record_goes(state: StateDir) -> None:
    pid = control.ensure(state, FAST)
    assert control.ensure(state, FAST) == pid, "one supervisor per cluster"
    state.cluster_env.unlink()
    eventually(lambda: not pid_alive(pid), what="supervisor exited")
    assert control.read(state) is None
