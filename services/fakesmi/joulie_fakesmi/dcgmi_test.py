"""dcgmi dmon and nvidia-smi's activity query answer from the emulated boards' state, as the agent reads them."""

from __future__ import annotations

from pathlib import Path

from joulie_fakesmi.cli import run_tool
from joulie_fakesmi.node import NodeView
from joulie_simhw.gpustate import GpuDevice, GpuState, ToolsManifest, write_atomic
from joulie_simhw.record import replace


def _node(tmp: Path, gpus: list[GpuDevice], tools: dict[str, str] | None = None) -> NodeView:
    state = tmp / "state"
    state.mkdir(parents=True, exist_ok=True)
    write_atomic(state / "gpus.json", GpuState("nvidia", "590.48.01", True, tuple(gpus)).to_json())
    write_atomic(state / "tools.json", ToolsManifest(tools or {"nvidia-smi": "default", "dcgmi": "default"}).to_json())
    return NodeView(state, tmp / "sys", tmp / "host")


def h100(index: int, **kw: object) -> GpuDevice:
    g = GpuDevice(
        index=index,
        name="NVIDIA H100 80GB HBM3",
        uuid=f"GPU-0000000{index}-aaaa-bbbb-cccc-dddddddddddd",
        pci_bus_id=f"00000000:{0x18 + index:02X}:00.0",
        min_limit_w=200,
        max_limit_w=700,
        default_limit_w=700,
        limit_w=700,
        enforced_limit_w=700,
        draw_w=512.5,
        util_pct=96,
        energy_mj=0,
        sm_clock_min_mhz=345,
        sm_clock_max_mhz=1980,
    )
    return replace(g, **kw)


DMON = ["dmon", "-e", "1002,1004,1005", "-c", "1"]


def test_dmon_prints_each_boards_profiling_fields_and_na_where_it_has_none(tmp_path: Path) -> None:
    node = _node(tmp_path, [h100(0, sm_active=0.8123, tensor_active=0.31, dram_active=0.4444), h100(1)])
    r = run_tool("dcgmi", DMON, node)
    assert r.code == 0, r.stderr
    assert r.stdout.splitlines() == [
        "#Entity   SMACT        TENSO        DRAMA",
        "ID",
        "GPU 0     0.812        0.310        0.444",
        "GPU 1     N/A          N/A          N/A",
    ]
    # -i picks boards; -c repeats the sample.
    r = run_tool("dcgmi", ["dmon", "-e", "1005", "-i", "0", "-c", "2"], node)
    assert r.stdout.splitlines()[2:] == ["GPU 0     0.444", "GPU 0     0.444"]


def test_dmon_refuses_what_it_does_not_model_and_a_node_without_dcgmi_has_none(tmp_path: Path) -> None:
    node = _node(tmp_path, [h100(0)])
    r = run_tool("dcgmi", ["dmon", "-e", "1003", "-c", "1"], node)
    assert r.code == 2 and "not emulated" in r.stderr
    r = run_tool("dcgmi", ["discovery", "-l"], node)
    assert r.code == 2 and "only dmon" in r.stderr
    bare = _node(tmp_path / "bare", [h100(0)], {"nvidia-smi": "default"})
    assert run_tool("dcgmi", DMON, bare).code == 127


def test_the_activity_query_reports_the_current_sm_clock(tmp_path: Path) -> None:
    node = _node(tmp_path, [h100(0, sm_clock_mhz=1755), h100(1)])
    r = run_tool(
        "nvidia-smi",
        ["--query-gpu=index,uuid,utilization.gpu,clocks.sm,clocks.max.sm", "--format=csv,noheader,nounits"],
        node,
    )
    assert r.stdout.splitlines() == [
        "0, GPU-00000000-aaaa-bbbb-cccc-dddddddddddd, 96, 1755, 1980",
        "1, GPU-00000001-aaaa-bbbb-cccc-dddddddddddd, 96, [N/A], 1980",
    ]
