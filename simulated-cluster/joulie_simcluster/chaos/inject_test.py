"""Process faults with real processes (``sleep``): the chosen one is killed (or frozen and thawed),
nothing else is touched."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from joulie_simcluster.chaos.catalogue import FAULTS, Step
from joulie_simcluster.chaos.inject import inject
from joulie_simcluster.runtimes.pids import pid_alive, start_ticks
from joulie_simcluster.state import StateDir, pid_key
from joulie_testinfra.procs import ManagedProcess


@pytest.fixture
def state(tmp_path: Path) -> Iterator[tuple[StateDir, dict[str, ManagedProcess]]]:
    sd = StateDir(tmp_path / "state")
    procs = {n: ManagedProcess(n, ["sleep", "300"], sd.log(n)).start() for n in ("agent-a", "agent-b", "prometheus")}
    sd.write_deploy_env({**{f"PID_{n}": str(p.pid) for n, p in procs.items() if n.startswith("agent")},
                         **{f"START_{n}": start_ticks(p.pid) for n, p in procs.items()}})
    sd.write_cluster_env({pid_key("prometheus"): str(procs["prometheus"].pid)})
    try:
        yield sd, procs
    finally:
        for p in procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.stop(grace_s=1)


def _state_of(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_agent_kill_kills_the_picked_agent_only(state: tuple[StateDir, dict[str, ManagedProcess]]) -> None:
    sd, procs = state
    hit = inject(sd, Step(FAULTS["agent-kill"], 1, 0.0, 0.9), ["a", "b"], [])
    assert hit.target == "agent-b" and hit.killed == {"agent-b"} and hit.clear is None
    procs["agent-b"].proc.wait(timeout=5)  # type: ignore[union-attr]
    assert not pid_alive(procs["agent-b"].pid) and pid_alive(procs["agent-a"].pid)


def test_prometheus_freeze_stops_it_until_cleared(state: tuple[StateDir, dict[str, ManagedProcess]]) -> None:
    sd, procs = state
    pid = procs["prometheus"].pid
    hit = inject(sd, Step(FAULTS["prometheus-freeze"], 1, 0.0, 0.0), [], [])
    time.sleep(0.2)
    assert _state_of(pid) == "T" and hit.killed == set() and hit.clear is not None
    hit.clear()
    time.sleep(0.2)
    assert _state_of(pid) == "S"
