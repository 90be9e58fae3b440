"""The agent's GPU activity read through stand-in tools on PATH: nvidia-smi's query, then dcgmi dmon."""

from __future__ import annotations

import os
from pathlib import Path

from joulie_agent.host.hostread import gpu_activity
from joulie_agent.host.toolrun import make_runner

UUID0 = "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd"


def _tool(bin_dir: Path, name: str, out: str, code: int = 0) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    p = bin_dir / name
    p.write_text(f"#!/bin/sh\ncat <<'EOF'\n{out}EOF\nexit {code}\n")
    os.chmod(p, 0o755)


def test_nvidia_smi_then_dcgmi_give_each_boards_signals(tmp_path: Path) -> None:
    _tool(tmp_path, "nvidia-smi", f"0, {UUID0}, 96, 1755, 1980\n")
    _tool(
        tmp_path, "dcgmi", "#Entity   SMACT        TENSO        DRAMA\nID\nGPU 0     0.812        0.310        0.444\n"
    )
    report = gpu_activity(make_runner(str(tmp_path), 2.0), None)
    (b,) = report.boards
    assert (b.uuid, b.utilization, b.sm_clock_mhz, b.sm_active, b.tensor_active, b.dram_active) == (
        UUID0,
        0.96,
        1755.0,
        0.812,
        0.31,
        0.444,
    )
    assert report.warnings == []


def test_no_dcgmi_means_no_ratios_and_a_failing_dcgmi_says_why(tmp_path: Path) -> None:
    _tool(tmp_path, "nvidia-smi", f"0, {UUID0}, 96, 1755, 1980\n")
    report = gpu_activity(make_runner(str(tmp_path), 2.0), None)
    assert report.boards[0].dram_active is None and report.warnings == []  # a node without DCGM, quietly
    _tool(tmp_path, "dcgmi", "Error: unable to establish a connection to the specified host: localhost\n", 255)
    report = gpu_activity(make_runner(str(tmp_path), 2.0), None)
    assert report.boards[0].dram_active is None
    assert len(report.warnings) == 1 and "exit 255" in report.warnings[0]


def test_a_node_without_nvidia_smi_reports_no_board(tmp_path: Path) -> None:
    report = gpu_activity(make_runner(str(tmp_path / "empty"), 2.0), None)
    assert report.boards == [] and report.warnings == []
