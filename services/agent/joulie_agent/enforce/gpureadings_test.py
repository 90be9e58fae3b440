"""A node's GPU reading: one tool start shared within a cycle, the separate queries where the combined one fails."""

# In enforce/, not host/: it runs the stand-in tools of fixtures/, a layer above the host (layering_test).

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from joulie_agent.discovery import gputools
from joulie_agent.discovery.gpuactivity import DCGMI_DMON, NVIDIA_ACTIVITY_QUERY
from joulie_agent.discovery.gpureading import NVIDIA_READING_QUERY
from joulie_agent.fixtures import testtrees
from joulie_agent.fixtures.toolcount import CountingTools
from joulie_agent.host.gpureadings import SAME_CYCLE_S, GpuReadings
from joulie_agent.host.toolrun import ToolResult, make_runner
from joulie_common.clock import FakeClock


def _argv(q: list[str]) -> str:
    return " ".join(q)


def test_the_exports_power_and_activity_reads_of_one_cycle_start_one_nvidia_smi() -> None:
    tools, clock = CountingTools(n=2), FakeClock()
    r = GpuReadings(tools, None, clock.monotonic)
    inv = r.read("nvidia", SAME_CYCLE_S).inventory
    report = r.activity("nvidia")
    assert inv is not None and [d.draw_w for d in inv.devices] == [312.5, 312.5]
    assert [d.enforced_w for d in inv.devices] == [700.0, 700.0]
    assert [(b.utilization, b.sm_active) for b in report.boards] == [(0.87, 0.812), (0.87, 0.812)]
    assert dict(tools.starts) == {_argv(NVIDIA_READING_QUERY): 1, _argv(DCGMI_DMON): 1}
    clock.advance(10)  # the next cycle reads again
    r.read("nvidia", SAME_CYCLE_S)
    assert tools.starts[_argv(NVIDIA_READING_QUERY)] == 2


def test_a_write_forgets_the_reading() -> None:
    tools, clock = CountingTools(n=1), FakeClock()
    r = GpuReadings(tools, None, clock.monotonic)
    first = r.read("nvidia")
    assert r.newer_than(first.t_s - 1) is first and r.newer_than(first.t_s) is None
    r.wrote()
    assert r.newer_than(None) is None
    assert r.read("nvidia", SAME_CYCLE_S) is not first and tools.starts[_argv(NVIDIA_READING_QUERY)] == 2


def test_a_tool_refusing_a_field_is_read_with_the_separate_queries_from_then_on(
        caplog: pytest.LogCaptureFixture) -> None:
    tools, clock = CountingTools(n=2, unknown_fields=frozenset({"clocks.max.sm"})), FakeClock()
    r = GpuReadings(tools, None, clock.monotonic)
    with caplog.at_level(logging.WARNING, logger="joulie_agent.host.gpureadings"):
        for _ in range(3):
            reading = r.read("nvidia")
            assert reading.inventory is not None and [d.enforced_w for d in reading.inventory.devices] == [700.0] * 2
            assert reading.readback_failed == "" and reading.activity is None
            # What the tool still answers is read: the inventory and the enforced limits; the activity
            # query asks the refused field too, and says so.
            report = r.activity("nvidia")
            assert report.boards == [] and 'Field "clocks.max.sm"' in report.warnings[0]
            clock.advance(10)
    assert tools.starts[_argv(NVIDIA_READING_QUERY)] == 1  # asked once, refused, not asked again
    assert tools.starts[_argv(gputools.NVIDIA_QUERY)] == tools.starts[_argv(gputools.NVIDIA_ENFORCED_QUERY)] == 3
    assert tools.starts[_argv(NVIDIA_ACTIVITY_QUERY)] == 3
    (line,) = (rec.getMessage() for rec in caplog.records)
    assert line.startswith("nvidia-smi refuses the combined GPU query (nvidia-smi --query-gpu=index,") and \
        'Field "clocks.max.sm" is not a valid field' in line


def test_a_hung_tool_costs_one_timeout_per_reading_and_says_so() -> None:
    tools, clock = CountingTools(n=1, hung=True), FakeClock()
    r = GpuReadings(tools, None, clock.monotonic)
    reading = r.read("nvidia")
    report = r.activity("nvidia")
    assert reading.inventory is not None and reading.inventory.devices == []
    assert reading.inventory.warnings[0].startswith("gpu inventory: nvidia-smi --query-gpu=") and \
        reading.inventory.warnings[0].endswith(": timed out")
    assert report.boards == [] and report.warnings[0].endswith(": timed out")
    assert tools.total() == 1


def test_an_amd_nodes_product_names_are_read_once_and_still_name_every_reading(tmp_path: Path) -> None:
    gpus = testtrees.fake_amd(tmp_path, n=2, tools=("amd-smi", "rocm-smi"))
    clock = FakeClock()
    r = GpuReadings(make_runner(str(gpus.bin_dir)), None, clock.monotonic)
    for _ in range(3):
        inv = r.read("amd").inventory
        assert inv is not None and [(d.name, d.current_cap_w) for d in inv.devices] == [("AMD Instinct MI300X", 750.0)] * 2
        clock.advance(10)
    # rocm-smi's product query once, amd-smi's limits at every reading.
    assert sum("--showproductname" in c for c in gpus.calls()) == 1
    assert gpus.calls().count("static --limit --json") == 3


def test_dcgms_ratios_are_read_at_every_2nd_activity_read_and_the_reads_between_export_none() -> None:
    # dcgmi was half of an NVIDIA node's tool starts: the ratios between its reads are left out (the
    # export then sends none: the controller keeps the last with its true age), never repeated as new.
    tools, clock = CountingTools(n=2), FakeClock()
    r = GpuReadings(tools, None, clock.monotonic)
    seen = []
    for _ in range(4):
        report = r.activity("nvidia")
        seen.append([b.sm_active for b in report.boards])
        assert [b.utilization for b in report.boards] == [0.87, 0.87]  # nvidia-smi's signals at every read
        clock.advance(10)
    assert seen == [[0.812, 0.812], [None, None], [0.812, 0.812], [None, None]]
    assert tools.starts[_argv(DCGMI_DMON)] == 2 and tools.starts[_argv(NVIDIA_READING_QUERY)] == 4


def test_dcgm_every_1_reads_the_ratios_at_every_read() -> None:
    tools, clock = CountingTools(n=1), FakeClock()
    r = GpuReadings(tools, None, clock.monotonic, dcgm_every=1)
    for _ in range(3):
        assert [b.sm_active for b in r.activity("nvidia").boards] == [0.812]
        clock.advance(10)
    assert tools.starts[_argv(DCGMI_DMON)] == 3


def test_a_failing_dcgmi_is_still_reported_at_the_reads_that_do_not_ask_it() -> None:
    # The node's activity warnings are logged when they change: they must not come and go at every read.
    tools, clock = CountingTools(n=1), FakeClock()
    r = GpuReadings(lambda argv: ToolResult(tuple(argv), 255, "Error: Unknown Error") if argv[0] == "dcgmi"
                    else tools(argv), None, clock.monotonic)
    warnings = []
    for _ in range(3):
        warnings.append(r.activity("nvidia").warnings)
        clock.advance(10)
    assert len(warnings[0]) == 1 and "dcgmi" in warnings[0][0] and warnings == [warnings[0]] * 3
