"""Process faults with real processes (``sleep``): the chosen one is killed (or frozen and thawed),
nothing else is touched."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from joulie_localcluster.procs import ManagedProcess
from joulie_simcluster.chaos.catalogue import FAULTS, Step
from joulie_simcluster.chaos.inject import GARBAGE, LIBFAKETIME, inject
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes.pids import pid_alive, start_ticks
from joulie_simcluster.state import StateDir, pid_key


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


def test_prometheus_empty_kills_it_and_leaves_an_empty_tsdb_path(state: tuple[StateDir, dict[str, ManagedProcess]],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    sd, procs = state
    monkeypatch.setattr("joulie_simcluster.chaos.inject.RATE_REFILL_WAIT_S", 0.0)  # no API here to wait for
    (sd.root / "tsdb" / "wal").mkdir(parents=True)
    hit = inject(sd, Step(FAULTS["prometheus-empty"], 1, 0.0, 0.0), [], [])
    procs["prometheus"].proc.wait(timeout=5)  # type: ignore[union-attr]
    assert hit.killed == {"prometheus"} and not (sd.root / "tsdb").exists(), "restarted on a fresh TSDB"
    aside = list(sd.root.glob("tsdb.chaos-*"))
    assert len(aside) == 1 and (aside[0] / "wal").is_dir()
    assert hit.note is not None and "twins on prometheus-no-data" in hit.note()
    assert not list(sd.root.glob("tsdb.chaos-*")), "the old data goes once the window is over"


def _record_commands(sd: StateDir, procs: dict[str, ManagedProcess]) -> None:
    path = sd.root / "render" / "commands.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({n: {"argv": list(p.argv), "env": {"PATH": os.environ["PATH"]}, "log": str(p.log_path)}
                                for n, p in procs.items()}))


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


@pytest.mark.skipif(not any(p.is_file() for p in LIBFAKETIME), reason="libfaketime not installed (Debian libfaketime)")
def test_clock_skew_restarts_one_agent_under_libfaketime_and_clear_restores_it(
        state: tuple[StateDir, dict[str, ManagedProcess]]) -> None:
    sd, procs = state
    _record_commands(sd, procs)
    hit = inject(sd, Step(FAULTS["clock-skew"], 1, 0.0, 0.0), ["a", "b"], [])
    skewed = int((sd.read_deploy_env() or {})["PID_agent-a"])
    try:
        assert hit.target == "agent-a" and hit.killed == {"agent-a"} and not pid_alive(procs["agent-a"].pid)
        # Read until the new process shows its environment: under load CI once read it empty.
        deadline = time.monotonic() + 5
        env = _environ(skewed)
        while "FAKETIME" not in env and pid_alive(skewed) and time.monotonic() < deadline:
            time.sleep(0.1)
            env = _environ(skewed)
        assert env.get("FAKETIME") == "-180" and "libfaketime" in env.get("LD_PRELOAD", ""), (
            f"pid {skewed} (state {_state_of(skewed) if Path(f'/proc/{skewed}').exists() else 'gone'}) "
            f"environ {sorted(env)}; log: {sd.log('agent-a').read_text()[-400:]!r}")
        assert pid_alive(procs["agent-b"].pid)
        assert hit.clear is not None
        hit.clear()
        restored = int((sd.read_deploy_env() or {})["PID_agent-a"])
        assert restored != skewed and "FAKETIME" not in _environ(restored)
    finally:
        for key in ("PID_agent-a",):
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.killpg(int((sd.read_deploy_env() or {})[key]), signal.SIGKILL)


def test_clock_skew_names_the_library_it_needs_when_absent(state: tuple[StateDir, dict[str, ManagedProcess]],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    sd, _ = state
    monkeypatch.setattr("joulie_simcluster.chaos.inject.LIBFAKETIME", (Path("/nonexistent/libfaketime.so.1"),))
    with pytest.raises(RuntimeFailure, match="clock-skew needs libfaketime"):
        inject(sd, Step(FAULTS["clock-skew"], 1, 0.0, 0.0), ["a"], [])


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chattr") is None, reason="chattr +i needs root")
def test_sysfs_garbage_makes_the_rapl_files_garbage_and_immutable_until_cleared(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "state")
    sd.write_deploy_env({"HWEMU_MODE": "files"})
    zone = sd.root / "hwemu" / "n1" / "sys" / "devices" / "virtual" / "powercap" / "intel-rapl" / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "energy_uj").write_text("123\n")
    (zone / "constraint_0_power_limit_uw").write_text("200000000\n")
    hit = inject(sd, Step(FAULTS["sysfs-garbage"], 1, 0.0, 0.0), ["n1"], ["n1"])
    try:
        assert hit.target == "n1" and (zone / "energy_uj").read_bytes() == GARBAGE
        with pytest.raises(PermissionError):
            (zone / "constraint_0_power_limit_uw").write_text("100000000\n")
    finally:
        assert hit.clear is not None
        hit.clear()
    (zone / "constraint_0_power_limit_uw").write_text("100000000\n")
    assert hit.note is not None and "2 files garbage and immutable on n1" in hit.note()


def test_sysfs_garbage_refuses_fuse_mode(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "state")
    sd.write_deploy_env({"HWEMU_MODE": "fuse"})
    with pytest.raises(RuntimeFailure, match="needs files mode"):
        inject(sd, Step(FAULTS["sysfs-garbage"], 1, 0.0, 0.0), ["n1"], ["n1"])


def test_every_fault_of_the_catalogue_has_an_injection(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "state")
    for name, fault in FAULTS.items():
        with pytest.raises(Exception) as e:  # - an empty state dir: each fails at its first look, none unknown
            inject(sd, Step(fault, 1, 0.0, 0.0), ["a"], ["a"])
        assert "no injection for fault" not in str(e.value), name


def test_agent_freeze_stops_the_picked_agent_until_cleared(state: tuple[StateDir, dict[str, ManagedProcess]]) -> None:
    sd, procs = state
    hit = inject(sd, Step(FAULTS["agent-freeze"], 1, 0.0, 0.0), ["a", "b"], [])
    time.sleep(0.2)
    assert hit.target == "agent-a" and _state_of(procs["agent-a"].pid) == "T"
    assert _state_of(procs["agent-b"].pid) != "T" and hit.killed == set() and hit.clear is not None
    hit.clear()
    time.sleep(0.2)
    assert _state_of(procs["agent-a"].pid) != "T"


def test_apiserver_freeze_stops_kube_apiserver_and_counts_the_controllers_deadline_lines(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "state")
    api = ManagedProcess("kube-apiserver", ["sleep", "300"], sd.log("kube-apiserver")).start()
    sd.write_cluster_env({pid_key("kube-apiserver"): str(api.pid)})
    try:
        hit = inject(sd, Step(FAULTS["apiserver-freeze"], 1, 0.0, 0.0), [], [])
        time.sleep(0.2)
        assert _state_of(api.pid) == "T" and hit.clear is not None and hit.note is not None
        with sd.log("controller-manager").open("a") as f:
            f.write("WARNING Kubernetes API server did not answer GET /api/v1/nodes within 10s\n")
        hit.clear()
        time.sleep(0.2)
        assert _state_of(api.pid) != "T"
        assert "logged 1 request deadline line(s)" in hit.note()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(api.pid, signal.SIGKILL)
        api.stop(grace_s=1)


def test_the_agent_freeze_note_says_when_its_node_went_agent_lost_and_whether_its_caps_moved() -> None:
    from joulie_simcluster.chaos.freezes import AgentLostWatch, agent_state

    assert agent_state({"status": {"agent": {"state": "agent-lost"}}}) == "agent-lost"
    assert agent_state({"status": {}}) == "" and agent_state({}) == ""
    now = [0.0]
    watch = AgentLostWatch("n1", clock=lambda: now[0])
    alive = {"spec": {"nodeName": "n1", "cpu": {"packagePowerCapPctOfMax": 60}}, "status": {"agent": {"state": "alive"}}}
    assert "never showed agent-lost" in watch.note("agent-n1")
    now[0] = 60.0
    watch.observe([alive])
    lost = {**alive, "status": {"agent": {"state": "agent-lost"}}}
    now[0] = 125.0
    watch.observe([lost, {"spec": {"nodeName": "n2"}, "status": {"agent": {"state": "agent-lost"}}}])
    now[0] = 130.0
    watch.observe([lost])
    assert watch.note("agent-n1") == "agent-n1 frozen: agent-lost 125 s after the freeze; its NodeTwin caps unchanged while agent-lost"
    watch.observe([{**lost, "spec": {"nodeName": "n1", "cpu": {"packagePowerCapPctOfMax": 50}}}])
    assert "caps changed 1 time(s)" in watch.note("agent-n1")
