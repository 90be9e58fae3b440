from __future__ import annotations

import json
from pathlib import Path

import pytest

from joulie_simcluster.cli import main

SMOKE = "simulated-cluster/specs/smoke.yaml"
SMOKE_DS = "simulated-cluster/specs/smoke-agent-daemonset.yaml"


def test_render_nodes_prints_one_node_json_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render-nodes", "--spec", SMOKE]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 9
    assert [json.loads(line)["kind"] for line in lines] == ["Node"] * 9


def test_agents_prints_eligible_nodes_and_excluded_ones_with_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agents", "--spec", SMOKE, "--daemonset", SMOKE_DS]) == 0
    out = capsys.readouterr().out
    assert out.startswith("eligible: 8 of 9 nodes\n  intel-0\n")
    assert "excluded: 1\n  arm64-managed-0  arch arm64 not in [amd64] (the agent image's platforms)\n" in out


def test_spec_from_the_environment(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SIMCLUSTER_SPEC", SMOKE)
    assert main(["agents"]) == 0
    assert "intel-managed-0  taint dedicated=managed:NoSchedule not tolerated" in capsys.readouterr().out


def test_a_bad_spec_exits_2_with_the_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agents", "--spec", "no/such.yaml"]) == 2
    assert "simcluster: no/such.yaml: cannot read" in capsys.readouterr().err


def test_an_unknown_subcommand_exits(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["frobnicate"])
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_deploy_before_up_says_to_run_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SIMCLUSTER_DIR", str(tmp_path / "none"))
    assert main(["deploy", "--trace", "t.jsonl"]) == 1
    assert f"simcluster deploy: no cluster in {tmp_path / 'none'} (no spec.yaml); run simcluster up first" in \
        capsys.readouterr().err


def test_bench_live_refuses_an_unknown_policy_or_a_bad_trace_before_starting_anything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SIMCLUSTER_DIR", str(tmp_path / "state"))
    assert main(["bench-live", "--policies", "A,X"]) == 2
    assert "--policies 'A,X': each must be one of A, B, C, D" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert main(["bench-live", "--trace", str(bad)]) == 2
    assert f"--trace: {bad}:1:" in capsys.readouterr().err
    assert main(["bench-live", "--kind-shares", "gpu-training=0.5,gpu-decode=0.5"]) == 2
    assert "--kind-shares: 'gpu-decode=0.5' is not KIND=SHARE" in capsys.readouterr().err
    assert not (tmp_path / "state").exists()  # nothing started, nothing written


def test_a_bad_or_unknown_setting_exits_2_naming_it_before_anything_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SIMCLUSTER_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SIMCLUSTER_HWEMU", "fusee")
    assert main(["render-nodes", "--spec", SMOKE]) == 2
    assert capsys.readouterr().err == "simcluster: SIMCLUSTER_HWEMU='fusee': expected one of fuse, files\n"
    monkeypatch.delenv("SIMCLUSTER_HWEMU")
    assert main(["down"], environ={"SIMCLUSTER_DIR": str(tmp_path / "state"), "SIMCLUSTER_KEPE": "1"}) == 2
    assert "SIMCLUSTER_KEPE='1': unknown variable; expected one of SIMCLUSTER_NAME" in capsys.readouterr().err
    assert not (tmp_path / "state").exists()
