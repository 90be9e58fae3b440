"""The generated gRPC API works over loopback: unary calls, errors with codes, server streaming.

The servicer here is a minimal in-memory stand-in written only to exercise the generated code;
the real emulator implements the same service in services/simulator.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest

from joulie.sim.v1 import emulator_pb2 as pb
from joulie.sim.v1 import emulator_pb2_grpc as pb_grpc


class MemoryEmulator(pb_grpc.EmulatorServiceServicer):
    def __init__(self) -> None:
        self.clock = pb.ClockState(frozen=False, tick=0, tick_seconds=1.0)
        self.nodes = {
            "intel-0": pb.NodeTruth(
                node="intel-0",
                profile="intel-xeon-2s",
                host_power_w=412.5,
                cpu_zones=[pb.CpuZoneTruth(path="class/powercap/intel-rapl:0", name="package-0", cap_w=350)],
                gpus=[],
            )
        }

    def ListNodes(self, request: pb.ListNodesRequest, context: grpc.ServicerContext) -> pb.ListNodesResponse:
        return pb.ListNodesResponse(nodes=list(self.nodes.values()), clock=self.clock)

    def GetNode(self, request: pb.GetNodeRequest, context: grpc.ServicerContext) -> pb.NodeTruth:
        if request.node not in self.nodes:
            context.abort(grpc.StatusCode.NOT_FOUND, f"node {request.node!r} is not emulated")
        return self.nodes[request.node]

    def SetNodeLoad(self, request: pb.SetNodeLoadRequest, context: grpc.ServicerContext) -> pb.NodeTruth:
        node = self.nodes[request.node]
        node.load.CopyFrom(request.load)
        return node

    def SetClock(self, request: pb.SetClockRequest, context: grpc.ServicerContext) -> pb.ClockState:
        self.clock.frozen = request.frozen
        return self.clock

    def Step(self, request: pb.StepRequest, context: grpc.ServicerContext) -> pb.ClockState:
        if not self.clock.frozen:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "clock runs free; freeze it first")
        self.clock.tick += request.ticks
        return self.clock

    def StreamEvents(self, request: pb.StreamEventsRequest, context: grpc.ServicerContext) -> Iterator[pb.EmulatorEvent]:
        for tick in range(3):
            yield pb.EmulatorEvent(kind=pb.EVENT_KIND_TICK, node="intel-0", tick=tick)


@pytest.fixture
def stub() -> Iterator[pb_grpc.EmulatorServiceStub]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_EmulatorServiceServicer_to_server(MemoryEmulator(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield pb_grpc.EmulatorServiceStub(channel)
    finally:
        channel.close()
        server.stop(grace=None)


def test_list_and_set_load_round_trip(stub: pb_grpc.EmulatorServiceStub) -> None:
    listed = stub.ListNodes(pb.ListNodesRequest(), timeout=5)
    assert [n.node for n in listed.nodes] == ["intel-0"]
    assert listed.nodes[0].cpu_zones[0].cap_w == 350
    truth = stub.SetNodeLoad(pb.SetNodeLoadRequest(node="intel-0", load=pb.NodeLoad(cpu_util=0.75)), timeout=5)
    assert truth.load.cpu_util == pytest.approx(0.75)


def test_errors_carry_code_and_message(stub: pb_grpc.EmulatorServiceStub) -> None:
    with pytest.raises(grpc.RpcError) as err:
        stub.GetNode(pb.GetNodeRequest(node="nope"), timeout=5)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert "'nope' is not emulated" in (err.value.details() or "")
    with pytest.raises(grpc.RpcError) as err:
        stub.Step(pb.StepRequest(ticks=1), timeout=5)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_frozen_clock_steps_and_events_stream(stub: pb_grpc.EmulatorServiceStub) -> None:
    stub.SetClock(pb.SetClockRequest(frozen=True), timeout=5)
    assert stub.Step(pb.StepRequest(ticks=5), timeout=5).tick == 5
    events = list(stub.StreamEvents(pb.StreamEventsRequest(include_ticks=True), timeout=5))
    assert [e.tick for e in events] == [0, 1, 2]
    assert all(e.kind == pb.EVENT_KIND_TICK for e in events)


def test_set_load_round_trips_a_boards_phases(stub: pb_grpc.EmulatorServiceStub) -> None:
    phases = pb.GpuPhases(phases=[pb.GpuPhase(share=0.2, compute_share=0.9, draw=0.95),
                                  pb.GpuPhase(share=0.8, compute_share=0.14, draw=0.3)])
    load = pb.NodeLoad(cpu_util=0.5, gpu_util=[0.43, 0.43], gpu_phases=[phases, pb.GpuPhases()])
    truth = stub.SetNodeLoad(pb.SetNodeLoadRequest(node="intel-0", load=load), timeout=5)
    got = [[(p.share, p.compute_share, p.draw) for p in b.phases] for b in truth.load.gpu_phases]
    assert got == [[(0.2, 0.9, 0.95), (0.8, 0.14, 0.3)], []]


def test_a_load_from_a_client_without_phases_decodes_with_none() -> None:
    # What a client built before gpu_phases existed puts on the wire: cpu_util (field 1, a double)
    # and gpu_util (field 2, packed doubles), nothing else.
    old_wire = b"\x09" + struct.pack("<d", 0.5) + b"\x12\x08" + struct.pack("<d", 0.43)
    load = pb.NodeLoad.FromString(old_wire)
    assert load.cpu_util == 0.5 and list(load.gpu_util) == [0.43] and len(load.gpu_phases) == 0
    assert pb.NodeLoad(cpu_util=0.5, gpu_util=[0.43]).SerializeToString() == old_wire
