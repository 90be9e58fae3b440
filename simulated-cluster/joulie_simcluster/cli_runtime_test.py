"""``up``, ``down`` and a run's release reach the runtime through its protocol: the one SIMCLUSTER_RUNTIME
names for ``up``, the one cluster.env records for ``down`` and the release, each doing what it did
when the CLI compared names (the runtimes' own work is replaced by recorders here)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from joulie_simcluster import cli
from joulie_simcluster.progress import Progress
from joulie_simcluster.runtimes import k3s, process
from joulie_simcluster.runtimes.kubelet import runtime as kubelet_runtime
from joulie_simcluster.runtimes.supervision import control
from joulie_simcluster.smoke.results import release_cluster
from joulie_simcluster.state import StateDir

SMOKE = "simulated-cluster/specs/smoke.yaml"

Calls = list[tuple[Any, ...]]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Every runtime entry point recorded (name, arguments) instead of run."""
    seen: Calls = []

    def record(name: str, result: Any = None) -> Callable[..., Any]:
        def fake(*args: Any, **kwargs: Any) -> Any:
            seen.append((name, *args, *sorted(kwargs.items())))
            return result
        return fake

    monkeypatch.setattr(k3s, "down_k3s", record("down_k3s"))
    monkeypatch.setattr(k3s, "up_k3s", record("up_k3s", "summary"))
    monkeypatch.setattr(kubelet_runtime, "down_kubelet", record("down_kubelet", 0))
    monkeypatch.setattr(kubelet_runtime, "up_kubelet", record("up_kubelet", "summary"))
    monkeypatch.setattr(process, "down", record("process.down", 0))
    monkeypatch.setattr(process, "up", record("process.up", "summary"))
    monkeypatch.setattr(control, "stop", record("supervisor.stop", True))
    monkeypatch.setattr(cli, "stop_deployed", record("stop_deployed", 0))
    return seen


def _env(tmp_path: Path, runtime: str | None, **extra: str) -> dict[str, str]:
    env = {"SIMCLUSTER_DIR": str(tmp_path / "state"), "SIMCLUSTER_NAME": "t", **extra}
    if runtime is not None:
        StateDir(tmp_path / "state").write_cluster_env({"SIMCLUSTER_RUNTIME": runtime})
    return env


def test_down_follows_the_runtime_cluster_env_records(calls: Calls, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    state = StateDir(tmp_path / "state")
    assert cli.main(["down"], _env(tmp_path, "k3s", SIMCLUSTER_KEEP="1")) == 0
    assert calls == [("down_k3s", state, ("keep_volumes", True), ("name", "t"))]
    assert "removed the k3s container t" in capsys.readouterr().out
    calls.clear()
    assert cli.main(["down"], _env(tmp_path, "kubelet")) == 0
    assert [c[0] for c in calls] == ["down_kubelet"] and ("keep", False) in calls[0]  # never stop_deployed
    calls.clear()
    for recorded in ("process", None):
        (tmp_path / "state" / "cluster.env").unlink(missing_ok=True)
        assert cli.main(["down"], _env(tmp_path, recorded)) == 0
        # The supervisor first (nothing may restart what down stops), then the deploy, then the cluster.
        assert [c[0] for c in calls] == ["supervisor.stop", "stop_deployed", "process.down"]
        assert ("keep", False) in calls[2]
        assert "stopped the supervisor" in capsys.readouterr().out
        calls.clear()


def test_up_starts_the_runtime_the_settings_name(calls: Calls, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "daemonset_for", lambda values: {"chart": "daemonset"})
    monkeypatch.setattr(cli, "select_agents", lambda nodes, ds: (["a", "b", "c"], []))
    assert cli.main(["up", "--spec", SMOKE], _env(tmp_path, None, SIMCLUSTER_RUNTIME="k3s")) == 0
    [(name, _state, _rendered, options, _progress)] = calls
    assert name == "up_k3s" and (options.name, options.agents) == ("t", 3)
    calls.clear()
    assert cli.main(["up", "--spec", SMOKE, "--crds", "crds"], _env(tmp_path, None, SIMCLUSTER_RUNTIME="kubelet",
                                                                            SIMCLUSTER_HWEMU="files")) == 0
    assert [c[0] for c in calls] == ["up_kubelet"] and ("crd_dir", Path("crds")) in calls[0]
    calls.clear()
    assert cli.main(["up", "--spec", SMOKE], _env(tmp_path, None, SIMCLUSTER_TELEMETRY="scrape")) == 0
    assert [c[0] for c in calls] == ["process.up"] and ("telemetry_mode", "scrape") in calls[0]


def test_up_on_the_kubelet_runtime_refuses_fuse_mode_before_anything_starts(
        calls: Calls, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 40: `up` built the whole node and only `deploy` refused the FUSE view.
    monkeypatch.setattr(cli, "daemonset_for", lambda values: {"chart": "daemonset"})
    env = _env(tmp_path, None, SIMCLUSTER_RUNTIME="kubelet", SIMCLUSTER_HWEMU="fuse")
    assert cli.main(["up", "--spec", SMOKE], env) == 1
    assert calls == []
    assert "use SIMCLUSTER_HWEMU=files" in capsys.readouterr().err
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize(("command", "runtime", "said"), [
    ("up", "process", "SIMCLUSTER_KUBELET_NODES=2 needs SIMCLUSTER_RUNTIME=kubelet"),
    ("smoke", "kubelet", "the smoke wants an agent on every Node; run ./simcluster daemonset"),
    ("daemonset", "process", "SIMCLUSTER_KUBELET_NODES=2 needs SIMCLUSTER_RUNTIME=kubelet"),
])
def test_kubelet_nodes_are_refused_where_they_would_be_ignored(
        command: str, runtime: str, said: str, calls: Calls, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "daemonset_for", lambda values: {"chart": "daemonset"})
    env = _env(tmp_path, None, SIMCLUSTER_RUNTIME=runtime, SIMCLUSTER_HWEMU="files", SIMCLUSTER_KUBELET_NODES="2")
    assert cli.main([command, "--spec", SMOKE], env) == 1
    assert calls == []
    assert said in capsys.readouterr().err


def test_a_run_releases_its_cluster_through_the_recorded_runtime(calls: Calls, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from joulie_simcluster.smoke import results

    def stop_deployed(state: StateDir, progress: Callable[[str], None]) -> int:
        calls.append(("stop_deployed",))
        return 0

    monkeypatch.setattr(results, "stop_deployed", stop_deployed)
    state = StateDir(tmp_path / "state")
    state.write_cluster_env({"SIMCLUSTER_RUNTIME": "kubelet"})
    release_cluster(state, False, Progress())
    assert [c[0] for c in calls] == ["down_kubelet"] and ("keep", True) in calls[0]
    calls.clear()
    state.write_cluster_env({"SIMCLUSTER_RUNTIME": "process"})
    release_cluster(state, False, Progress())
    assert [c[0] for c in calls] == ["stop_deployed", "process.down"] and ("keep", True) in calls[1]
    calls.clear()
    release_cluster(state, True, Progress())  # SIMCLUSTER_KEEP: nothing stops
    assert calls == []
