from __future__ import annotations

from pathlib import Path

import pytest

from joulie_simcluster.state import StateDir, format_env, parse_env, pid_key, recorded_pids


def test_cluster_env_round_trips(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "s")
    assert sd.read_cluster_env() is None
    values = {"API_URL": "https://127.0.0.1:6443", pid_key("kube-apiserver"): "42", "ETCD_PID": "41"}
    sd.write_cluster_env(values)
    assert sd.cluster_env.read_text() == "API_URL=https://127.0.0.1:6443\nKUBE_APISERVER_PID=42\nETCD_PID=41\n"
    env = sd.read_cluster_env()
    assert env == values
    assert recorded_pids(env) == [("etcd", 41), ("kube-apiserver", 42)]
    assert sd.log("kwok") == tmp_path / "s" / "logs" / "kwok.log"


def test_parse_and_format_reject_what_cannot_round_trip() -> None:
    assert parse_env("# c\n\nA=1\n B = x=y \n") == {"A": "1", "B": "x=y"}
    with pytest.raises(ValueError, match="line 2"):
        parse_env("A=1\nnot a pair\n")
    with pytest.raises(ValueError):
        format_env({"A": "multi\nline"})
