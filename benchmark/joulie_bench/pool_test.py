"""Pooling the paired changes of benchmark outputs run on disjoint seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from joulie_bench.pool import main, table

HEADER_RUNS = "policy,seed,p95_wait_s,boots,node_hours_off\n"
HEADER_PAIRED = "policy,seed,regime,metric,change_pct\n"


def folder(root: Path, name: str, seeds: dict[int, tuple[float, float]]) -> Path:
    """One output folder: per seed S's completion energy change and its p95 wait (A waits 100 s)."""
    d = root / name
    d.mkdir()
    paired = runs = ""
    for seed, (change, wait) in seeds.items():
        for regime in ("completion", "open"):
            paired += f"S,{seed},{regime},facility_energy,{change}\nS,{seed},{regime},makespan,0.0\n"
        runs += f"A,{seed},100.0,0,0.0\nS,{seed},{wait},2,10.0\n"
    (d / "paired_seeds.csv").write_text(HEADER_PAIRED + paired)
    (d / "runs.csv").write_text(HEADER_RUNS + runs)
    return d


def test_two_folders_pool_into_one_estimate_over_all_their_seeds(tmp_path: Path) -> None:
    a = folder(tmp_path, "a", {1: (-10.0, 130.0), 2: (-12.0, 110.0)})
    b = folder(tmp_path, "b", {3: (-14.0, 100.0), 4: (-16.0, 140.0)})
    lines = table([a, b])
    assert lines[0] == "seeds: 1, 2, 3, 4"
    row = lines[3]
    assert row.startswith("| S | -13.0 [") and "| +20 | 2.0 | 10.0 |" in row  # mean of 4 seeds; waits +30,+10,0,+40


def test_a_seed_in_two_folders_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = folder(tmp_path, "a", {1: (-10.0, 100.0)})
    b = folder(tmp_path, "b", {1: (-12.0, 100.0)})
    assert main([str(a), str(b)]) == 2
    assert "seed 1 of S is also in another folder" in capsys.readouterr().err
