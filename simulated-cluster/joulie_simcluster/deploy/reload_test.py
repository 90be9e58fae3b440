"""``reload agent --node N`` with real processes: fake PEXes (shell scripts that sleep) stand in for
the released binaries, so only the selection and the restart are under test."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from joulie_localcluster.procs import ManagedProcess
from joulie_simcluster.deploy.binaries import DIST_PEXES
from joulie_simcluster.deploy.reload import reload
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes.pids import pid_alive, start_ticks
from joulie_simcluster.state import StateDir


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[tuple[StateDir, Path]]:
    dist = tmp_path / "dist"
    for rel in DIST_PEXES.values():
        (dist / rel).parent.mkdir(parents=True, exist_ok=True)
        (dist / rel).write_text("#!/bin/sh\nexec sleep 300\n")
        (dist / rel).chmod(0o755)
    sd = StateDir(tmp_path / "state")
    cmds: dict[str, dict[str, object]] = {}
    env: dict[str, str] = {}
    for node in ("a", "b"):
        name = f"agent-{node}"
        argv, penv = [str(dist / DIST_PEXES["agent"]), "run"], {"PATH": os.environ["PATH"]}
        cmds[name] = {"component": "agent", "argv": argv, "env": penv, "log": str(sd.log(name)), "url": ""}
        p = ManagedProcess(name, argv, sd.log(name), env=penv).start()
        env.update({f"PID_{name}": str(p.pid), f"START_{name}": start_ticks(p.pid), f"COMPONENT_{name}": "agent"})
    (sd.root / "render").mkdir(parents=True)
    (sd.root / "render" / "commands.json").write_text(json.dumps(cmds))
    sd.write_deploy_env(env)
    try:
        yield sd, dist
    finally:
        for key, pid in (sd.read_deploy_env() or {}).items():
            if key.startswith("PID_"):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(int(pid), signal.SIGKILL)


def pids(sd: StateDir) -> dict[str, int]:
    return {k.removeprefix("PID_"): int(v) for k, v in (sd.read_deploy_env() or {}).items() if k.startswith("PID_")}


def test_reload_with_a_node_restarts_that_nodes_agent_only(deployed: tuple[StateDir, Path]) -> None:
    sd, dist = deployed
    before = pids(sd)
    assert reload(sd, "agent", dist, force=True, progress=lambda _: None, node="b")
    after = pids(sd)
    assert after["agent-a"] == before["agent-a"] and after["agent-b"] != before["agent-b"]
    assert pid_alive(after["agent-b"]) and not pid_alive(before["agent-b"])


def test_a_node_without_an_agent_or_a_component_not_per_node_is_refused(deployed: tuple[StateDir, Path]) -> None:
    sd, dist = deployed
    with pytest.raises(RuntimeFailure, match="--node c: no agent deployed for that Node; agents run for: a, b"):
        reload(sd, "agent", dist, force=True, progress=lambda _: None, node="c")
    with pytest.raises(RuntimeFailure, match="only agents run per Node"):
        reload(sd, "extender", dist, force=True, progress=lambda _: None, node="a")
