"""The truth as a harness reads it: /debug/emulate JSON and the gRPC API on loopback."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from joulie.sim.v1 import emulator_pb2 as _pb2
from joulie.sim.v1 import emulator_pb2_grpc as _pb2_grpc
from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.physics.model import Load
from joulie_simulator.serving.grpc_api import serve
from joulie_simulator.serving.http_debug import DebugServer

pb: Any = _pb2  # generated without type stubs in this build
pb_grpc: Any = _pb2_grpc


@pytest.fixture
def emu() -> Emulator:
    return Emulator(
        [("xeon-0", builtin_profile("intel-xeon-2s-rapl")), ("nvl-0", builtin_profile("nvidia-h100-nvl-8gpu"))], clock=lambda: 0.0
    )


def test_debug_emulate_lists_every_node_with_host_power_zones_gpus_and_caps(emu: Emulator) -> None:
    emu.set_load("nvl-0", Load(cpu_util=0.5, gpu_util=(1.0,)))
    emu.tick()
    server = DebugServer(emu)
    server.start()
    try:
        doc = json.load(urllib.request.urlopen(f"{server.url}/debug/emulate", timeout=5))
        emu.power_off("xeon-0", graceful=False)
        states = json.load(urllib.request.urlopen(f"{server.url}/debug/power", timeout=5))
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{server.url}/debug/emulate?node=nope", timeout=5)
    finally:
        server.stop()
    assert [n["name"] for n in doc["nodes"]] == ["nvl-0", "xeon-0"]
    nvl = doc["nodes"][0]
    platform_w = builtin_profile("nvidia-h100-nvl-8gpu").physics.platform_other_w
    parts = sum(p["powerW"] for p in nvl["packages"]) + sum(g["powerW"] for g in nvl["gpus"]) + 2 * 8 + platform_w
    assert nvl["host"]["powerW"] == pytest.approx(parts)
    assert nvl["gpus"][0]["powerW"] == pytest.approx(310) and nvl["gpus"][1]["powerW"] == pytest.approx(58.6)
    assert nvl["zones"][1] | {"energyJ": 0, "energyUJ": 0} == {
        "path": "class/powercap/intel-rapl:0:0", "name": "dram", "powerW": 8.0, "energyJ": 0, "energyUJ": 0,
        "maxEnergyRangeUJ": 65712999613, "capW": 0.0, "capLocked": True,
    }
    assert nvl["caps"]["cpuPackageW"] == [165.0, 165.0]
    assert missing.value.code == 404
    assert states == {"nodes": {"nvl-0": "on", "xeon-0": "off"}}


@pytest.fixture
def stub(emu: Emulator) -> Iterator[Any]:
    server, port = serve(emu)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield pb_grpc.EmulatorServiceStub(channel)
    finally:
        channel.close()
        server.stop(0)


def test_grpc_drives_load_and_a_frozen_clock_and_reads_truth(stub: Any) -> None:
    with pytest.raises(grpc.RpcError) as free:
        stub.Step(pb.StepRequest(ticks=1))
    assert free.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert stub.SetClock(pb.SetClockRequest(frozen=True)).frozen
    stub.SetNodeLoad(pb.SetNodeLoadRequest(node="xeon-0", load=pb.NodeLoad(cpu_util=1.0)))
    clock = stub.Step(pb.StepRequest(ticks=3))
    assert clock.tick == 3
    t = stub.GetNode(pb.GetNodeRequest(node="xeon-0"))
    assert t.tick == 3 and t.profile == "intel-xeon-2s-rapl"
    assert t.host_power_w == pytest.approx(2 * 165 + 2 * 8 + builtin_profile("intel-xeon-2s-rapl").physics.platform_other_w)
    assert [z.name for z in t.cpu_zones] == ["package-0", "dram", "package-1", "dram"]
    assert t.cpu_zones[1].cap_locked
    nodes = stub.ListNodes(pb.ListNodesRequest())
    assert [n.node for n in nodes.nodes] == ["nvl-0", "xeon-0"] and nodes.clock.frozen
    with pytest.raises(grpc.RpcError) as nf:
        stub.GetNode(pb.GetNodeRequest(node="ghost"))
    assert nf.value.code() == grpc.StatusCode.NOT_FOUND and "ghost" in (nf.value.details() or "")


def test_grpc_faults_and_view_restart(emu: Emulator, stub: Any) -> None:
    fault = pb.Fault(kind=pb.FAULT_KIND_WRITE_DENIED, ticks_left=0)
    st = stub.InjectFault(pb.InjectFaultRequest(node="xeon-0", fault=fault))
    assert [f.kind for f in st.active_faults] == [pb.FAULT_KIND_WRITE_DENIED]
    path = "sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/constraint_0_power_limit_uw"
    assert emu.write("xeon-0", path, b"100000000").error_type == "eacces"
    stub.ClearFaults(pb.ClearFaultsRequest(node="xeon-0"))
    assert emu.write("xeon-0", path, b"100000000").ok
    emu.set_load("xeon-0", Load(cpu_util=1.0))
    emu.tick()
    before = emu.truth("xeon-0")["host"]["energyJ"]
    t = stub.RestartNodeView(pb.RestartNodeViewRequest(node="xeon-0"))
    assert t.host_energy_j == pytest.approx(before)  # counters keep counting upward
    assert emu.read("xeon-0", path) == b"165000000\n"  # limits back to their defaults


def test_grpc_streams_a_rejected_write(emu: Emulator, stub: Any) -> None:
    stream = stub.StreamEvents(pb.StreamEventsRequest(nodes=["xeon-0"]))
    subscribed = threading.Event()

    def write_once_subscribed() -> None:
        # Wait for the server side of the stream to listen (a condition, not a fixed delay).
        while not emu.listeners and not subscribed.wait(0.01):
            pass
        emu.write("xeon-0", "sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/intel-rapl:0:0/constraint_0_power_limit_uw", b"1")

    threading.Thread(target=write_once_subscribed, daemon=True).start()
    ev = next(iter(stream))
    stream.cancel()
    assert ev.kind == pb.EVENT_KIND_WRITE_REJECTED and ev.node == "xeon-0"
    assert "error.type=enodata" in ev.message


def test_every_fault_kind_of_the_proto_has_an_emulator_fault(emu: Emulator, stub: Any) -> None:
    from joulie_simulator.serving.grpc_api import _FAULTS

    kinds = {v for k, v in pb.FaultKind.items() if k != "FAULT_KIND_UNSPECIFIED"}
    assert set(_FAULTS) == kinds, "a FaultKind added to emulator.proto needs its name in grpc_api._FAULTS"
    st = stub.InjectFault(pb.InjectFaultRequest(node="nvl-0", fault=pb.Fault(kind=pb.FAULT_KIND_GPU_TOOL_HANG)))
    assert [f.kind for f in st.active_faults] == [pb.FAULT_KIND_GPU_TOOL_HANG]
    assert "gpu_tool_hang" in emu.nodes["nvl-0"].state.faults, "shown in the node's faults.json for fakesmi"
    stub.ClearFaults(pb.ClearFaultsRequest(node="nvl-0"))
