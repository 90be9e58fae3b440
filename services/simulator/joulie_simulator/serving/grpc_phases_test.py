"""Issue 34 over gRPC: a board's serving phases in SetNodeLoad, the clock lock in NodeTruth."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from joulie.sim.v1 import emulator_pb2 as _pb2
from joulie.sim.v1 import emulator_pb2_grpc as _pb2_grpc
from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.physics.gpu import Phase
from joulie_simulator.serving.grpc_api import serve

pb: Any = _pb2  # generated without type stubs in this build
pb_grpc: Any = _pb2_grpc

MIX = ((0.2, 0.9, 0.95), (0.8, 0.14, 0.3))  # (share, compute share, draw): prefill, decode


@pytest.fixture
def emu() -> Emulator:
    return Emulator([("nvl-0", builtin_profile("nvidia-h100-nvl-8gpu"))], clock=lambda: 0.0)


@pytest.fixture
def stub(emu: Emulator) -> Iterator[Any]:
    server, port = serve(emu)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield pb_grpc.EmulatorServiceStub(channel)
    finally:
        channel.close()
        server.stop(0)


def _phases(*mix: tuple[float, float, float]) -> Any:
    return pb.GpuPhases(phases=[pb.GpuPhase(share=s, compute_share=c, draw=u) for s, c, u in mix])


def test_a_boards_phases_reach_the_emulators_load(emu: Emulator, stub: Any) -> None:
    load = pb.NodeLoad(cpu_util=0.1, gpu_util=[0.43, 0.43], gpu_phases=[_phases(*MIX)])
    t = stub.SetNodeLoad(pb.SetNodeLoadRequest(node="nvl-0", load=load))
    assert list(t.load.gpu_util)[:2] == [0.43, 0.43]
    want = tuple(Phase(s, c, u) for s, c, u in MIX)
    assert emu.node("nvl-0").state.load.gpu_phases == (want,)  # board 1: none, one phase of draw 0.43


def test_a_client_without_phases_loads_each_board_with_one_phase_of_its_utilisation(emu: Emulator, stub: Any) -> None:
    stub.SetNodeLoad(pb.SetNodeLoadRequest(node="nvl-0", load=pb.NodeLoad(cpu_util=0.1, gpu_util=[0.43])))
    st = emu.node("nvl-0").state
    assert st.load.gpu_util == (0.43,) and st.load.gpu_phases == ()


def test_a_phase_outside_0_to_1_is_refused_and_the_load_kept(emu: Emulator, stub: Any) -> None:
    before = emu.node("nvl-0").state.load
    bad = pb.NodeLoad(gpu_util=[0.5], gpu_phases=[_phases((1.0, 0.5, 1.5))])
    with pytest.raises(grpc.RpcError) as refused:
        stub.SetNodeLoad(pb.SetNodeLoadRequest(node="nvl-0", load=bad))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "phase" in (refused.value.details() or "")
    assert emu.node("nvl-0").state.load == before


def test_the_truth_carries_a_boards_clock_lock_and_none_when_unlocked(emu: Emulator, stub: Any) -> None:
    gpus = stub.GetNode(pb.GetNodeRequest(node="nvl-0")).gpus
    assert not any(g.HasField("lock_max_mhz") for g in gpus)
    assert emu.write("nvl-0", "state/nvml/gpu0/locked_clocks_mhz", b"345,1500\n").ok
    gpus = stub.GetNode(pb.GetNodeRequest(node="nvl-0")).gpus
    assert gpus[0].HasField("lock_max_mhz") and gpus[0].lock_max_mhz == 1500
    assert not gpus[1].HasField("lock_max_mhz")
