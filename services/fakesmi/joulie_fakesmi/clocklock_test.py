"""The SM clock lock: nvidia-smi -lgc / -rgc and the fields that read clocks back (an emulated H100),
amd-smi set -L sclk max and metric --clock (an emulated MI300X)."""

from __future__ import annotations

import json
from pathlib import Path

from joulie_fakesmi.cli import run_tool
from joulie_fakesmi.fakesmi_test import _amd, _nvidia, t4
from joulie_fakesmi.node import NodeView
from joulie_simhw.gpustate import GpuDevice, amd_od_file, nvml_locked_clocks_file, write_atomic
from joulie_simhw.record import replace

CLOCKS_QUERY = [
    "--query-gpu=index,pci.bus_id,clocks.max.sm,clocks_event_reasons.applications_clocks_setting",
    "--format=csv,noheader,nounits",
]


def h100(index: int) -> GpuDevice:
    return replace(t4(index), name="NVIDIA H100 80GB HBM3", sm_clock_min_mhz=345, sm_clock_max_mhz=1980)


def _node(tmp_path: Path, n: int = 2, persistence: bool = True) -> NodeView:
    node = _nvidia(tmp_path, [h100(i) for i in range(n)], persistence=persistence)
    for i in range(n):
        (Path(node.state_root) / nvml_locked_clocks_file(i)).write_text("none\n")
    return node


def test_a_lock_is_written_for_the_selected_boards_and_read_back_as_a_clock_limit(tmp_path: Path) -> None:
    node = _node(tmp_path)
    r = run_tool("nvidia-smi", ["-i", "1", "-lgc", "345,1500"], node)
    assert (r.code, r.stdout) == (
        0,
        'GPU clocks set to "(gpuClkMin 345, gpuClkMax 1500)" for GPU 00000000:11:00.0\n' "All done.\n",
    )
    assert (Path(node.state_root) / nvml_locked_clocks_file(1)).read_text() == "345,1500\n"
    assert (Path(node.state_root) / nvml_locked_clocks_file(0)).read_text() == "none\n"
    back = run_tool("nvidia-smi", CLOCKS_QUERY, node)
    assert back.stdout == "0, 00000000:10:00.0, 1980, Not Active\n1, 00000000:11:00.0, 1980, Active\n"
    header = run_tool("nvidia-smi", ["-i", "1", "--query-gpu=clocks.max.sm", "--format=csv"], node)
    assert header.stdout == "clocks.max.sm [MHz]\n1980 MHz\n"
    reset = run_tool("nvidia-smi", ["-i", "1", "-rgc"], node)
    assert (reset.code, reset.stdout) == (0, "All done.\n")
    assert run_tool("nvidia-smi", CLOCKS_QUERY, node).stdout.endswith("1, 00000000:11:00.0, 1980, Not Active\n")


def test_persistence_mode_off_warns_after_a_lock(tmp_path: Path) -> None:
    r = run_tool("nvidia-smi", ["-i", "0", "--lock-gpu-clocks=345,1500"], _node(tmp_path, 1, persistence=False))
    assert "Warning: persistence mode is disabled on device 00000000:10:00.0. See the Known Issues section" in r.stdout
    assert r.stdout.endswith("All done.\n")


def test_a_ceiling_above_the_range_is_taken_as_nvidia_smi_takes_it_a_raised_floor_is_not_emulated(
    tmp_path: Path,
) -> None:
    node = _node(tmp_path, 1)
    high = run_tool("nvidia-smi", ["-i", "0", "-lgc", "345,2400"], node)
    assert high.code == 0 and "gpuClkMax 2400" in high.stdout  # nvidia-smi accepts it; the driver holds 1980 MHz
    assert run_tool("nvidia-smi", CLOCKS_QUERY, node).stdout == "0, 00000000:10:00.0, 1980, Not Active\n"
    pinned = run_tool("nvidia-smi", ["-i", "0", "-lgc", "1500"], node)
    assert pinned.code == 2 and "is not emulated" in pinned.stderr
    assert run_tool("nvidia-smi", ["-i", "0", "-lgc", "low,high"], node).code == 2


def test_the_supported_clocks_are_listed_per_board_highest_first(tmp_path: Path) -> None:
    node = _node(tmp_path, 1)
    r = run_tool("nvidia-smi", ["--query-supported-clocks=gpu_bus_id,graphics", "--format=csv,noheader,nounits"], node)
    rows = r.stdout.splitlines()
    assert rows[:2] == ["00000000:10:00.0, 1980", "00000000:10:00.0, 1965"] and rows[-1] == "00000000:10:00.0, 345"
    assert len(rows) == (1980 - 345) // 15 + 1
    mem = run_tool("nvidia-smi", ["--query-supported-clocks=memory,graphics", "--format=csv"], node)
    assert mem.code == 2 and "memory" in mem.stderr and "is not emulated" in mem.stderr


def test_a_board_without_a_clock_range_says_n_a(tmp_path: Path) -> None:
    node = _nvidia(tmp_path, [t4(0)])
    assert run_tool("nvidia-smi", CLOCKS_QUERY, node).stdout == "0, 00000000:10:00.0, [N/A], [N/A]\n"


def _mi300x(tmp_path: Path) -> NodeView:
    node = _amd(tmp_path, "current")
    state = node.gpus()
    assert state is not None
    boards = tuple(replace(g, sm_clock_min_mhz=500, sm_clock_max_mhz=2100) for g in state.gpus)
    write_atomic(Path(node.state_root) / "gpus.json", replace(state, gpus=boards).to_json())
    for g in boards:
        (Path(node.sys_root) / amd_od_file(g.hwmon)).write_text(
            "OD_SCLK:\n0: 500Mhz\n1: 2100Mhz\nOD_RANGE:\nSCLK:     500Mhz       2100Mhz\n"
        )
    return node


def test_amd_smi_sets_the_sclk_soft_maximum_through_the_overdrive_table_and_reads_it_back(tmp_path: Path) -> None:
    node = _mi300x(tmp_path)
    r = run_tool("amd-smi", ["set", "-g", "1", "-L", "sclk", "max", "1500"], node)
    assert (r.code, r.stdout) == (0, "GPU: 1\n    CLK_LIMIT: Successfully changed max of sclk to 1500MHz\n")
    assert node.read_sys("devices/pci0000:11/0000:11:00.0/pp_od_clk_voltage") == "s 1 1500"
    doc = json.loads(run_tool("amd-smi", ["metric", "--clock", "--json"], node).stdout)
    assert [g["clock"]["gfx_0"]["max_clk"] for g in doc["gpu_data"]] == [
        {"value": 2100, "unit": "MHz"},
        {"value": 1500, "unit": "MHz"},
    ]
    again = run_tool("amd-smi", ["set", "-g", "1", "-L", "sclk", "max", "1500"], node)
    assert again.stdout == "GPU: 1\n    CLK_LIMIT: Clock limit is already set to 1500MHz\n"


def test_amd_smi_refuses_a_maximum_outside_the_range_as_amd_smi_says_it(tmp_path: Path) -> None:
    node = _mi300x(tmp_path)
    low = run_tool("amd-smi", ["set", "-g", "0", "-L", "sclk", "max", "400"], node)
    assert (low.code, low.stdout) == (0, "GPU: 0\n    CLK_LIMIT: Cannot set sclk max value less than min (500MHz)\n")
    high = run_tool("amd-smi", ["set", "-g", "0", "-L", "sclk", "max", "2200"], node)
    assert high.stdout == "GPU: 0\n    CLK_LIMIT: [AMDSMI_STATUS_INVAL] Unable to set max of sclk to 2200MHz\n"
    assert "1: 2100Mhz" in node.read_sys("devices/pci0000:10/0000:10:00.0/pp_od_clk_voltage")
    assert run_tool("amd-smi", ["set", "-g", "0", "-L", "mclk", "max", "1000"], node).code == 2  # not emulated
